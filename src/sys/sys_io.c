/* I/O syscalls: the request on fd 0, the response on fd 1, the log on fd 2, code on fd 3,
 * the request's metadata on fd 4. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "sys/sys.h"

#define IOV_MAX_GUEST 1024

static int fd_open(const struct sys_state *st, uint64_t fd)
{
	return (fd < 32 && (st->open_fds & (1u << fd))) || sys_fs_is(st, fd);
}

static long buf_append(struct sys_state *st, struct sys_buf *b, const void *p, size_t n)
{
	if (n == 0) /* a buffer may have no memory yet */
		return 0;
	if (st->out.len + st->log.len + n > st->out_limit) {
		sys_stop(st, SYS_LIMIT, 0, "output limit of %llu bytes exceeded",
			 (unsigned long long)st->out_limit);
		return -EFBIG;
	}
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n)
			cap *= 2;
		uint8_t *d = realloc(b->data, cap);
		if (!d)
			return -ENOMEM;
		b->data = d;
		b->cap = cap;
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
	return (long)n;
}

long sys_append_out(struct sys_state *st, int fd, const void *p, size_t n)
{
	return buf_append(st, fd == 1 ? &st->out : &st->log, p, n);
}

void sys_set_meta(struct sys_state *st, const void *meta, size_t len)
{
	st->meta = meta;
	st->meta_len = len;
	st->meta_pos = 0;
	st->open_fds |= 1u << EMBER_META_FD;
}

/* the bytes behind a readable fd (0, 3 or 4): where they are, how many, the position */
static const uint8_t *source(struct sys_state *st, uint64_t fd, size_t *total, size_t **pos)
{
	if (fd == EMBER_CODE_FD) {
		*total = st->code_len;
		*pos = &st->code_pos;
		return st->code;
	}
	if (fd == EMBER_META_FD) {
		*total = st->meta_len;
		*pos = &st->meta_pos;
		return st->meta;
	}
	*total = st->in_len;
	*pos = &st->in_pos;
	return st->in;
}

/* one contiguous read from fd 0, 3 or 4 into guest memory */
static long read_into(struct sys_state *st, uint64_t fd, uint64_t addr, uint64_t len)
{
	if (sys_fs_is(st, fd))
		return sys_fs_read(st, fd, addr, len, -1);
	if (fd == 0) /* the in-guest runtime may hold part of the request already */
		return st->rt->read_input(st, addr, len);
	size_t total, *pos;
	const uint8_t *src = source(st, fd, &total, &pos);
	size_t n = total - *pos < len ? total - *pos : len;
	void *dst = sys_user(st, addr, n, PROT_WRITE);
	if (!dst)
		return -EFAULT;
	if (n)
		memcpy(dst, src + *pos, n);
	*pos += n;
	return (long)n;
}

static long write_from(struct sys_state *st, uint64_t fd, uint64_t addr, uint64_t len)
{
	const void *src = sys_user(st, addr, len, PROT_READ);
	if (!src)
		return -EFAULT;
	return buf_append(st, fd == 1 ? &st->out : &st->log, src, len);
}

static long check_fd(const struct sys_state *st, uint64_t fd, int writing)
{
	if (!fd_open(st, fd))
		return -EBADF;
	int is_out = fd == 1 || fd == 2; /* the bundle's files are read-only */
	return writing == is_out ? 0 : -EBADF;
}

static long sys_read(struct sys_state *st, const uint64_t a[6])
{
	long rc = check_fd(st, a[0], 0);
	return rc ? rc : read_into(st, a[0], a[1], a[2]);
}

static long sys_write(struct sys_state *st, const uint64_t a[6])
{
	long rc = check_fd(st, a[0], 1);
	return rc ? rc : write_from(st, a[0], a[1], a[2]);
}

/* fds 0 to 2 are pipes: a bad buffer among the iovecs that would take part fails the call before
 * anything moves, as the kernel's pipe_read and pipe_write give EFAULT and move nothing (a
 * file's read or write stops at the bad one instead) */
static int pipe_iov_ok(struct sys_state *st, uint64_t fd, const struct iovec *iov, uint64_t n,
		       int writing)
{
	uint64_t left = writing ? UINT64_MAX : st->in_len - st->in_pos;
	for (uint64_t i = 0; fd <= 2 && i < n && left; i++) {
		uint64_t len = iov[i].iov_len < left ? iov[i].iov_len : left;
		if (len && !sys_user(st, (uint64_t)(uintptr_t)iov[i].iov_base, len,
				     writing ? PROT_READ : PROT_WRITE))
			return 0;
		left -= len;
	}
	return 1;
}

/* readv and writev: each iovec in turn, stopping at a short transfer like the kernel */
static long vector_io(struct sys_state *st, const uint64_t a[6], int writing)
{
	long rc = check_fd(st, a[0], writing);
	if (rc)
		return rc;
	if (a[2] > IOV_MAX_GUEST)
		return -EINVAL;
	struct iovec iov[IOV_MAX_GUEST];
	if (a[2] && sys_get(st, iov, a[1], a[2] * sizeof(iov[0])))
		return -EFAULT;
	if (!pipe_iov_ok(st, a[0], iov, a[2], writing))
		return -EFAULT;
	long total = 0;
	for (uint64_t i = 0; i < a[2]; i++) {
		uint64_t base = (uint64_t)(uintptr_t)iov[i].iov_base, len = iov[i].iov_len;
		if (len == 0)
			continue;
		long n = writing ? write_from(st, a[0], base, len) : read_into(st, a[0], base, len);
		if (n < 0)
			return total ? total : n;
		total += n;
		if ((uint64_t)n < len)
			break;
	}
	return total;
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
	if (sys_fs_is(st, fd))
		return sys_fs_fstat(st, fd, addr);
	if (!fd_open(st, fd))
		return -EBADF;
	struct stat s;
	memset(&s, 0, sizeof(s));
	s.st_blksize = 4096;
	s.st_nlink = 1;
	s.st_uid = s.st_gid = 1000;
	if (fd == EMBER_CODE_FD || fd == EMBER_META_FD) {
		s.st_mode = S_IFREG | 0400;
		s.st_size = (off_t)(fd == EMBER_CODE_FD ? st->code_len : st->meta_len);
	} else {
		s.st_mode = S_IFIFO | 0600;
	}
	return sys_put(st, addr, &s, sizeof(s));
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
	if ((path[0] || !(a[3] & AT_EMPTY_PATH)) && !st->bundle)
		return -EACCES;
	if (path[0] || !(a[3] & AT_EMPTY_PATH) || sys_fs_is(st, a[0]) ||
	    ((int)a[0] == AT_FDCWD && st->bundle))
		return sys_fs_stat_at(st, a[0], a[1], a[2], (int)a[3]);
	return fill_stat(st, a[0], a[2]);
}

static long sys_ioctl(struct sys_state *st, const uint64_t a[6])
{
	return fd_open(st, a[0]) ? -ENOTTY : -EBADF;
}

static long sys_fcntl(struct sys_state *st, const uint64_t a[6])
{
	if (!fd_open(st, a[0]))
		return -EBADF;
	switch ((int)a[1]) {
	case F_GETFD:
	case F_SETFD:
	case F_SETFL:
		return 0;
	case F_GETFL:
		return a[0] == 1 || a[0] == 2 ? O_WRONLY : O_RDONLY;
	default:
		return -EINVAL;
	}
}

static long sys_lseek(struct sys_state *st, const uint64_t a[6])
{
	if (sys_fs_is(st, a[0]))
		return sys_fs_lseek(st, a[0], (int64_t)a[1], (int)a[2]);
	if (!fd_open(st, a[0]))
		return -EBADF;
	if (a[0] != EMBER_CODE_FD && a[0] != EMBER_META_FD)
		return -ESPIPE;
	size_t total, *cur;
	source(st, a[0], &total, &cur);
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

static long sys_close(struct sys_state *st, const uint64_t a[6])
{
	if (sys_fs_is(st, a[0]))
		return sys_fs_close(st, a[0]);
	if (!fd_open(st, a[0]))
		return -EBADF;
	st->open_fds &= ~(1u << a[0]);
	return 0;
}

const struct sys_entry sys_io_table[] = {
    {SYS_read, "read", sys_read, 0, NULL},
    {SYS_write, "write", sys_write, 0, NULL},
    {SYS_readv, "readv", sys_readv, 0, NULL},
    {SYS_writev, "writev", sys_writev, 0, NULL},
    {SYS_fstat, "fstat", sys_fstat, 0, NULL},
    {SYS_newfstatat, "newfstatat", sys_newfstatat, 0, NULL},
    {SYS_ioctl, "ioctl", sys_ioctl, 0, NULL},
    {SYS_fcntl, "fcntl", sys_fcntl, 0, NULL},
    {SYS_lseek, "lseek", sys_lseek, 0, NULL},
    {SYS_close, "close", sys_close, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};
