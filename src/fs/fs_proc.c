/* The few /proc and /sys files programs read at start, made from the virtine's own state at each
 * read: never the host's; the folders that hold them, and /proc/self/fd's links
 * (fs_proc_fd.c). */
#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd/fd.h"
#include "fs/fs.h"
#include "fs/fs_proc.h"

#define PROC_DEV 0x0004 /* st_dev of the made files, not a bundle's */

/* what an entry is: a made file, a folder, /proc/self (a link to the process's folder), per
 * descriptor N (the path ends in '/', N follows it) its link or its fdinfo; a folder that is
 * there without files only (the root and /dev: else the function's own); one that is only
 * listed (/tmp, which fs_tmp.c serves) */
enum pf_type { PF_FILE, PF_DIR, PF_SELF, PF_FD, PF_FDINFO, PF_NOFILES, PF_LISTED };

static const struct {
	const char *path;
	sys_procfs_gen gen;
	int link;  /* /proc/self/exe: a link to the program, opened as the program */
	int sysfs; /* a /sys file: SEEK_END is from 4096, its size as sysfs says it */
	enum pf_type type;
} files[] = {
    {"/proc/self/maps", sys_procfs_gen_maps, 0, 0, PF_FILE},
    {"/proc/self/statm", sys_procfs_gen_statm, 0, 0, PF_FILE},
    {"/proc/cpuinfo", sys_procfs_gen_cpuinfo, 0, 0, PF_FILE},
    {"/sys/devices/system/cpu/online", sys_procfs_gen_online, 0, 1, PF_FILE},
    {"/sys/devices/system/cpu/possible", sys_procfs_gen_online, 0, 1, PF_FILE},
    {"/proc/self/exe", sys_procfs_gen_exe, 1, 0, PF_FILE},
    {"/proc/self/cmdline", sys_procfs_gen_cmdline, 0, 0, PF_FILE},
    {"/proc/sys/fs/pipe-max-size", sys_procfs_gen_pipe_max, 0, 0, PF_FILE},
    {"/proc", NULL, 0, 0, PF_DIR},
    {"/proc/self", NULL, 0, 0, PF_SELF},
    {"/proc/self/fd", NULL, 0, 0, PF_DIR},
    {"/proc/self/fdinfo", NULL, 0, 0, PF_DIR},
    {"/proc/sys", NULL, 0, 0, PF_DIR},
    {"/proc/sys/fs", NULL, 0, 0, PF_DIR},
    {"/", NULL, 0, 0, PF_NOFILES},
    {"/dev", NULL, 0, 0, PF_NOFILES},
    {"/tmp", NULL, 0, 0, PF_LISTED},
    {"/proc/self/fd/", NULL, 0, 0, PF_FD},
    {"/proc/self/fdinfo/", NULL, 0, 0, PF_FDINFO},
};
#define NFILES (sizeof(files) / sizeof(files[0]))
/* an entry's index: the table's row, and for the per-descriptor ones the descriptor above it */
#define ROW(i) ((uint32_t)(i)&0xff)
#define ARG(i) ((uint32_t)(i) >> 8)

/* "/" and "/dev" are the function's files' when it has them; /dev is ours when they have none */
static int theirs(const struct sys_state *st, size_t i)
{
	uint32_t node;
	return files[i].type == PF_NOFILES && st->bundle &&
	       (strcmp(files[i].path, "/dev") ||
		!bnd_lookup(st->bundle, 0, "/dev", 1, &node, NULL));
}

static enum pf_type type_of(uint32_t i)
{
	return files[ROW(i)].type;
}

static int is_dir(uint32_t i)
{
	return type_of(i) == PF_DIR || type_of(i) == PF_SELF || type_of(i) == PF_NOFILES;
}

/* path names row i (exactly, a folder with a '/' after it too), or, a per-descriptor one, an
 * open descriptor after its '/': the entry's index, or -1 */
static int match(struct sys_state *st, size_t i, const char *path)
{
	size_t n = strlen(files[i].path), k = strlen(path);
	if (files[i].type == PF_FD || files[i].type == PF_FDINFO) {
		if (k <= n || k > n + 3 || strncmp(path, files[i].path, n) ||
		    (path[n] == '0' && k > n + 1))
			return -1;
		uint32_t fd = 0;
		for (size_t j = n; j < k; j++) {
			if (path[j] < '0' || path[j] > '9')
				return -1;
			fd = fd * 10 + (uint32_t)(path[j] - '0');
		}
		return sys_fd_obj(st, fd) ? (int)(i | fd << 8) : -1;
	}
	if (theirs(st, i) || files[i].type == PF_LISTED)
		return -1;
	if (k == n + 1 && path[n] == '/' && files[i].type != PF_FILE)
		k = n;
	return k == n && !strncmp(path, files[i].path, n) && (!files[i].link || st->exe) ? (int)i
											 : -1;
}

/* /proc/PID, PID the process's own, is /proc/self: path rewritten so */
static void self_alias(const struct sys_state *st, char *path, size_t cap)
{
	if (strncmp(path, "/proc/", 6) || path[6] < '1' || path[6] > '9')
		return;
	char *end;
	long pid = strtol(path + 6, &end, 10);
	size_t rest = strlen(end);
	if (pid != st->pid || (*end && *end != '/') || 10 + rest >= cap)
		return;
	memmove(path + 10, end, rest + 1); /* after "/proc/self" */
	memcpy(path + 6, "self", 4);
}

int sys_procfs_at(struct sys_state *st, uint64_t addr)
{
	char path[64];
	for (size_t i = 0; i < sizeof(path); i++) {
		const char *c = sys_user(st, addr + i, 1, PROT_READ);
		if (!c)
			return -1; /* the caller's own look at the path says EFAULT */
		if (!(path[i] = *c))
			break;
		if (i == sizeof(path) - 1)
			return -1;
	}
	return sys_procfs_find(st, path);
}

int sys_procfs_find(struct sys_state *st, const char *abs)
{
	char path[64];
	if (strlen(abs) >= sizeof(path))
		return -1;
	strcpy(path, abs);
	self_alias(st, path, sizeof(path));
	for (size_t i = 0; i < NFILES; i++) {
		int m = match(st, i, path);
		if (m >= 0)
			return m;
	}
	return -1;
}

void sys_procfs_path(const struct sys_obj *o, char *buf, size_t cap)
{
	enum pf_type t = type_of(o->id);
	if (t == PF_FD || t == PF_FDINFO)
		snprintf(buf, cap, "%s%u", files[ROW(o->id)].path, ARG(o->id));
	else
		snprintf(buf, cap, "%s", files[ROW(o->id)].path);
}

static void stat_of(struct sys_state *st, int i, int follow, struct stat *s)
{
	enum pf_type t = type_of((uint32_t)i);
	if (t == PF_FD && follow && sys_fd_stat(st, ARG(i), s) == 0)
		return; /* the descriptor's file */
	memset(s, 0, sizeof(*s));
	s->st_dev = PROC_DEV;
	s->st_ino = (ino_t)i + 1;
	s->st_nlink = 1;
	s->st_blksize = 4096;
	s->st_mode = S_IFREG | 0444; /* a size of 0, as Linux says of its /proc files */
	s->st_uid = s->st_gid = SYS_GUEST_UID;
	if (t == PF_DIR || t == PF_NOFILES || (t == PF_SELF && follow)) {
		s->st_mode = S_IFDIR | 0555;
		s->st_nlink = 2;
	} else if (t == PF_SELF) {
		s->st_mode = S_IFLNK | 0777;
		s->st_size = snprintf(NULL, 0, "%d", st->pid);
	} else if (t == PF_FD) { /* the link: rwx for the owner as the descriptor is open */
		const struct sys_obj *o = sys_fd_obj(st, ARG(i));
		uint32_t acc = o ? o->flags & O_ACCMODE : O_RDONLY;
		s->st_mode = S_IFLNK | (acc != O_WRONLY ? 0500 : 0) | (acc != O_RDONLY ? 0300 : 0);
		s->st_size = 64;
	} else if (files[ROW(i)].link && follow) {
		s->st_mode = S_IFREG | 0555;
		s->st_size = (off_t)st->exe_len;
	} else if (files[ROW(i)].link) {
		s->st_mode = S_IFLNK | 0777;
		s->st_size = (off_t)strlen(st->exe_path);
	}
}

long sys_procfs_stat(struct sys_state *st, int i, int follow, struct stat *s)
{
	stat_of(st, i, follow, s);
	return 0;
}

long sys_procfs_open(struct sys_state *st, int i, int flags)
{
	int acc = flags & O_ACCMODE;
	enum pf_type t = type_of((uint32_t)i);
	if (acc == O_ACCMODE)
		return -EINVAL;
	if ((t == PF_FD || t == PF_SELF) && (flags & O_NOFOLLOW) && !(flags & O_PATH))
		return -ELOOP;
	if (t == PF_FD && !(flags & O_PATH)) /* the descriptor's file, opened again */
		return sys_procfs_fd_reopen(st, ARG(i), flags);
	if (is_dir((uint32_t)i) && (acc != O_RDONLY || (flags & (O_CREAT | O_TRUNC))))
		return -EISDIR;
	if (is_dir((uint32_t)i) || t == PF_FD) {
		if (sys_fd_lowest(st, 0) < 0)
			return -EMFILE;
		struct sys_obj *o = sys_obj_new(st, SYS_KIND_PROC, O_RDONLY);
		o->id = (uint32_t)i;
		return sys_fd_open(st, o, (flags & O_CLOEXEC) != 0);
	}
	if (files[ROW(i)].link && (flags & O_NOFOLLOW) && !(flags & O_PATH))
		return -ELOOP;
	if ((flags & O_CREAT) && (flags & O_EXCL))
		return -EEXIST;
	if (flags & O_DIRECTORY)
		return -ENOTDIR;
	if ((acc != O_RDONLY || (flags & O_TRUNC)) && files[ROW(i)].link)
		return -ETXTBSY; /* the program, running */
	if (acc != O_RDONLY || (flags & O_TRUNC))
		return -EACCES; /* as to a process that does not own them */
	if (sys_fd_lowest(st, 0) < 0)
		return -EMFILE;
	struct sys_obj *o = sys_obj_new(st, SYS_KIND_PROC, O_RDONLY);
	o->id = (uint32_t)i;
	return sys_fd_open(st, o, (flags & O_CLOEXEC) != 0);
}

long sys_procfs_readlink(struct sys_state *st, int i, uint64_t buf, uint64_t len)
{
	char text[BND_PATH_MAX + 32];
	long n;
	if (type_of((uint32_t)i) == PF_SELF)
		n = snprintf(text, sizeof(text), "%d", st->pid);
	else if (type_of((uint32_t)i) == PF_FD)
		n = sys_procfs_fd_link(st, ARG(i), text, sizeof(text));
	else if (files[ROW(i)].link)
		n = snprintf(text, sizeof(text), "%s", st->exe_path);
	else
		return -EINVAL;
	if (n < 0)
		return n;
	size_t k = (size_t)n < len ? (size_t)n : (size_t)len;
	k = k < sizeof(text) ? k : sizeof(text) - 1;
	return sys_put(st, buf, text, k) ? -EFAULT : (long)k;
}

long sys_procfs_access(struct sys_state *st, int i, int mode)
{
	(void)st;
	if ((mode & W_OK) || ((mode & X_OK) && !files[ROW(i)].link && !is_dir((uint32_t)i)))
		return -EACCES;
	return 0;
}

/* len bytes of the file from pos (made afresh: a second read sees the state of then) */
static long read_at(struct sys_state *st, struct sys_obj *o, uint64_t addr, uint64_t len,
		    uint64_t pos)
{
	size_t cap = SYS_PROCFS_GEN_MIN + st->nvma * 128,
	       total = 0; /* a maps line is under 128 bytes */
	char *buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	const uint8_t *b = (const uint8_t *)buf;
	if (is_dir(o->id))
		total = 0;
	else if (type_of(o->id) == PF_FDINFO)
		total = sys_procfs_fd_info(st, ARG(o->id), buf, cap);
	else if (files[ROW(o->id)].gen)
		b = files[ROW(o->id)].gen(st, buf, cap, &total);
	uint64_t left = pos < total ? total - pos : 0, k = len < left ? len : left;
	long rc = k && sys_put(st, addr, b + pos, k) ? -EFAULT : (long)k;
	free(buf);
	return rc;
}

long sys_procfs_pread(struct sys_state *st, struct sys_obj *o, uint64_t addr, uint64_t len,
		      uint64_t pos)
{
	return read_at(st, o, addr, len, pos);
}

long sys_procfs_lseek(struct sys_state *st, struct sys_obj *o, int64_t off, int whence)
{
	int64_t base = whence == SEEK_CUR ? (int64_t)o->pos : 0;
	if (whence == SEEK_END && is_dir(o->id))
		base = 0; /* a folder's end is its start, as Linux's proc folders say */
	else if (whence == SEEK_END && (files[ROW(o->id)].link || files[ROW(o->id)].sysfs))
		base = files[ROW(o->id)].link ? (int64_t)st->exe_len : 4096; /* these have an end */
	else if (whence != SEEK_SET && whence != SEEK_CUR)
		return -EINVAL; /* a made file has no end to start from, as Linux's /proc ones */
	if (off > INT64_MAX - base || base + off < 0)
		return -EINVAL;
	o->pos = (uint64_t)(base + off);
	return (long)o->pos;
}

static long proc_read(struct sys_state *st, uint64_t fd, struct sys_obj *o, const struct sys_iov *v,
		      int n)
{
	(void)fd;
	if (is_dir(o->id))
		return -EISDIR;
	return sys_iov_at(st, o, v, n, read_at, NULL);
}

static uint32_t proc_poll(struct sys_state *st, struct sys_obj *o, uint64_t *next)
{
	(void)st, (void)o, (void)next;
	return EPOLLIN | EPOLLRDNORM;
}

static void proc_stat(struct sys_state *st, struct sys_obj *o, struct stat *s)
{
	stat_of(st, (int)o->id, 1, s);
}

const uint8_t *sys_procfs_exe(struct sys_state *st, uint64_t fd, size_t *len)
{
	struct sys_obj *o = sys_fd_obj(st, fd);
	if (!o || o->kind != SYS_KIND_PROC || !files[ROW(o->id)].link)
		return NULL;
	*len = st->exe_len;
	return st->exe;
}

int sys_procfs_valid(const struct sys_obj *o)
{
	return ROW(o->id) < NFILES && ARG(o->id) < SYS_FDS &&
	       (!ARG(o->id) || type_of(o->id) == PF_FD || type_of(o->id) == PF_FDINFO);
}

int sys_procfs_is_dir(const struct sys_obj *o)
{
	return is_dir(o->id);
}

/* DT_* of row j */
static uint8_t dtype_of(size_t j)
{
	enum pf_type t = files[j].type;
	return t == PF_DIR || t == PF_NOFILES || t == PF_LISTED ? 4
	       : t == PF_SELF || files[j].link			? 10
								: 8;
}

int sys_procfs_entry(struct sys_state *st, struct sys_obj *o, uint64_t pos, uint64_t *ino,
		     uint8_t *type, char *name, size_t cap, uint64_t *next)
{
	const char *dir = files[ROW(o->id)].path;
	size_t n = strlen(dir);
	*next = pos + 1;
	if (pos < 2) {
		*ino = pos ? 1 : o->id + 1;
		*type = 4; /* DT_DIR */
		snprintf(name, cap, "%s", pos ? ".." : ".");
		return 1;
	}
	if (!strcmp(dir, "/dev")) { /* the devices */
		for (int i = (int)pos - 2; i < sys_dev_count(); i++) {
			*ino = 0x20000 + (uint64_t)i;
			*type = 2; /* DT_CHR */
			snprintf(name, cap, "%s", sys_dev_path(i) + 5);
			*next = (uint64_t)i + 3;
			return 1;
		}
		return 0;
	}
	if (!strcmp(dir, "/"))
		n = 0; /* its children's paths have their last '/' first */
	int fds = !strcmp(dir, "/proc/self/fd"), infos = !strcmp(dir, "/proc/self/fdinfo");
	if (fds || infos) { /* the open descriptors, from pos - 2 on */
		for (uint64_t fd = pos - 2; fd < SYS_FDS; fd++) {
			if (!sys_fd_obj(st, fd))
				continue;
			*ino = (fd << 8 | (infos ? 1 : 0)) + 0x10000;
			*type = fds ? 10 : 8;
			snprintf(name, cap, "%u", (unsigned)fd);
			*next = fd + 3;
			return 1;
		}
		return 0;
	}
	for (size_t j = pos - 2; j < NFILES; j++) { /* the rows whose folder it is */
		const char *p = files[j].path, *last = strrchr(p, '/');
		if ((size_t)(last - p) != n || strncmp(p, dir, n) || !last[1] ||
		    (files[j].link && !st->exe) || theirs(st, j))
			continue;
		*ino = j + 1;
		*type = dtype_of(j);
		snprintf(name, cap, "%s", last + 1);
		*next = j + 3;
		return 1;
	}
	return 0;
}

const struct sys_fd_ops sys_procfs_ops = {
    .read = proc_read,
    .poll = proc_poll,
    .stat = proc_stat,
};
