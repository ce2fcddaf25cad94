/* The function's files (its bundle): paths resolved inside the tree only, read-only descriptors
 * served from the packed tree in host memory, never from the host's file system. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <sys/epoll.h>

#include "fd/fd.h"
#include "fs/fs.h"
#include "fs/fs_tmp.h"

void sys_set_bundle(struct sys_state *st, const struct bnd *b)
{
	st->bundle = b;
	st->cwd = 0;
	memset(st->fs_win, 0, sizeof(st->fs_win));
}

void sys_set_exe(struct sys_state *st, const uint8_t *bytes, size_t len, const char *path)
{
	st->exe = bytes;
	st->exe_len = len;
	st->exe_path = path;
}

/* pages [first, first + n) of b's data all held by the page store */
static const uint64_t *all_shared(const struct bnd *b, uint64_t first, uint64_t n)
{
	const uint64_t *off = __atomic_load_n(&b->shared_off, __ATOMIC_ACQUIRE);
	if (!off || first > b->shared_pages || n > b->shared_pages - first)
		return NULL;
	for (uint64_t i = first; i < first + n; i++)
		if (off[i] == BND_NOT_SHARED)
			return NULL;
	return off + first;
}

int sys_fs_map_pages(struct vm *vm, const struct bnd *b, uint64_t addr, uint64_t len, uint64_t at)
{
	uint64_t first = at / EMBER_PAGE_SIZE, n = len / EMBER_PAGE_SIZE;
	const uint64_t *o = NULL;
	if (at % EMBER_PAGE_SIZE || len % EMBER_PAGE_SIZE || !(o = all_shared(b, first, n)))
		return vm_map_file(vm, addr, len, b->fd, b->fd_off + b->data_at + at);
	for (uint64_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && o[j] == o[i] + (j - i) * EMBER_PAGE_SIZE; j++)
			;
		int rc = vm_map_file(vm, addr + i * EMBER_PAGE_SIZE, (j - i) * EMBER_PAGE_SIZE,
				     b->shared_fd, o[i]);
		if (rc)
			return rc;
	}
	return 0;
}

struct sys_obj *sys_fs_file(struct sys_state *st, uint64_t fd)
{
	struct sys_obj *f = sys_fd_obj(st, fd);
	if (!f || f->kind != SYS_KIND_FILE)
		return NULL;
	sys_fs_rt_pull(st, fd, f); /* the in-guest runtime may have moved it */
	return f;
}

int sys_fs_is(const struct sys_state *st, uint64_t fd)
{
	return sys_fs_file((struct sys_state *)st, fd) != NULL;
}

int sys_fs_check(const struct sys_state *st)
{
	for (size_t i = 0; i < SYS_FDS; i++)
		if (st->obj[i].kind == SYS_KIND_FILE &&
		    (!st->bundle || st->obj[i].id >= st->bundle->nnodes))
			return -EINVAL;
	uint32_t tmp_cwd = st->cwd & ~SYS_CWD_TMP; /* /tmp itself is there without a tree */
	if (st->cwd & SYS_CWD_TMP)
		return tmp_cwd && (!st->tmp || tmp_cwd >= st->tmp->nn) ? -EINVAL : 0;
	return st->bundle && st->cwd >= st->bundle->nnodes ? -EINVAL : 0;
}

long sys_fs_get_path(struct sys_state *st, uint64_t addr, char *buf)
{
	for (size_t i = 0; i < BND_PATH_MAX; i++) {
		const char *c = sys_user(st, addr + i, 1, PROT_READ);
		if (!c)
			return -EFAULT;
		if (!(buf[i] = *c))
			return 0;
	}
	return -ENAMETOOLONG;
}

/* where a relative path starts: the cwd, or an open folder; 0, or 1 when that is a folder of
 * /tmp's (*dir its node), or -errno */
static long start_dir(struct sys_state *st, uint64_t dirfd, uint32_t *dir)
{
	if ((int)dirfd == AT_FDCWD) {
		*dir = st->cwd & ~SYS_CWD_TMP;
		return (st->cwd & SYS_CWD_TMP) != 0;
	}
	struct sys_obj *t = sys_tmp_file(st, dirfd);
	if (t && S_ISDIR(st->tmp->n[t->id].mode)) {
		*dir = t->id;
		return 1;
	}
	struct sys_obj *f = sys_fs_file(st, dirfd);
	if (!f)
		return sys_fd_obj(st, dirfd) ? -ENOTDIR : -EBADF;
	if (!bnd_is(st->bundle, f->id, S_IFDIR))
		return -ENOTDIR;
	*dir = f->id;
	return 0;
}

/* a path of a call: read, then looked up from dirfd */
long sys_fs_resolve(struct sys_state *st, uint64_t dirfd, uint64_t addr, int follow, int empty_ok,
		    uint32_t *node, int *parent_ok)
{
	char path[BND_PATH_MAX];
	long rc = sys_fs_get_path(st, addr, path);
	if (rc)
		return rc;
	/* AT_EMPTY_PATH: dirfd itself, a file too (glibc's fstat is fstatat(fd, "", ...)) */
	if (!path[0] && empty_ok) {
		if ((int)dirfd == AT_FDCWD) {
			*node = st->cwd;
			return st->cwd & SYS_CWD_TMP ? -ENOENT : 0; /* a /tmp cwd: stat_path's */
		}
		struct sys_obj *f = sys_fs_file(st, dirfd);
		if (!f)
			return -EBADF;
		*node = f->id;
		return 0;
	}
	if (!path[0])
		return -ENOENT; /* before dirfd is looked at, as Linux */
	/* through /tmp (its links, its ".."), out of it: the path it reached, from the root */
	struct sys_tmp_at tmp;
	if ((rc = sys_tmp_walk(st, dirfd, path, follow ? SYS_TMP_FOLLOW : SYS_TMP_NOFOLLOW, &tmp)))
		return rc;
	if (tmp.outside[0])
		return bnd_lookup(st->bundle, 0, tmp.outside, follow, node, parent_ok);
	uint32_t dir = 0;
	if (path[0] != '/' && (rc = start_dir(st, dirfd, &dir)) < 0)
		return rc;
	if (rc || tmp.in) /* in /tmp: its callers looked there first */
		return -ENOENT;
	return bnd_lookup(st->bundle, dir, path, follow, node, parent_ok);
}

long sys_fs_none(struct sys_state *st, uint64_t addr, int empty_ok)
{
	char path[BND_PATH_MAX];
	long rc = sys_fs_get_path(st, addr, path);
	if (rc)
		return rc;
	return path[0] || empty_ok ? -EACCES : -ENOENT;
}

/* Linux's order for a read-only file system: what is missing, what it is, then EROFS */
static long open_at(struct sys_state *st, uint64_t dirfd, uint64_t addr, int flags, uint64_t mode)
{
	/* an access mode of 3 (O_ACCMODE) is Linux's "neither": a descriptor for ioctls, which
	 * takes read and write permission; never reading or writing (sys_io.c) */
	int acc = flags & O_ACCMODE, creat = flags & O_CREAT,
	    tmpfile = (flags & __O_TMPFILE) == __O_TMPFILE;
	long again;
	if (sys_tmp_fifo_again(st, flags, &again))
		return again; /* an open of a named pipe that waited for its partner */
	int proc = sys_procfs_at(st, addr), dev = sys_dev_at(st, addr);
	if (proc >= 0)
		return sys_procfs_open(st, proc, flags);
	if (dev >= 0)
		return sys_dev_open(st, dev, flags);
	struct sys_tmp_at tmp;
	int follow = !(flags & O_NOFOLLOW) && !(creat && (flags & O_EXCL));
	long trc = sys_tmp_path(st, dirfd, addr, follow ? SYS_TMP_FOLLOW : SYS_TMP_NOFOLLOW, &tmp);
	if (trc || tmp.in)
		return trc ? trc : sys_tmp_open(st, &tmp, flags, (uint32_t)mode);
	if (tmp.outside[0] && (proc = sys_procfs_find(st, tmp.outside)) >= 0)
		return sys_procfs_open(st, proc, flags); /* a link of /tmp's to them */
	if (tmp.outside[0] && (dev = sys_dev_find(tmp.outside)) >= 0)
		return sys_dev_open(st, dev, flags);
	if (!st->bundle)
		return sys_fs_none(st, addr, 0);
	uint32_t node;
	int parent_ok = 0;
	long rc = sys_fs_resolve(st, dirfd, addr, follow, 0, &node, &parent_ok);
	if (rc == -ENOENT && creat && parent_ok)
		return -EROFS;
	if (rc)
		return rc;
	const struct bnd *b = st->bundle;
	if (creat && (flags & O_EXCL))
		return -EEXIST;
	if (bnd_is(b, node, S_IFLNK) && !(flags & O_PATH))
		return -ELOOP;
	int dir = bnd_is(b, node, S_IFDIR);
	if (tmpfile)
		return dir ? -EROFS : -ENOTDIR;
	if ((flags & O_DIRECTORY) && !dir)
		return -ENOTDIR;
	if (dir && (acc != O_RDONLY || creat || (flags & O_TRUNC)))
		return -EISDIR;
	if (acc != O_RDONLY || (flags & O_TRUNC))
		return -EROFS;
	if (dir && (flags & O_DIRECT))
		return -EINVAL; /* as Linux: a folder has no direct I/O */
	if (sys_fd_lowest(st, 0) < 0)
		return -EMFILE;
	struct sys_obj *f = sys_obj_new(st, SYS_KIND_FILE, O_RDONLY);
	f->id = node;
	long fd = sys_fd_open(st, f, (flags & O_CLOEXEC) != 0);
	/* the runtime reads, seeks and stats it itself from the start: CPython's import of a
	 * module is then its open and close alone on the host, not eight calls */
	if (fd >= 0 && !(flags & O_PATH))
		sys_fs_rt_opened(st, (uint64_t)fd, sys_fd_obj(st, (uint64_t)fd));
	return fd;
}

/* open_at, or with O_PATH a descriptor that only names its file: the flags but those three
 * ignored, as Linux's, the file not opened for reading (sys_opath.c) */
static long open_or_path(struct sys_state *st, uint64_t dirfd, uint64_t addr, int flags,
			 uint64_t mode)
{
	if (!(flags & O_PATH))
		return open_at(st, dirfd, addr, flags, mode);
	long fd =
	    open_at(st, dirfd, addr, flags & (O_PATH | O_CLOEXEC | O_DIRECTORY | O_NOFOLLOW), 0);
	if (fd >= 0)
		sys_fd_obj(st, (uint64_t)fd)->flags = O_PATH;
	return fd;
}

static long sys_open(struct sys_state *st, const uint64_t a[6])
{
	return open_or_path(st, (uint64_t)(int64_t)AT_FDCWD, a[0], (int)a[1], a[2]);
}

static long sys_openat(struct sys_state *st, const uint64_t a[6])
{
	return open_or_path(st, a[0], a[1], (int)a[2], a[3]);
}

static long sys_creat(struct sys_state *st, const uint64_t a[6])
{
	return open_at(st, (uint64_t)(int64_t)AT_FDCWD, a[0], O_CREAT | O_WRONLY | O_TRUNC, a[1]);
}

long sys_fs_read(struct sys_state *st, uint64_t fd, uint64_t addr, uint64_t len, int64_t offset)
{
	struct sys_obj *f = sys_fs_file(st, fd);
	if (!f)
		return -EBADF;
	const struct bnd_node *n = &st->bundle->nodes[f->id];
	if (bnd_is(st->bundle, f->id, S_IFDIR))
		return -EISDIR;
	uint64_t pos = offset < 0 ? f->pos : (uint64_t)offset;
	uint64_t left = pos < n->size ? n->size - pos : 0, k = len < left ? len : left;
	void *dst = sys_user(st, addr, k, PROT_WRITE);
	if (!dst)
		return -EFAULT;
	if (k) {
		bnd_want(st->bundle, n->data_off + pos, k);
		memcpy(dst, st->bundle->data + n->data_off + pos, k);
	}
	if (offset < 0)
		f->pos = pos + k;
	sys_fs_rt_window(st, fd, f); /* the runtime reads the next ones itself */
	sys_fs_rt_push(st, fd, f);
	return (long)k;
}

static long sys_pread64(struct sys_state *st, const uint64_t a[6])
{
	struct sys_obj *o = sys_fd_obj(st, a[0]);
	if (o && o->kind == SYS_KIND_PROC)
		return (int64_t)a[3] < 0 ? -EINVAL : sys_procfs_pread(st, o, a[1], a[2], a[3]);
	if (o && o->kind == SYS_KIND_TMP)
		return (int64_t)a[3] < 0 ? -EINVAL : sys_tmp_read_at(st, o, a[1], a[2], a[3]);
	if (o && o->kind == SYS_KIND_DEV)
		return sys_dev_pread(st, o, a[1], a[2], (int64_t)a[3]);
	if ((int64_t)a[3] < 0)
		return sys_fs_is(st, a[0]) ? -EINVAL : -EBADF;
	if (!sys_fs_is(st, a[0]))
		return sys_fd_obj(st, a[0]) ? -ESPIPE : -EBADF;
	return sys_fs_read(st, a[0], a[1], a[2], (int64_t)a[3]);
}

long sys_fs_lseek(struct sys_state *st, uint64_t fd, int64_t off, int whence)
{
	struct sys_obj *f = sys_fs_file(st, fd);
	if (!f)
		return -EBADF;
	int64_t base = 0;
	if (whence == SEEK_CUR)
		base = (int64_t)f->pos;
	else if (whence == SEEK_END)
		base = (int64_t)st->bundle->nodes[f->id].size;
	else if (whence != SEEK_SET)
		return -EINVAL;
	if (off > INT64_MAX - base || base + off < 0)
		return -EINVAL;
	f->pos = (uint64_t)(base + off);
	sys_fs_rt_push(st, fd, f);
	return (long)f->pos;
}

/* the kind's operations: a read-only file, read piece by piece as a file is (stopping at a
 * short or failed piece); polled always ready, as a regular file; not for epoll */
static long file_read(struct sys_state *st, uint64_t fd, struct sys_obj *f, const struct sys_iov *v,
		      int n)
{
	(void)f;
	long total = 0;
	for (int i = 0; i < n; i++) {
		long k = sys_fs_read(st, fd, v[i].base, v[i].len, -1);
		if (k < 0)
			return total ? total : k;
		total += k;
		if ((uint64_t)k < v[i].len)
			break;
	}
	return total;
}

static uint32_t file_poll(struct sys_state *st, struct sys_obj *f, uint64_t *next)
{
	(void)st, (void)f, (void)next;
	return EPOLLIN | EPOLLRDNORM | EPOLLOUT | EPOLLWRNORM;
}

static void file_stat(struct sys_state *st, struct sys_obj *f, struct stat *s)
{
	sys_fs_stat_of(st->bundle, f->id, s);
}

/* a second descriptor shares its position: the runtime's window (one descriptor's) goes */
static void file_share(struct sys_state *st, uint64_t fd, struct sys_obj *f)
{
	(void)f;
	sys_fs_rt_close(st, fd);
}

const struct sys_fd_ops sys_file_ops = {
    .read = file_read,
    .poll = file_poll,
    .stat = file_stat,
    .share = file_share,
};

int sys_fs_has(const struct sys_state *st)
{
	return st->bundle != NULL;
}

/* without files, refused as the host's own would be */
const struct sys_entry sys_fs_table[] = {
    /* the made /proc files are there without files too */
    {SYS_open, "open", sys_open, 0, NULL},
    {SYS_openat, "openat", sys_openat, 0, NULL},
    {SYS_creat, "creat", sys_creat, 0, NULL},
    {SYS_pread64, "pread64", sys_pread64, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};
