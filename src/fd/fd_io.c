/* I/O syscalls on any descriptor: read, write and their vector forms, fstat, ioctl, lseek, each
 * sent to what its object's kind does (fd.h). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "fd/fd.h"
#include "fs/fs.h"
#include "fs/fs_tmp.h"

uint64_t sys_iov_total(const struct sys_iov *v, int n)
{
	uint64_t total = 0;
	for (int i = 0; i < n; i++)
		total += v[i].len;
	return total;
}

long sys_iov_get(struct sys_state *st, uint64_t addr, uint64_t n, struct sys_iov *v,
		 uint64_t *total)
{
	if (n > SYS_IOV_MAX)
		return -EINVAL;
	if (n && sys_get(st, v, addr, n * sizeof(*v)))
		return -EFAULT;
	*total = 0;
	for (uint64_t i = 0; i < n; i++) { /* Linux's check first: the sum fits a ssize_t */
		if (v[i].len > (uint64_t)INT64_MAX - *total)
			return -EINVAL;
		*total += v[i].len;
	}
	return 0;
}

/* len bytes between host memory at p and the pieces of v from byte skip on: checked, then
 * copied (passes 0 and 1; from 1 when checked already) */
static int iov_copy(struct sys_state *st, const struct sys_iov *v, int n, uint64_t skip, uint8_t *p,
		    uint64_t len, int out, int passes)
{
	for (int pass = 0; pass < passes; pass++) {
		uint64_t at = skip, left = len, off = 0;
		for (int i = 0; i < n && left; i++) {
			if (at >= v[i].len) {
				at -= v[i].len;
				continue;
			}
			uint64_t k = v[i].len - at < left ? v[i].len - at : left;
			void *g = sys_user(st, v[i].base + at, k, out ? PROT_WRITE : PROT_READ);
			if (!g)
				return -EFAULT;
			if (pass)
				memcpy(out ? g : p + off, out ? p + off : g, k);
			off += k;
			left -= k;
			at = 0;
		}
		if (left) /* the pieces hold fewer bytes than asked (read again since: changed) */
			return -EFAULT;
	}
	return 0;
}

int sys_iov_out(struct sys_state *st, const struct sys_iov *v, int n, uint64_t skip,
		const void *src, uint64_t len)
{
	return iov_copy(st, v, n, skip, (uint8_t *)src, len, 1, 2);
}

int sys_iov_ok(struct sys_state *st, const struct sys_iov *v, int n, uint64_t skip, uint64_t len,
	       int out)
{
	return iov_copy(st, v, n, skip, NULL, len, out, 1) == 0;
}

int sys_iov_in(struct sys_state *st, const struct sys_iov *v, int n, uint64_t skip, void *dst,
	       uint64_t len)
{
	return iov_copy(st, v, n, skip, dst, len, 0, 2);
}

/* fd's object, if it is open for reading (or writing); NULL with the errno */
static struct sys_obj *open_for(struct sys_state *st, uint64_t fd, int writing, long *err)
{
	struct sys_obj *o = sys_fd_obj(st, fd);
	*err = -EBADF;
	uint32_t acc = o ? o->flags & O_ACCMODE : O_ACCMODE;
	if (acc == O_ACCMODE || acc == (writing ? O_RDONLY : O_WRONLY))
		return NULL; /* 3: open for neither (an ioctl's descriptor) */
	return o;
}

/* the object's read or write, the access mode checked */
static long transfer(struct sys_state *st, uint64_t fd, const struct sys_iov *v, int n, int writing)
{
	long err;
	struct sys_obj *o = open_for(st, fd, writing, &err);
	if (!o)
		return err;
	const struct sys_fd_ops *ops = sys_obj_ops(o);
	long (*fn)(struct sys_state *, uint64_t, struct sys_obj *, const struct sys_iov *, int) =
	    writing ? ops->write : ops->read;
	return fn ? fn(st, fd, o, v, n) : -EINVAL;
}

static long sys_read(struct sys_state *st, const uint64_t a[6])
{
	const struct sys_iov v = {a[1], a[2] > INT64_MAX ? INT64_MAX : a[2]};
	return transfer(st, a[0], &v, 1, 0);
}

static long sys_write(struct sys_state *st, const uint64_t a[6])
{
	const struct sys_iov v = {a[1], a[2] > INT64_MAX ? INT64_MAX : a[2]};
	return transfer(st, a[0], &v, 1, 1);
}

static long vector_io(struct sys_state *st, const uint64_t a[6], int writing)
{
	long rc;
	if (!open_for(st, a[0], writing, &rc))
		return rc;
	struct sys_iov v[SYS_IOV_MAX];
	uint64_t total;
	rc = sys_iov_get(st, a[1], a[2], v, &total);
	return rc ? rc : transfer(st, a[0], v, (int)a[2], writing);
}

static long sys_readv(struct sys_state *st, const uint64_t a[6])
{
	return vector_io(st, a, 0);
}

static long sys_writev(struct sys_state *st, const uint64_t a[6])
{
	return vector_io(st, a, 1);
}

static long fill_stat(struct sys_state *st, uint64_t fd, uint64_t addr)
{
	struct stat s;
	long rc = sys_fd_stat(st, fd, &s);
	return rc ? rc : sys_put(st, addr, &s, sizeof(s));
}

static long sys_fstat(struct sys_state *st, const uint64_t a[6])
{
	return fill_stat(st, a[0], a[1]);
}

/* newfstatat of an open fd with an empty path; a real path is one of the bundle's, or refused */
static long sys_newfstatat(struct sys_state *st, const uint64_t a[6])
{
	const char *path = sys_user(st, a[1], 1, PROT_READ);
	if (!path)
		return -EFAULT;
	if (path[0] || !(a[3] & AT_EMPTY_PATH) || ((int)a[0] == AT_FDCWD && st->bundle))
		return sys_fs_stat_at(st, a[0], a[1], a[2], (int)a[3]);
	return fill_stat(st, a[0], a[2]);
}

/* FIONREAD's answer on fd: a pipe's bytes, what is left of a file from its position; else
 * ENOTTY */
static int nread(struct sys_state *st, uint64_t fd, struct sys_obj *o)
{
	struct stat s;
	if (o->kind == SYS_KIND_PIPE) {
		int reader = (o->flags & O_ACCMODE) == O_RDONLY;
		const struct sys_obj *r = reader ? o : o->id ? &st->obj[o->id - 1] : NULL;
		return r ? (int)r->len : 0;
	}
	if (o->kind == SYS_KIND_FIFO)
		return (int)st->tmp->n[o->id].fifo.len;
	if (o->kind == SYS_KIND_FILE)
		sys_fs_file(st, fd); /* its position taken back from the in-guest runtime */
	else if (o->kind != SYS_KIND_TMP)
		return -ENOTTY;
	sys_fd_stat(st, fd, &s);
	uint64_t left = S_ISREG(s.st_mode) && (uint64_t)s.st_size > o->pos ? s.st_size - o->pos : 0;
	return left > INT32_MAX ? INT32_MAX : (int)left;
}

/* the ioctls any descriptor takes (libuv sets O_NONBLOCK with FIONBIO); the rest, a terminal's
 * among them, ENOTTY: stdio sees no terminal */
static long sys_ioctl(struct sys_state *st, const uint64_t a[6])
{
	struct sys_obj *o = sys_fd_obj(st, a[0]);
	if (!o)
		return -EBADF;
	int on;
	switch ((unsigned)a[1]) {
	case FIONBIO:
		if (sys_get(st, &on, a[2], sizeof(on)))
			return -EFAULT;
		o->flags = on ? o->flags | O_NONBLOCK : o->flags & ~(uint32_t)O_NONBLOCK;
		return 0;
	case FIONREAD: /* the bytes a read would find now */
		on = nread(st, a[0], o);
		if (on < 0)
			return on;
		return sys_put(st, a[2], &on, sizeof(on));
	case FIOCLEX:
	case FIONCLEX:
		st->fd[a[0]].cloexec = (unsigned)a[1] == FIOCLEX;
		return 0;
	default:
		return -ENOTTY;
	}
}

static long sys_lseek(struct sys_state *st, const uint64_t a[6])
{
	struct sys_obj *o = sys_fd_obj(st, a[0]);
	if (!o)
		return -EBADF;
	if (o->kind == SYS_KIND_FILE)
		return sys_fs_lseek(st, a[0], (int64_t)a[1], (int)a[2]);
	if (o->kind == SYS_KIND_PROC)
		return sys_procfs_lseek(st, o, (int64_t)a[1], (int)a[2]);
	if (o->kind == SYS_KIND_DEV) /* a device without a position: 0, as Linux's */
		return 0;
	if (o->kind == SYS_KIND_TMP) {
		int64_t base = (int)a[2] == SEEK_CUR   ? (int64_t)o->pos
			       : (int)a[2] == SEEK_END ? (int64_t)st->tmp->n[o->id].size
						       : 0;
		if ((int)a[2] != SEEK_SET && (int)a[2] != SEEK_CUR && (int)a[2] != SEEK_END)
			return -EINVAL;
		if ((int64_t)a[1] > INT64_MAX - base || base + (int64_t)a[1] < 0)
			return -EINVAL;
		return (long)(o->pos = (uint64_t)(base + (int64_t)a[1]));
	}
	if (o->kind != SYS_KIND_STD || (o->id != EMBER_CODE_FD && o->id != EMBER_META_FD))
		return -ESPIPE;
	size_t total, *cur;
	sys_std_source(st, o->id, &total, &cur);
	int64_t off = (int64_t)a[1], base = 0;
	if ((int)a[2] == SEEK_CUR)
		base = (int64_t)*cur;
	else if ((int)a[2] == SEEK_END)
		base = (int64_t)total;
	else if ((int)a[2] != SEEK_SET)
		return -EINVAL;
	if (base + off < 0)
		return -EINVAL;
	uint64_t pos = (uint64_t)(base + off);
	*cur = pos > total ? total : pos;
	return (long)pos;
}

long sys_iov_at(struct sys_state *st, struct sys_obj *o, const struct sys_iov *v, int n,
		sys_at_fn at, const uint64_t *end)
{
	long total = 0;
	for (int i = 0; i < n; i++) {
		if (end)
			o->pos = *end;
		long k = at(st, o, v[i].base, v[i].len, o->pos);
		if (k < 0)
			return total ? total : k;
		o->pos += (uint64_t)k;
		total += k;
		if ((uint64_t)k < v[i].len)
			break;
	}
	return total;
}

const struct sys_entry sys_io_table[] = {
    {SYS_read, "read", sys_read, 0, NULL},
    {SYS_write, "write", sys_write, 0, NULL},
    {SYS_readv, "readv", sys_readv, 0, NULL},
    {SYS_writev, "writev", sys_writev, 0, NULL},
    {SYS_fstat, "fstat", sys_fstat, 0, NULL},
    {SYS_newfstatat, "newfstatat", sys_newfstatat, 0, NULL},
    {SYS_ioctl, "ioctl", sys_ioctl, 0, NULL},
    {SYS_lseek, "lseek", sys_lseek, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};
