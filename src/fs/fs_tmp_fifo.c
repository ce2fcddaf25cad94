/* Named pipes in the scratch /tmp: a FIFO node's ring shared by every descriptor opened on it,
 * opens that wait for their partner as Linux's fifo_open, and the pipe's reads, writes, poll,
 * end and EPIPE. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/syscall.h>

#include "fd/fd.h"
#include "fs/fs_tmp.h"

/* the kernel's O_LARGEFILE, which every open on x86-64 sets (the headers' is 0) */
#define LARGEFILE 0100000

/* an open that waits for its partner, in its thread's wuntil (kept across the retries): the
 * node, which side it opens, and the partner's opens it waits to see change */
#define WAITS	    (1ULL << 63)
#define WAITS_WRITE (1ULL << 62)

static struct sys_tmp_node *node_of(struct sys_state *st, uint32_t node)
{
	return &st->tmp->n[node];
}

static uint64_t ring_size(const struct sys_tmp_fifo *f)
{
	return f->size ? f->size : SYS_PIPE_SIZE;
}

/* node's readiness changed: each descriptor on it hears (edge-triggered epoll), and every
 * call that waits looks again, in every process of the invocation */
static void changed(struct sys_state *st, void *who)
{
	uint32_t node = (uint32_t)(uintptr_t)who;
	for (size_t i = 0; i < SYS_FDS; i++)
		if (st->obj[i].kind == SYS_KIND_FIFO && st->obj[i].id == node)
			st->obj[i].seq++;
	sys_fd_wake(st);
}

static struct sys_ring ring_of(struct sys_state *st, uint32_t node)
{
	struct sys_tmp_node *n = node_of(st, node);
	return (struct sys_ring){&n->data,     &n->fifo.pos,
				 &n->fifo.len, ring_size(&n->fifo),
				 changed,      (void *)(uintptr_t)node};
}

/* a reader or a writer (O_RDWR: both) gone: the bytes with the last of them, as Linux frees the
 * pipe; the node itself when it was unlinked and nothing names it now */
static void uncount(struct sys_state *st, uint32_t node, int acc)
{
	struct sys_tmp_node *n = node_of(st, node);
	n->fifo.readers -= acc != O_WRONLY && n->fifo.readers;
	n->fifo.writers -= acc != O_RDONLY && n->fifo.writers;
	if (!n->fifo.readers && !n->fifo.writers) {
		free(n->data);
		n->data = NULL;
		n->fifo.pos = n->fifo.len = 0;
	}
	changed(st, (void *)(uintptr_t)node);
	sys_tmp_release(st, node);
}

/* the descriptor of an open counted already (uncounted when none is free); quiet: a reader
 * that opened with O_NONBLOCK and no writer, which hears no hang-up until a writer came (Linux's
 * f_pipe) */
static long fifo_fd(struct sys_state *st, uint32_t node, int flags, int quiet)
{
	int acc = flags & O_ACCMODE;
	long fd = sys_fd_lowest(st, 0);
	if (fd < 0) {
		uncount(st, node, acc);
		return fd;
	}
	struct sys_obj *o =
	    sys_obj_new(st, SYS_KIND_FIFO, (uint32_t)(acc | (flags & O_NONBLOCK) | LARGEFILE));
	o->id = node;
	o->pos = quiet ? node_of(st, node)->fifo.wopens : UINT64_MAX;
	return sys_fd_open(st, o, (flags & O_CLOEXEC) != 0);
}

static long await(struct sys_state *st, uint32_t node, int write, uint32_t opens)
{
	sys_cur(st)->wuntil = WAITS | (write ? WAITS_WRITE : 0) | (uint64_t)node << 32 | opens;
	return sys_wait(st, SYS_KEY_FD, ~0u, 0);
}

long sys_tmp_fifo_open(struct sys_state *st, uint32_t node, int flags)
{
	struct sys_tmp_fifo *f = &node_of(st, node)->fifo;
	int acc = flags & O_ACCMODE, nonblock = (flags & O_NONBLOCK) != 0;
	if (acc == O_ACCMODE)
		return -EINVAL; /* Linux's fifo_open: neither reading nor writing */
	long rc = sys_fd_lowest(st, 0);
	if (rc < 0)
		return rc;
	if (acc == O_WRONLY && nonblock && !f->readers)
		return -ENXIO;
	int quiet = acc == O_RDONLY && nonblock && !f->writers;
	if (acc != O_WRONLY) {
		f->readers++;
		f->ropens++;
	}
	if (acc != O_RDONLY) {
		f->writers++;
		f->wopens++;
	}
	changed(st, (void *)(uintptr_t)node); /* an open that waits for this one goes on */
	/* a reader without O_NONBLOCK waits for a writer, a writer for a reader, each counted
	 * already (as Linux's, so that its partner does not wait for it) */
	if (acc == O_RDONLY && !nonblock && !f->writers)
		return await(st, node, 0, f->wopens);
	if (acc == O_WRONLY && !f->readers)
		return await(st, node, 1, f->ropens);
	return fifo_fd(st, node, flags, quiet);
}

int sys_tmp_fifo_again(struct sys_state *st, int flags, long *ret)
{
	struct proc_thread *t = sys_cur(st);
	uint64_t w = t->wuntil;
	if (!sys_retrying(st) || !(w & WAITS))
		return 0;
	uint32_t node = (uint32_t)(w >> 32) & 0x3fffffff, opens = (uint32_t)w;
	const struct sys_tmp_fifo *f = &node_of(st, node)->fifo;
	/* a partner opened, even if it is gone again (Linux's wait_for_partner) */
	if ((w & WAITS_WRITE ? f->ropens : f->wopens) == opens) {
		*ret = sys_wait(st, SYS_KEY_FD, ~0u, 0);
		return 1;
	}
	t->wuntil = 0;
	*ret = fifo_fd(st, node, flags, 0);
	return 1;
}

void sys_tmp_fifo_interrupted(struct sys_state *st, struct proc_thread *t)
{
	static const uint64_t opens[] = {SYS_open, SYS_openat, SYS_creat};
	int open = 0;
	for (size_t i = 0; i < sizeof(opens) / sizeof(opens[0]); i++)
		open |= t->nr == opens[i];
	if (!open || !(t->wuntil & WAITS) || !st->tmp)
		return;
	uint32_t node = (uint32_t)(t->wuntil >> 32) & 0x3fffffff;
	int acc = t->wuntil & WAITS_WRITE ? O_WRONLY : O_RDONLY;
	t->wuntil = 0;
	if (node < st->tmp->nn)
		uncount(st, node, acc);
}

long sys_tmp_fifo_size(struct sys_state *st, struct sys_obj *o, int set, uint64_t arg)
{
	struct sys_tmp_fifo *f = &node_of(st, o->id)->fifo;
	if (!set)
		return (long)ring_size(f);
	long size = sys_ring_size(arg);
	if (size < 0)
		return size;
	struct sys_ring g = ring_of(st, o->id);
	long rc = sys_ring_resize(&g, (uint64_t)size);
	if (rc)
		return rc;
	f->size = size == SYS_PIPE_SIZE ? 0 : (uint64_t)size;
	changed(st, (void *)(uintptr_t)o->id);
	return size;
}

uint64_t sys_tmp_fifo_held(const struct sys_tmp_node *n)
{
	return S_ISFIFO(n->mode) && n->data ? ring_size(&n->fifo) : 0;
}

/* the descriptors' operations: as an anonymous pipe's, every reader and writer of the node
 * sharing one ring; an O_RDWR descriptor is both */
static long fifo_read(struct sys_state *st, uint64_t fd, struct sys_obj *o, const struct sys_iov *v,
		      int n)
{
	(void)fd;
	struct sys_ring g = ring_of(st, o->id);
	int how = (node_of(st, o->id)->fifo.writers ? 0 : SYS_RING_END) |
		  (o->flags & O_NONBLOCK ? SYS_RING_NONBLOCK : 0);
	return sys_ring_get(st, &g, how, v, n); /* no writer: the end */
}

static long fifo_write(struct sys_state *st, uint64_t fd, struct sys_obj *o,
		       const struct sys_iov *v, int n)
{
	(void)fd;
	if (!node_of(st, o->id)->fifo.readers)
		return sys_ring_broken(st, 1);
	struct sys_ring g = ring_of(st, o->id);
	return sys_ring_put(st, &g, (o->flags & O_NONBLOCK) != 0, v, n);
}

/* as Linux's pipe_poll: a reader hears the hang-up of the writers only when one came since it
 * opened; a writer sees EPOLLERR without a reader */
static uint32_t fifo_poll(struct sys_state *st, struct sys_obj *o, uint64_t *next)
{
	(void)next;
	const struct sys_tmp_fifo *f = &node_of(st, o->id)->fifo;
	uint32_t acc = o->flags & O_ACCMODE, ev = 0;
	if (acc != O_WRONLY) {
		ev |= f->len ? EPOLLIN | EPOLLRDNORM : 0;
		ev |= !f->writers && o->pos != f->wopens ? EPOLLHUP : 0;
	}
	if (acc != O_RDONLY) {
		ev |= sys_ring_roomy(ring_size(f), f->len) ? EPOLLOUT | EPOLLWRNORM : 0;
		ev |= f->readers ? 0 : EPOLLERR;
	}
	return ev;
}

static void fifo_stat(struct sys_state *st, struct sys_obj *o, struct stat *s)
{
	sys_tmp_stat(st, o->id, s);
}

static void fifo_close(struct sys_state *st, struct sys_obj *o)
{
	uncount(st, o->id, (int)(o->flags & O_ACCMODE));
}

static int fifo_pollable(const struct sys_obj *o)
{
	(void)o;
	return 1;
}

const struct sys_fd_ops sys_fifo_ops = {
    .read = fifo_read,
    .write = fifo_write,
    .poll = fifo_poll,
    .stat = fifo_stat,
    .close = fifo_close,
    .pollable = fifo_pollable,
};
