/* The calls on the scratch /tmp: open and create, read and write at offsets, size, make and
 * remove folders, rename, unlink (modes and times: sys_fs_attr.c); the bundle keeps its
 * read-only answers. */
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fd/fd.h"
#include "fs/fs.h"
#include "fs/fs_tmp.h"
#include "sys/sys_task.h"

static struct sys_tmp_node *node_of(struct sys_state *st, uint32_t i)
{
	return &st->tmp->n[i];
}

/* by the owner's bits: the guest owns every node but /tmp itself, 01777, which it reaches as
 * "other" */
long sys_tmp_may(struct sys_state *st, uint32_t node, unsigned want)
{
	unsigned perm = node ? (node_of(st, node)->mode >> 6) & 7 : 7;
	return (perm & want) == want ? 0 : -EACCES;
}

/* a folder's entries change: written and searched */
#define CHANGE 3

long sys_tmp_open(struct sys_state *st, const struct sys_tmp_at *at, int flags, uint32_t mode)
{
	int acc = flags & O_ACCMODE, creat = flags & O_CREAT,
	    tmpfile = (flags & __O_TMPFILE) == __O_TMPFILE;
	uint32_t node = at->node;
	if (!at->found && (!creat || tmpfile))
		return -ENOENT;
	if (tmpfile) { /* an unnamed file in the folder the path names */
		if (!S_ISDIR(node_of(st, node)->mode))
			return -ENOTDIR;
		if (acc == O_RDONLY)
			return -EINVAL;
	} else if (at->found && creat && (flags & O_EXCL)) {
		return -EEXIST;
	} else if (at->found) {
		int dir = S_ISDIR(node_of(st, node)->mode);
		if ((flags & O_DIRECTORY) && !dir)
			return -ENOTDIR;
		if (dir && (acc != O_RDONLY || creat || (flags & O_TRUNC)))
			return -EISDIR; /* as Linux: O_TRUNC asks to write */
		if (S_ISLNK(node_of(st, node)->mode) && !(flags & O_PATH))
			return -ELOOP; /* not followed (O_NOFOLLOW): only O_PATH names a link */
	} else if (at->trailing || (flags & O_DIRECTORY)) {
		return -EISDIR; /* a folder cannot be made by open */
	}
	unsigned want = (acc != O_WRONLY ? 4 : 0) | (acc != O_RDONLY || flags & O_TRUNC ? 2 : 0);
	long rc = tmpfile || !at->found ? sys_tmp_may(st, tmpfile ? node : at->parent, CHANGE)
		  : flags & O_PATH	? 0
					: sys_tmp_may(st, node, want);
	if (rc)
		return rc;
	if (at->found && (flags & O_DIRECT) && S_ISDIR(node_of(st, node)->mode))
		return -EINVAL; /* as Linux: a folder has no direct I/O */
	if (sys_fd_lowest(st, 0) < 0)
		return -EMFILE;
	if (tmpfile || !at->found) {
		long n = sys_tmp_new(st, tmpfile ? node : at->parent, tmpfile ? "" : at->name,
				     S_IFREG | (mode & 07777 & ~st->umask));
		if (n < 0)
			return n;
		node = (uint32_t)n;
		if (tmpfile)
			node_of(st, node)->parent = SYS_TMP_GONE;
	} else if ((flags & O_TRUNC) && S_ISREG(node_of(st, node)->mode)) { /* O_RDONLY too */
		sys_tmp_resize(st, node, 0);
	}
	if (S_ISFIFO(node_of(st, node)->mode) && !(flags & O_PATH))
		return sys_tmp_fifo_open(st, node, flags);
	struct sys_obj *o = sys_obj_new(st, SYS_KIND_TMP, (uint32_t)flags & (O_ACCMODE | O_APPEND));
	o->id = node;
	return sys_fd_open(st, o, (flags & O_CLOEXEC) != 0);
}

long sys_tmp_read_at(struct sys_state *st, struct sys_obj *o, uint64_t addr, uint64_t len,
		     uint64_t pos)
{
	const struct sys_tmp_node *n = node_of(st, o->id);
	if (S_ISDIR(n->mode))
		return -EISDIR;
	if ((o->flags & O_ACCMODE) == O_WRONLY || !S_ISREG(n->mode)) /* a pipe's ring is no file */
		return -EBADF;
	sys_shm_flush(st, o->id); /* what a shared mapping wrote is the file's */
	uint64_t left = pos < n->size ? n->size - pos : 0, k = len < left ? len : left;
	if (k && sys_put(st, addr, n->data + pos, k))
		return -EFAULT;
	return (long)k;
}

long sys_tmp_write_at(struct sys_state *st, struct sys_obj *o, uint64_t addr, uint64_t len,
		      uint64_t pos)
{
	if ((o->flags & O_ACCMODE) == O_RDONLY || !S_ISREG(node_of(st, o->id)->mode))
		return -EBADF;
	if (!len)
		return 0;
	if (pos > INT64_MAX - len)
		return -EFBIG;
	uint64_t fsize = sys_rlimit_cur(st, RLIMIT_FSIZE); /* as Linux: up to it, then SIGXFSZ */
	if (pos >= fsize) {
		sys_send(st, NULL, SIGXFSZ, 0 /* SI_USER */);
		return -EFBIG;
	}
	len = len < fsize - pos ? len : fsize - pos;
	const void *src = sys_user(st, addr, len, PROT_READ);
	if (!src) { /* as Linux: the pages readable before the first that faults are written */
		uint64_t ok = 0, step = 4096 - (addr & 4095);
		while (ok < len &&
		       sys_user(st, addr + ok, step < len - ok ? step : len - ok, PROT_READ))
			ok += step < len - ok ? step : len - ok, step = 4096;
		if (!ok || !(src = sys_user(st, addr, ok, PROT_READ)))
			return -EFAULT;
		len = ok;
	}
	/* what fits of it: the file may hold what the others leave of the bound (ENOSPC when
	 * nothing of it fits) */
	const struct sys_tmp_node *f = node_of(st, o->id);
	uint64_t size = f->size, most = sys_tmp_limit(st) - (st->tmp->bytes - f->cap);
	uint64_t end = pos + len < most ? pos + len : most;
	if (end <= pos)
		return -ENOSPC;
	sys_shm_flush(st, o->id); /* a shared mapping's writes first, then this one over them */
	long rc = end > size ? sys_tmp_resize(st, o->id, end) : 0;
	if (rc)
		return rc;
	struct sys_tmp_node *n = node_of(st, o->id);
	memcpy(n->data + pos, src, end - pos);
	sys_shm_refresh(st, o->id);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	n->mtime_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	return (long)(end - pos);
}

/* a path's call: in /tmp, fn's answer; in the bundle, the read-only one (EROFS; without files
 * EACCES); an empty path names nothing (ENOENT, as Linux's without AT_EMPTY_PATH) */
static long outside(struct sys_state *st, uint64_t path)
{
	const char *c = sys_user(st, path, 1, PROT_READ);
	if (c && !*c)
		return -ENOENT;
	return st->bundle ? -EROFS : -EACCES;
}

static long make_dir(struct sys_state *st, uint64_t dirfd, uint64_t path, uint64_t mode)
{
	struct sys_tmp_at at;
	long rc = sys_tmp_path(st, dirfd, path, SYS_TMP_ENTRY, &at);
	if (rc || !at.in)
		return rc ? rc : outside(st, path);
	if (at.found)
		return -EEXIST;
	if ((rc = sys_tmp_may(st, at.parent, CHANGE)))
		return rc;
	rc = sys_tmp_new(st, at.parent, at.name, S_IFDIR | ((uint32_t)mode & 07777 & ~st->umask));
	return rc < 0 ? rc : 0;
}

/* mknod: a regular file or a named pipe; a socket node is not made here, a device not by this
 * user (EPERM both) */
static long make_node(struct sys_state *st, uint64_t dirfd, uint64_t path, uint64_t mode)
{
	struct sys_tmp_at at;
	uint32_t type = (uint32_t)mode & S_IFMT;
	long rc = sys_tmp_path(st, dirfd, path, SYS_TMP_ENTRY, &at);
	if (rc || !at.in)
		return rc ? rc : outside(st, path);
	if (at.found)
		return -EEXIST;
	if (type && type != S_IFREG && type != S_IFIFO)
		return type == S_IFSOCK || type == S_IFCHR || type == S_IFBLK ? -EPERM : -EINVAL;
	if ((rc = sys_tmp_may(st, at.parent, CHANGE)))
		return rc;
	rc = sys_tmp_new(st, at.parent, at.name,
			 (type ? type : S_IFREG) | ((uint32_t)mode & 07777 & ~st->umask));
	return rc < 0 ? rc : 0;
}

static long sys_mknod(struct sys_state *st, const uint64_t a[6])
{
	return make_node(st, (uint64_t)(int64_t)AT_FDCWD, a[0], a[1]);
}

static long sys_mknodat(struct sys_state *st, const uint64_t a[6])
{
	return make_node(st, a[0], a[1], a[2]);
}

static int empty_dir(const struct sys_tmp *t, uint32_t d)
{
	for (uint32_t i = 1; i < t->nn; i++)
		if (t->n[i].mode != SYS_TMP_FREE && t->n[i].parent == d)
			return 0;
	return 1;
}

/* unlink (dir 0) or rmdir (dir 1) */
static long remove_at(struct sys_state *st, uint64_t dirfd, uint64_t path, int dir)
{
	struct sys_tmp_at at;
	long rc = sys_tmp_path(st, dirfd, path, SYS_TMP_ENTRY, &at);
	if (rc || !at.in)
		return rc ? rc : outside(st, path);
	if (at.dots) /* Linux's: "." EINVAL, ".." ENOTEMPTY to rmdir; EISDIR to unlink */
		return !dir ? -EISDIR : at.dots == 1 ? -EINVAL : -ENOTEMPTY;
	if (!at.found)
		return -ENOENT;
	if (!at.node)
		return dir ? -EBUSY : -EISDIR; /* /tmp itself */
	int is_dir = S_ISDIR(node_of(st, at.node)->mode);
	if (dir && !is_dir)
		return -ENOTDIR;
	if (!dir && is_dir)
		return -EISDIR;
	if ((rc = sys_tmp_may(st, node_of(st, at.entry)->parent, CHANGE)))
		return rc;
	if (is_dir && !empty_dir(st->tmp, at.node))
		return -ENOTEMPTY;
	if (is_dir && sys_tmp_open_node(st, at.node))
		return -EBUSY;
	sys_tmp_unlink(st, at.entry);
	return 0;
}

static long rename_at(struct sys_state *st, uint64_t olddir, uint64_t oldp, uint64_t newdir,
		      uint64_t newp, unsigned flags)
{
	struct sys_tmp_at a, b;
	long rc = sys_tmp_path(st, olddir, oldp, SYS_TMP_ENTRY, &a);
	if (!rc)
		rc = sys_tmp_path(st, newdir, newp, SYS_TMP_ENTRY, &b);
	if (rc)
		return rc;
	if (!a.in && !b.in)
		return outside(st, oldp);
	if (a.in != b.in)
		return -EXDEV;
	if (flags & ~1u /* RENAME_NOREPLACE */)
		return -EINVAL;
	if (a.dots || b.dots)
		return -EBUSY; /* "." or "..": no entry of its own */
	if (!a.found)
		return -ENOENT;
	if (!a.node || (b.found && !b.node))
		return -EBUSY;
	uint32_t to_dir = b.found ? node_of(st, b.entry)->parent : b.parent;
	for (uint32_t d = to_dir; d; d = node_of(st, d)->parent)
		if (d == a.node)
			return -EINVAL; /* a folder into itself */
	if ((rc = sys_tmp_may(st, node_of(st, a.entry)->parent, CHANGE)) ||
	    (rc = sys_tmp_may(st, to_dir, CHANGE)))
		return rc;
	if (b.found && b.node == a.node)
		return 0;
	if (b.found && (flags & 1))
		return -EEXIST;
	int a_dir = S_ISDIR(node_of(st, a.node)->mode);
	if (b.found) {
		int b_dir = S_ISDIR(node_of(st, b.node)->mode);
		if (a_dir && !b_dir)
			return -ENOTDIR;
		if (!a_dir && b_dir)
			return -EISDIR;
		if (b_dir && !empty_dir(st->tmp, b.node))
			return -ENOTEMPTY;
		if (b_dir && sys_tmp_open_node(st, b.node))
			return -EBUSY; /* a folder removed while open is not kept (as rmdir) */
		snprintf(b.name, sizeof(b.name), "%s", node_of(st, b.entry)->name);
		sys_tmp_unlink(st, b.entry);
	}
	struct sys_tmp_node *n = node_of(st, a.entry);
	n->parent = to_dir;
	snprintf(n->name, sizeof(n->name), "%s", b.name);
	return 0;
}

static long sys_mkdir(struct sys_state *st, const uint64_t a[6])
{
	return make_dir(st, (uint64_t)(int64_t)AT_FDCWD, a[0], a[1]);
}

static long sys_mkdirat(struct sys_state *st, const uint64_t a[6])
{
	return make_dir(st, a[0], a[1], a[2]);
}

static long sys_rmdir(struct sys_state *st, const uint64_t a[6])
{
	return remove_at(st, (uint64_t)(int64_t)AT_FDCWD, a[0], 1);
}

static long sys_unlink(struct sys_state *st, const uint64_t a[6])
{
	return remove_at(st, (uint64_t)(int64_t)AT_FDCWD, a[0], 0);
}

static long sys_unlinkat(struct sys_state *st, const uint64_t a[6])
{
	if (a[2] & ~(uint64_t)AT_REMOVEDIR)
		return -EINVAL;
	return remove_at(st, a[0], a[1], (a[2] & AT_REMOVEDIR) != 0);
}

static long sys_rename(struct sys_state *st, const uint64_t a[6])
{
	return rename_at(st, (uint64_t)(int64_t)AT_FDCWD, a[0], (uint64_t)(int64_t)AT_FDCWD, a[1],
			 0);
}

static long sys_renameat(struct sys_state *st, const uint64_t a[6])
{
	return rename_at(st, a[0], a[1], a[2], a[3], 0);
}

static long sys_renameat2(struct sys_state *st, const uint64_t a[6])
{
	return rename_at(st, a[0], a[1], a[2], a[3], (unsigned)a[4]);
}

static long sys_truncate(struct sys_state *st, const uint64_t a[6])
{
	struct sys_tmp_at at;
	long rc = sys_tmp_path(st, (uint64_t)(int64_t)AT_FDCWD, a[0], SYS_TMP_FOLLOW, &at);
	if (rc || !at.in)
		return rc ? rc : outside(st, a[0]);
	if (!at.found)
		return -ENOENT;
	if (S_ISDIR(node_of(st, at.node)->mode))
		return -EISDIR;
	if (!S_ISREG(node_of(st, at.node)->mode))
		return -EINVAL; /* a named pipe, as Linux's vfs_truncate */
	return (int64_t)a[1] < 0 ? -EINVAL : sys_tmp_resize(st, at.node, a[1]);
}

static long sys_ftruncate(struct sys_state *st, const uint64_t a[6])
{
	struct sys_obj *o = sys_fd_obj(st, a[0]);
	if (!o)
		return -EBADF;
	if (o->kind != SYS_KIND_TMP || !S_ISREG(node_of(st, o->id)->mode) || (int64_t)a[1] < 0)
		return -EINVAL;
	if ((o->flags & O_ACCMODE) == O_RDONLY)
		return -EINVAL; /* Linux: EINVAL for a descriptor not open for writing */
	return sys_tmp_resize(st, o->id, a[1]);
}

static long sys_pwrite64(struct sys_state *st, const uint64_t a[6])
{
	struct sys_obj *o = sys_fd_obj(st, a[0]);
	if (!o)
		return -EBADF;
	if (o->kind == SYS_KIND_FILE || o->kind == SYS_KIND_PROC)
		return -EBADF; /* open read-only */
	if (o->kind == SYS_KIND_DEV)
		return sys_dev_pwrite(st, o, a[1], a[2], (int64_t)a[3]);
	if (o->kind != SYS_KIND_TMP)
		return -ESPIPE;
	if ((int64_t)a[3] < 0)
		return -EINVAL;
	/* Linux: on a descriptor opened O_APPEND, pwrite appends whatever the offset */
	uint64_t at = o->flags & O_APPEND ? node_of(st, o->id)->size : a[3];
	return sys_tmp_write_at(st, o, a[1], a[2], at);
}

/* a file's data reaches its storage: host memory already; a pipe has none to reach */
static long sys_fsync(struct sys_state *st, const uint64_t a[6])
{
	struct sys_obj *o = sys_fd_obj(st, a[0]);
	if (!o)
		return -EBADF;
	return o->kind == SYS_KIND_TMP || o->kind == SYS_KIND_FILE ? 0 : -EINVAL;
}

/* one process: a lock is always its own to take */
static long sys_flock(struct sys_state *st, const uint64_t a[6])
{
	struct sys_obj *o = sys_fd_obj(st, a[0]);
	if (!o)
		return -EBADF;
	return a[1] & ~(uint64_t)(LOCK_SH | LOCK_EX | LOCK_UN | LOCK_NB) ? -EINVAL : 0;
}

const struct sys_entry sys_tmp_table[] = {
    {SYS_mkdir, "mkdir", sys_mkdir, 0, NULL},
    {SYS_mkdirat, "mkdirat", sys_mkdirat, 0, NULL},
    {SYS_mknod, "mknod", sys_mknod, 0, NULL},
    {SYS_mknodat, "mknodat", sys_mknodat, 0, NULL},
    {SYS_rmdir, "rmdir", sys_rmdir, 0, NULL},
    {SYS_unlink, "unlink", sys_unlink, 0, NULL},
    {SYS_unlinkat, "unlinkat", sys_unlinkat, 0, NULL},
    {SYS_rename, "rename", sys_rename, 0, NULL},
    {SYS_renameat, "renameat", sys_renameat, 0, NULL},
    {SYS_renameat2, "renameat2", sys_renameat2, 0, NULL},
    {SYS_truncate, "truncate", sys_truncate, 0, NULL},
    {SYS_ftruncate, "ftruncate", sys_ftruncate, 0, NULL},
    {SYS_pwrite64, "pwrite64", sys_pwrite64, 0, NULL},
    {SYS_fsync, "fsync", sys_fsync, 0, NULL},
    {SYS_fdatasync, "fdatasync", sys_fsync, 0, NULL},
    {SYS_flock, "flock", sys_flock, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};
