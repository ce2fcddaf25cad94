/* What Ember opens for the program: the request (fd 0), the response (1), the log (2), a
 * runtime's code (3) and the request's metadata (4, where the response head is written), as
 * objects of the descriptor table. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>

#include "fd/fd.h"

/* st wrote past to's limit: the writer ends, and the invocation with it (to->limit_hit: its
 * outcome, whichever program its first process runs by then) */
static long over_limit(struct sys_state *st, struct sys_state *to)
{
	to->limit_hit = 1;
	sys_stop(to, SYS_LIMIT, 0, "output limit of %llu bytes exceeded",
		 (unsigned long long)to->out_limit);
	if (st != to)
		sys_stop(st, SYS_LIMIT, 0, "output limit of %llu bytes exceeded",
			 (unsigned long long)to->out_limit);
	return -EFBIG;
}

static long buf_append(struct sys_state *st, struct sys_state *to, struct sys_buf *b, const void *p,
		       size_t n)
{
	if (n == 0) /* a buffer may have no memory yet */
		return 0;
	/* the response head has its own bound (the caller's), outside the output limit */
	if (b != &to->head && to->out.len + to->log.len + n > to->out_limit)
		return over_limit(st, to);
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
	/* a child's output is the invocation's, in order per descriptor with everyone's; past
	 * the limit, the whole invocation ends */
	struct sys_state *to = st->out_to ? st->out_to : st;
	if (fd == EMBER_META_FD) /* the response head: bounded on its own, and never fatal */
		return to->head.len + n > EMBER_HEAD_MAX ? -EFBIG
							 : buf_append(st, to, &to->head, p, n);
	return buf_append(st, to, fd == 1 ? &to->out : &to->log, p, n);
}

/* Ember's fd `which` (3 or 4) opened on its object, whatever the program left there */
static void open_std(struct sys_state *st, uint32_t which)
{
	if (sys_fd_std(st, which, which))
		return;
	sys_fd_close(st, which);
	/* the metadata's descriptor takes the response head too */
	struct sys_obj *o =
	    sys_obj_new(st, SYS_KIND_STD, which == EMBER_META_FD ? O_RDWR : O_RDONLY);
	o->id = which;
	sys_fd_set(st, which, o, 0);
}

void sys_in_share(struct sys_state *st)
{
	if (st->in_shared)
		return;
	st->rt->give_back(st);
	st->in_shared = 1;
	st->std_changed = 1; /* fd 0's reads go to the host from the call's return on */
}

void sys_set_meta(struct sys_state *st, const void *meta, size_t len)
{
	st->meta = meta;
	st->meta_len = len;
	st->meta_pos = 0;
	open_std(st, EMBER_META_FD);
}

void sys_set_code(struct sys_state *st, const void *code, size_t len)
{
	st->code = code;
	st->code_len = len;
	st->code_pos = 0;
	open_std(st, EMBER_CODE_FD);
}

/* the bytes behind a readable object (0, 3 or 4): where they are, how many, the position */
const uint8_t *sys_std_source(struct sys_state *st, uint32_t which, size_t *total, size_t **pos)
{
	if (which == EMBER_CODE_FD) {
		*total = st->code_len;
		*pos = &st->code_pos;
		return st->code;
	}
	if (which == EMBER_META_FD) {
		*total = st->meta_len;
		*pos = &st->meta_pos;
		return st->meta;
	}
	struct sys_state *in = sys_in_of(st);
	*total = in->in_len;
	*pos = &in->in_pos;
	return in->in;
}

/* one contiguous read from the request, the code or the metadata into guest memory */
static long read_into(struct sys_state *st, uint32_t which, uint64_t addr, uint64_t len)
{
	if (which == 0) /* the in-guest runtime may hold part of the request already */
		return st->rt->read_input(st, addr, len);
	size_t total, *pos;
	const uint8_t *src = sys_std_source(st, which, &total, &pos);
	size_t n = total - *pos < len ? total - *pos : len;
	void *dst = sys_user(st, addr, n, PROT_WRITE);
	if (!dst)
		return -EFAULT;
	if (n)
		memcpy(dst, src + *pos, n);
	*pos += n;
	return (long)n;
}

/* fds 0 to 2 are pipes: a bad buffer among the iovecs that would take part fails the call before
 * anything moves, as the kernel's pipe_read and pipe_write give EFAULT and move nothing (a
 * file's read or write stops at the bad one instead) */
static int pipe_iov_ok(struct sys_state *st, uint32_t which, const struct sys_iov *v, int n,
		       int writing)
{
	uint64_t left = writing ? UINT64_MAX : st->rt->unread(st);
	for (int i = 0; which <= 2 && i < n && left; i++) {
		uint64_t len = v[i].len < left ? v[i].len : left;
		if (len && !sys_user(st, v[i].base, len, writing ? PROT_READ : PROT_WRITE))
			return 0;
		left -= len;
	}
	return 1;
}

/* each piece in turn, stopping at a short transfer like the kernel */
static long std_io(struct sys_state *st, struct sys_obj *o, const struct sys_iov *v, int n,
		   int writing)
{
	if (!pipe_iov_ok(st, o->id, v, n, writing))
		return -EFAULT;
	long total = 0;
	for (int i = 0; i < n; i++) {
		if (v[i].len == 0)
			continue;
		long k;
		if (writing) {
			const void *src = sys_user(st, v[i].base, v[i].len, PROT_READ);
			k = src ? sys_append_out(st, (int)o->id, src, v[i].len) : -EFAULT;
		} else {
			k = read_into(st, o->id, v[i].base, v[i].len);
		}
		if (k < 0)
			return total ? total : k;
		total += k;
		if ((uint64_t)k < v[i].len)
			break;
	}
	return total;
}

static long std_read(struct sys_state *st, uint64_t fd, struct sys_obj *o, const struct sys_iov *v,
		     int n)
{
	(void)fd;
	return std_io(st, o, v, n, 0);
}

static long std_write(struct sys_state *st, uint64_t fd, struct sys_obj *o, const struct sys_iov *v,
		      int n)
{
	(void)fd;
	return std_io(st, o, v, n, 1);
}

/* fd 0 is a pipe whose writer is gone (the request is whole before the program runs): readable
 * while bytes remain, hung up in any case, as Linux's pipe says; during initialisation it is
 * readable, so that a program waiting for its request goes on to read it (the snapshot
 * point). The outputs always take more; code and metadata are regular files. */
static uint32_t std_poll(struct sys_state *st, struct sys_obj *o, uint64_t *next)
{
	(void)next;
	if (o->id == 1 || o->id == 2)
		return EPOLLOUT | EPOLLWRNORM;
	if (o->id == 0 && st->snap_armed)
		return EPOLLIN | EPOLLRDNORM;
	if (o->id == 0)
		return (st->rt->unread(st) ? EPOLLIN | EPOLLRDNORM : 0) | EPOLLHUP;
	return EPOLLIN | EPOLLRDNORM | EPOLLOUT | EPOLLWRNORM;
}

static void std_stat(struct sys_state *st, struct sys_obj *o, struct stat *s)
{
	if (o->id == EMBER_CODE_FD || o->id == EMBER_META_FD) {
		s->st_mode = S_IFREG | 0400;
		s->st_size = (off_t)(o->id == EMBER_CODE_FD ? st->code_len : st->meta_len);
	} else {
		s->st_mode = S_IFIFO | 0600;
	}
}

/* the three pipes; code and metadata are regular files, which epoll refuses */
static int std_pollable(const struct sys_obj *o)
{
	return o->id <= 2;
}

const struct sys_fd_ops sys_std_ops = {
    .read = std_read,
    .write = std_write,
    .poll = std_poll,
    .stat = std_stat,
    .pollable = std_pollable,
};
