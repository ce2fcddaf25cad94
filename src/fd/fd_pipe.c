/* Pipes inside one process: a ring of 64 KiB (F_SETPIPE_SZ: 4 KiB to 1 MiB) behind two objects
 * (the read end holds it), reads and writes that wait for each other, EOF without a writer, EPIPE
 * and SIGPIPE without a reader. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "fd/fd.h"

#define PIPE_BUF_ 4096 /* writes up to this long are atomic: all at once or not at all */

static struct sys_obj *peer(struct sys_state *st, const struct sys_obj *o)
{
	return o->id ? &st->obj[o->id - 1] : NULL;
}

/* a call that found nothing to do: EAGAIN without waiting, else it waits for a change */
static long later(struct sys_state *st, int nonblock)
{
	if (nonblock)
		return -EAGAIN;
	return sys_wait(st, SYS_KEY_FD, ~0u, 0);
}

/* the first len bytes of ring g into the pieces of v, in at most two runs: all checked before
 * any moves, so that a bad piece reads nothing, as Linux's pipe_read */
static int ring_out(struct sys_state *st, const struct sys_ring *g, uint64_t len,
		    const struct sys_iov *v, int n)
{
	const uint8_t *buf = *g->buf;
	uint64_t pos = *g->pos, first = g->size - pos < len ? g->size - pos : len;
	if (!sys_iov_ok(st, v, n, 0, len, 1) || sys_iov_out(st, v, n, 0, buf + pos, first))
		return -EFAULT;
	return first < len ? sys_iov_out(st, v, n, first, buf, len - first) : 0;
}

long sys_ring_get(struct sys_state *st, const struct sys_ring *g, int how, const struct sys_iov *v,
		  int n)
{
	uint64_t want = sys_iov_total(v, n);
	if (!want)
		return 0;
	if (!*g->len)
		return how & SYS_RING_END ? 0 : later(st, how & SYS_RING_NONBLOCK);
	uint64_t k = want < *g->len ? want : *g->len;
	if (ring_out(st, g, k, v, n))
		return -EFAULT;
	if (how & SYS_RING_PEEK)
		return (long)k;
	*g->pos = (*g->pos + k) % g->size;
	*g->len -= k;
	if (g->changed)
		g->changed(st, g->who); /* room for the writer */
	return (long)k;
}

/* a pipe's read end r, or a socket's end, as a ring whose changes its writer (if any) and r
 * hear of */
static void obj_changed(struct sys_state *st, void *who)
{
	sys_fd_changed(st, who);
}

static struct sys_ring obj_ring(struct sys_state *st, struct sys_obj *r, struct sys_obj *who)
{
	return (struct sys_ring){
	    &st->pipe_buf[sys_obj_slot(st, r)], &r->pos, &r->len, sys_pipe_cap(r),
	    who ? obj_changed : NULL,		who};
}

long sys_ring_read(struct sys_state *st, struct sys_obj *o, struct sys_obj *writer, int how,
		   const struct sys_iov *v, int n)
{
	struct sys_ring g = obj_ring(st, o, writer);
	return sys_ring_get(st, &g, how, v, n);
}

static long pipe_read(struct sys_state *st, uint64_t fd, struct sys_obj *o, const struct sys_iov *v,
		      int n)
{
	(void)fd;
	int how = (o->id ? 0 : SYS_RING_END) | (o->flags & O_NONBLOCK ? SYS_RING_NONBLOCK : 0);
	return sys_ring_read(st, o, peer(st, o), how, v, n); /* no writer: the end */
}

static long pipe_write(struct sys_state *st, uint64_t fd, struct sys_obj *o,
		       const struct sys_iov *v, int n)
{
	(void)fd;
	struct sys_obj *r = peer(st, o);
	if (!r)
		return sys_ring_broken(st, 1);
	return sys_ring_write(st, r, (o->flags & O_NONBLOCK) != 0, v, n);
}

long sys_ring_put(struct sys_state *st, const struct sys_ring *g, int nonblock,
		  const struct sys_iov *v, int n)
{
	struct proc_thread *t = sys_cur(st);
	uint64_t total = sys_iov_total(v, n), done = t->wdone;
	if (!total)
		return 0;
	if (done >= total) /* another thread shrank the pieces while this write waited */
		return (long)done;
	uint64_t size = g->size, room = size - *g->len, left = total - done;
	if (!room || (left <= PIPE_BUF_ && room < left)) {
		if (nonblock && done)
			return (long)done;
		return later(st, nonblock);
	}
	if (!*g->buf && !(*g->buf = malloc(size)))
		return done ? (long)done : -ENOMEM;
	uint64_t k = left < room ? left : room;
	/* the ring's free part from len on, filled from the pieces at done */
	uint8_t *buf = *g->buf;
	uint64_t at = (*g->pos + *g->len) % size, first = size - at < k ? size - at : k;
	if (!sys_iov_ok(st, v, n, done, k, 0) || sys_iov_in(st, v, n, done, buf + at, first) ||
	    (first < k && sys_iov_in(st, v, n, done + first, buf, k - first)))
		return done ? (long)done : -EFAULT;
	*g->len += k;
	done += k;
	g->changed(st, g->who);
	if (done == total || nonblock)
		return (long)done;
	t->wdone = done; /* the rest when the reader made room: kept across the retries */
	return sys_wait(st, SYS_KEY_FD, ~0u, 0);
}

long sys_ring_write(struct sys_state *st, struct sys_obj *r, int nonblock, const struct sys_iov *v,
		    int n)
{
	struct sys_ring g = obj_ring(st, r, r);
	return sys_ring_put(st, &g, nonblock, v, n);
}

static uint32_t pipe_poll(struct sys_state *st, struct sys_obj *o, uint64_t *next)
{
	(void)next;
	if ((o->flags & O_ACCMODE) == O_RDONLY)
		return (o->len ? EPOLLIN | EPOLLRDNORM : 0) | (o->id ? 0 : EPOLLHUP);
	struct sys_obj *r = peer(st, o);
	if (!r)
		return EPOLLOUT | EPOLLWRNORM | EPOLLERR;
	return sys_ring_room(r) ? EPOLLOUT | EPOLLWRNORM : 0;
}

/* writable while a write of PIPE_BUF would not wait, as Linux's page-sized slots say */
int sys_ring_room(const struct sys_obj *r)
{
	return sys_ring_roomy(sys_pipe_cap(r), r->len);
}

int sys_ring_roomy(uint64_t size, uint64_t len)
{
	return size - len >= PIPE_BUF_;
}

long sys_ring_broken(struct sys_state *st, int sigpipe)
{
	struct proc_thread *t = sys_cur(st);
	if (sigpipe)
		sys_send(st, t, SIGPIPE, 0);
	return t->wdone ? (long)t->wdone : -EPIPE;
}

static void pipe_stat(struct sys_state *st, struct sys_obj *o, struct stat *s)
{
	/* both ends are one inode: the read end's slot names it while there is one */
	int reader = (o->flags & O_ACCMODE) == O_RDONLY || !o->id;
	s->st_mode = S_IFIFO | 0600;
	s->st_ino = (reader ? sys_obj_slot(st, o) : o->id - 1) + 1;
	s->st_dev = 0xc; /* pipefs's */
}

void sys_ring_free(struct sys_state *st, struct sys_obj *o)
{
	uint32_t slot = sys_obj_slot(st, o);
	free(st->pipe_buf[slot]);
	st->pipe_buf[slot] = NULL;
}

/* an end closed: the other sees EOF (the writer gone) or EPIPE (the reader gone); the reader
 * takes the bytes with it */
static void pipe_close(struct sys_state *st, struct sys_obj *o)
{
	struct sys_obj *p = peer(st, o);
	if ((o->flags & O_ACCMODE) == O_RDONLY)
		sys_ring_free(st, o);
	if (p) {
		p->id = 0;
		sys_fd_changed(st, p);
	}
}

long sys_ring_size(uint64_t arg)
{
	uint32_t want = (uint32_t)arg; /* Linux takes an unsigned int */
	if (want > (1u << 31))
		return -EINVAL;
	uint64_t size = 4096;
	while (size < want)
		size <<= 1;
	return size > SYS_PIPE_MAX ? -EPERM /* past pipe-max-size, without CAP_SYS_RESOURCE */
				   : (long)size;
}

long sys_ring_resize(const struct sys_ring *g, uint64_t size)
{
	if (*g->len > size)
		return -EBUSY;
	if (*g->buf) { /* the bytes, from the ring's start */
		uint8_t *buf = malloc(size);
		if (!buf)
			return -ENOMEM;
		uint64_t old = g->size, pos = *g->pos,
			 first = old - pos < *g->len ? old - pos : *g->len;
		memcpy(buf, *g->buf + pos, first);
		memcpy(buf + first, *g->buf, *g->len - first);
		free(*g->buf);
		*g->buf = buf;
	}
	*g->pos = 0;
	return 0;
}

long sys_pipe_size(struct sys_state *st, struct sys_obj *o, int set, uint64_t arg)
{
	int reader = (o->flags & O_ACCMODE) == O_RDONLY;
	struct sys_obj *r = reader ? o : peer(st, o);
	if (!set)
		return r ? (long)sys_pipe_cap(r) : SYS_PIPE_SIZE;
	long size = sys_ring_size(arg);
	if (size < 0 || !r)
		return size; /* the reader is gone: nothing is kept */
	struct sys_ring g = obj_ring(st, r, NULL);
	long rc = sys_ring_resize(&g, (uint64_t)size);
	if (rc)
		return rc;
	r->every = size == SYS_PIPE_SIZE ? 0 : (uint64_t)size;
	sys_fd_changed(st, r);
	if (peer(st, r))
		sys_fd_changed(st, peer(st, r));
	return size;
}

static int pipe_pollable(const struct sys_obj *o)
{
	(void)o;
	return 1;
}

const struct sys_fd_ops sys_pipe_ops = {
    .read = pipe_read,
    .write = pipe_write,
    .poll = pipe_poll,
    .stat = pipe_stat,
    .close = pipe_close,
    .pollable = pipe_pollable,
};

static long sys_pipe2(struct sys_state *st, const uint64_t a[6])
{
	/* O_DIRECT (packet mode) is refused, as the brief allows a kernel without it */
	if (a[1] & ~(uint64_t)(O_CLOEXEC | O_NONBLOCK))
		return -EINVAL;
	int cloexec = (a[1] & O_CLOEXEC) != 0;
	uint32_t nb = (uint32_t)(a[1] & O_NONBLOCK);
	long rfd = sys_fd_lowest(st, 0), wfd = rfd < 0 ? rfd : sys_fd_lowest(st, (uint64_t)rfd + 1);
	if (wfd < 0)
		return wfd;
	if (!sys_obj_room(st, 2))
		return -ENFILE; /* two ends: the invocation's open files are full */
	const int fds[2] = {(int)rfd, (int)wfd};
	if (!sys_user(st, a[0], sizeof(fds), PROT_WRITE))
		return -EFAULT;
	struct sys_obj *r = sys_obj_new(st, SYS_KIND_PIPE, O_RDONLY | nb);
	struct sys_obj *w = sys_obj_new(st, SYS_KIND_PIPE, O_WRONLY | nb);
	r->id = sys_obj_slot(st, w) + 1;
	w->id = sys_obj_slot(st, r) + 1;
	sys_fd_set(st, (uint64_t)rfd, r, cloexec);
	sys_fd_set(st, (uint64_t)wfd, w, cloexec);
	return sys_put(st, a[0], fds, sizeof(fds));
}

static long sys_pipe(struct sys_state *st, const uint64_t a[6])
{
	const uint64_t b[6] = {a[0], 0, 0, 0, 0, 0};
	return sys_pipe2(st, b);
}

const struct sys_entry sys_pipe_table[] = {
    {SYS_pipe, "pipe", sys_pipe, 0, NULL},
    {SYS_pipe2, "pipe2", sys_pipe2, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};
