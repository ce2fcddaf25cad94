/* The few /proc and /sys files programs read at start, made from the virtine's own state at each
 * read: never the host's. */
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

#include "sys/sys_fd.h"
#include "sys/sys_fs.h"

#define GEN_MIN	 65536	/* bytes made for a file, and a maps line per mapping beyond */
#define PROC_DEV 0x0004 /* st_dev of the made files, not a bundle's */

/* appends a line to buf (k of cap bytes used) if all of it fits: a made file ends at a whole
 * line, never in the middle of one */
static size_t put_line(char *buf, size_t k, size_t cap, const char *line, size_t n)
{
	if (n >= cap - k)
		return k;
	memcpy(buf + k, line, n);
	return k + n;
}

/* the file's bytes: made into buf (at most cap), or, for the program itself, its own */
typedef const uint8_t *(*gen_fn)(struct sys_state *st, char *buf, size_t cap, size_t *len);

static const uint8_t *gen_online(struct sys_state *st, char *buf, size_t cap, size_t *len)
{
	int n = st->proc.cpus > 1 ? st->proc.cpus : 1;
	*len = (size_t)(n > 1 ? snprintf(buf, cap, "0-%d\n", n - 1) : snprintf(buf, cap, "0\n"));
	return (const uint8_t *)buf;
}

/* one processor entry per vCPU, with the fields programs parse: the vendor and model CPUID gives
 * (a vCPU is the host's CPU as KVM presents it), the counts, a few flags */
static const uint8_t *gen_cpuinfo(struct sys_state *st, char *buf, size_t cap, size_t *len)
{
	int n = st->proc.cpus > 1 ? st->proc.cpus : 1;
	unsigned r[12] = {0};
	char vendor[13] = "", model[49] = "";
	__cpuid(0, r[0], r[1], r[2], r[3]);
	memcpy(vendor, &r[1], 4), memcpy(vendor + 4, &r[3], 4), memcpy(vendor + 8, &r[2], 4);
	for (unsigned i = 0; i < 3; i++)
		__cpuid(0x80000002 + i, r[4 * i], r[4 * i + 1], r[4 * i + 2], r[4 * i + 3]);
	memcpy(model, r, 48);
	size_t k = 0;
	char line[512];
	for (int i = 0; i < n; i++) {
		int m = snprintf(line, sizeof(line),
				 "processor\t: %d\nvendor_id\t: %s\nmodel name\t: %s\n"
				 "physical id\t: 0\nsiblings\t: %d\ncore id\t\t: %d\n"
				 "cpu cores\t: %d\nflags\t\t: fpu sse sse2 ssse3 sse4_1 sse4_2\n\n",
				 i, vendor, model, n, i, n);
		k = put_line(buf, k, cap, line, m < (int)sizeof(line) ? (size_t)m : 0);
	}
	*len = k;
	return (const uint8_t *)buf;
}

/* the program's mappings as the virtine holds them: its stack and heap named */
static const uint8_t *gen_maps(struct sys_state *st, char *buf, size_t cap, size_t *len)
{
	size_t k = 0;
	char line[128];
	for (size_t i = 0; i < st->nvma; i++) {
		const struct sys_vma *v = &st->vmas[i];
		if (v->start < EMBER_SYS_END)
			continue; /* the runtime's, not the program's */
		const char *name =
		    v->start >= st->proc.stack_lo && v->end <= st->proc.stack_hi     ? "[stack]"
		    : v->start >= st->proc.brk_start && v->end <= st->brk_cur + 4096 ? "[heap]"
										     : "";
		int m = snprintf(line, sizeof(line),
				 "%08" PRIx64 "-%08" PRIx64 " %c%c%cp 00000000 00:00 0%s%s\n",
				 v->start, v->end, v->prot & PROT_READ ? 'r' : '-',
				 v->prot & PROT_WRITE ? 'w' : '-', v->prot & PROT_EXEC ? 'x' : '-',
				 name[0] ? "\t\t\t" : "", name);
		k = put_line(buf, k, cap, line, m < (int)sizeof(line) ? (size_t)m : 0);
	}
	*len = k;
	return (const uint8_t *)buf;
}

/* statm, in pages: the program's mappings (resident and data counted as mapped, shared and
 * text as none: a virtine does not tell them apart here) */
static const uint8_t *gen_statm(struct sys_state *st, char *buf, size_t cap, size_t *len)
{
	uint64_t pages = sys_rlim_mapped(st) / EMBER_PAGE_SIZE;
	int m = snprintf(buf, cap, "%" PRIu64 " %" PRIu64 " 0 0 0 %" PRIu64 " 0\n", pages, pages,
			 pages);
	*len = m > 0 && (size_t)m < cap ? (size_t)m : 0;
	return (const uint8_t *)buf;
}

static const uint8_t *gen_exe(struct sys_state *st, char *buf, size_t cap, size_t *len)
{
	(void)buf, (void)cap;
	*len = st->exe_len;
	return st->exe;
}

static const struct {
	const char *path;
	gen_fn gen;
	int link;  /* /proc/self/exe: a link to the program, opened as the program */
	int sysfs; /* a /sys file: SEEK_END is from 4096, its size as sysfs says it */
} files[] = {
    {"/proc/self/maps", gen_maps, 0, 0},
    {"/proc/self/statm", gen_statm, 0, 0},
    {"/proc/cpuinfo", gen_cpuinfo, 0, 0},
    {"/sys/devices/system/cpu/online", gen_online, 0, 1},
    {"/sys/devices/system/cpu/possible", gen_online, 0, 1},
    {"/proc/self/exe", gen_exe, 1, 0},
};
#define NFILES (sizeof(files) / sizeof(files[0]))

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
	for (size_t i = 0; i < NFILES; i++)
		if (!strcmp(path, files[i].path) && (!files[i].link || st->exe))
			return (int)i;
	return -1;
}

static void stat_of(struct sys_state *st, int i, int follow, struct stat *s)
{
	memset(s, 0, sizeof(*s));
	s->st_dev = PROC_DEV;
	s->st_ino = (ino_t)i + 1;
	s->st_nlink = 1;
	s->st_blksize = 4096;
	s->st_mode = S_IFREG | 0444; /* a size of 0, as Linux says of its /proc files */
	if (files[i].link && follow) {
		s->st_mode = S_IFREG | 0555;
		s->st_size = (off_t)st->exe_len;
	} else if (files[i].link) {
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
	if (acc == O_ACCMODE)
		return -EINVAL;
	if (files[i].link && (flags & O_NOFOLLOW) && !(flags & O_PATH))
		return -ELOOP;
	if ((flags & O_CREAT) && (flags & O_EXCL))
		return -EEXIST;
	if (flags & O_DIRECTORY)
		return -ENOTDIR;
	if ((acc != O_RDONLY || (flags & O_TRUNC)) && files[i].link)
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
	if (!files[i].link)
		return -EINVAL;
	size_t n = strlen(st->exe_path), k = n < len ? n : (size_t)len;
	return sys_put(st, buf, st->exe_path, k) ? -EFAULT : (long)k;
}

long sys_procfs_access(struct sys_state *st, int i, int mode)
{
	(void)st;
	if ((mode & W_OK) || ((mode & X_OK) && !files[i].link))
		return -EACCES;
	return 0;
}

/* len bytes of the file from pos (made afresh: a second read sees the state of then) */
static long read_at(struct sys_state *st, struct sys_obj *o, uint64_t addr, uint64_t len,
		    uint64_t pos)
{
	size_t cap = GEN_MIN + st->nvma * 128, total = 0; /* a maps line is under 128 bytes */
	char *buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	const uint8_t *b = files[o->id].gen(st, buf, cap, &total);
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
	if (whence == SEEK_END && (files[o->id].link || files[o->id].sysfs))
		base = files[o->id].link ? (int64_t)st->exe_len : 4096; /* these have an end */
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
	if (!o || o->kind != SYS_KIND_PROC || !files[o->id].link)
		return NULL;
	*len = st->exe_len;
	return st->exe;
}

int sys_procfs_valid(const struct sys_obj *o)
{
	return o->id < NFILES;
}

const struct sys_fd_ops sys_procfs_ops = {
    .read = proc_read,
    .poll = proc_poll,
    .stat = proc_stat,
};
