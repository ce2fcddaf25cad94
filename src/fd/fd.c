/* The descriptor table: descriptors naming objects (open file descriptions) of every kind, and
 * the calls on descriptors as such: close, dup, dup2, dup3, fcntl. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "fd/fd.h"
#include "fs/fs_tmp.h"

/* by kind; NONE has none */
static const struct sys_fd_ops *const kinds[SYS_KINDS] = {
    [SYS_KIND_STD] = &sys_std_ops,     [SYS_KIND_FILE] = &sys_file_ops,
    [SYS_KIND_PIPE] = &sys_pipe_ops,   [SYS_KIND_EVENT] = &sys_event_ops,
    [SYS_KIND_TIMER] = &sys_timer_ops, [SYS_KIND_EPOLL] = &sys_epoll_ops,
    [SYS_KIND_PROC] = &sys_procfs_ops, [SYS_KIND_TMP] = &sys_tmp_ops,
    [SYS_KIND_DEV] = &sys_dev_ops,     [SYS_KIND_SOCK] = &sys_sock_ops,
    [SYS_KIND_FIFO] = &sys_fifo_ops,
};

const struct sys_fd_ops *sys_obj_ops(const struct sys_obj *o)
{
	return kinds[o->kind < SYS_KINDS ? o->kind : SYS_KIND_NONE];
}

struct sys_obj *sys_fd_obj(struct sys_state *st, uint64_t fd)
{
	if (fd >= SYS_FDS || !st->fd[fd].obj)
		return NULL;
	return &st->obj[st->fd[fd].obj - 1];
}

long sys_fd_stat(struct sys_state *st, uint64_t fd, struct stat *s)
{
	struct sys_obj *o = sys_fd_obj(st, fd);
	if (!o)
		return -EBADF;
	memset(s, 0, sizeof(*s));
	s->st_blksize = 4096;
	s->st_nlink = 1;
	s->st_uid = s->st_gid = SYS_GUEST_UID;
	sys_obj_ops(o)->stat(st, o, s);
	return 0;
}

int sys_fd_std(struct sys_state *st, uint64_t fd, uint32_t which)
{
	struct sys_obj *o = sys_fd_obj(st, fd);
	return o && o->kind == SYS_KIND_STD && o->id == which;
}

unsigned sys_fd_moved(struct sys_state *st)
{
	unsigned moved = 0;
	for (uint32_t fd = 0; fd <= EMBER_META_FD; fd++)
		if (!sys_fd_std(st, fd, fd) || (fd == 0 && st->in_shared))
			moved |= 1u << fd;
	return moved;
}

/* fds 0 to 4 changed: the runtime learns which it may still serve after the call (sys.c), or
 * at the start of the next run: not now, when guest memory may not be there yet (a cold start
 * restores it after the machine is set up) */
static void std_changed(struct sys_state *st, uint64_t fd)
{
	if (fd <= EMBER_META_FD)
		st->std_changed = 1;
}

int sys_obj_room(const struct sys_state *st, int n)
{
	int free = 0;
	for (size_t i = 0; i < SYS_FDS && free < n; i++)
		free += st->obj[i].kind == SYS_KIND_NONE;
	return free >= n;
}

long sys_fd_lowest(const struct sys_state *st, uint64_t from)
{
	for (uint64_t fd = from; fd < sys_rlimit_nofile(st); fd++)
		if (!st->fd[fd].obj && fd != EMBER_CODE_FD && fd != EMBER_META_FD)
			/* a free descriptor, but the objects may be full: the table is every
			 * process's of the invocation */
			return sys_obj_room(st, 1) ? (long)fd : -ENFILE;
	return -EMFILE;
}

struct sys_obj *sys_obj_new(struct sys_state *st, enum sys_kind kind, uint32_t flags)
{
	for (size_t i = 0; i < SYS_FDS; i++) {
		if (st->obj[i].kind != SYS_KIND_NONE)
			continue;
		st->obj[i] = (struct sys_obj){.kind = kind, .flags = flags};
		return &st->obj[i];
	}
	return NULL; /* not while a descriptor is free: every object has one at least */
}

void sys_fd_set(struct sys_state *st, uint64_t fd, struct sys_obj *o, int cloexec)
{
	st->fd[fd] = (struct sys_fd){sys_obj_slot(st, o) + 1, cloexec ? 1 : 0};
	o->refs++;
	std_changed(st, fd);
}

/* the object's last descriptor is gone: its kind lets go of it, epoll forgets it */
static void obj_free(struct sys_state *st, struct sys_obj *o)
{
	const struct sys_fd_ops *ops = sys_obj_ops(o);
	if (ops && ops->close)
		ops->close(st, o);
	sys_epoll_forget(st, sys_obj_slot(st, o));
	memset(o, 0, sizeof(*o));
}

long sys_fd_open(struct sys_state *st, struct sys_obj *o, int cloexec)
{
	long fd = sys_fd_lowest(st, 0);
	if (fd < 0) {
		obj_free(st, o);
		return fd;
	}
	sys_fd_set(st, (uint64_t)fd, o, cloexec);
	return fd;
}

long sys_fd_close(struct sys_state *st, uint64_t fd)
{
	struct sys_obj *o = sys_fd_obj(st, fd);
	if (!o)
		return -EBADF;
	if (o->kind == SYS_KIND_FILE)
		sys_fs_rt_close(st, fd); /* the window is the descriptor's */
	st->fd[fd] = (struct sys_fd){0, 0};
	if (--o->refs == 0)
		obj_free(st, o);
	std_changed(st, fd);
	return 0;
}

void sys_fd_changed(struct sys_state *st, struct sys_obj *o)
{
	o->seq++;
	sys_fd_wake(st);
}

void sys_fd_wake(struct sys_state *st)
{
	/* one key for every descriptor: a waiter looks at what it waits for again, so a wake too
	 * many costs a look, and no wake is ever missed */
	proc_wake(&st->pr, SYS_KEY_FD, ~0u, INT_MAX);
	if (st->kin) /* the object may be another process's too: a pipe, an eventfd */
		st->kin->changed(st->kin_ctx, st);
}

void sys_fd_init(struct sys_state *st)
{
	memset(st->fd, 0, sizeof(st->fd));
	memset(st->obj, 0, SYS_FDS * sizeof(*st->obj));
	for (uint32_t fd = 0; fd <= 2; fd++) {
		struct sys_obj *o = sys_obj_new(st, SYS_KIND_STD, fd == 0 ? O_RDONLY : O_WRONLY);
		o->id = fd;
		sys_fd_set(st, fd, o, 0);
	}
}

void sys_fd_free(struct sys_state *st)
{
	for (size_t i = 0; st->pipe_buf == st->pipe_own && i < SYS_FDS; i++) {
		free(st->pipe_buf[i]);
		st->pipe_buf[i] = NULL;
	}
	free(st->epi);
	st->epi = NULL;
	st->nepi = st->epi_cap = 0;
}

/* newfd, closed first if open, names what oldfd names */
static long dup_to(struct sys_state *st, uint64_t oldfd, uint64_t newfd, int cloexec)
{
	struct sys_obj *o = sys_fd_obj(st, oldfd);
	if (!o)
		return -EBADF;
	if (newfd >= SYS_FDS)
		return -EBADF;
	const struct sys_fd_ops *ops = sys_obj_ops(o);
	if (ops->share)
		ops->share(st, oldfd, o);
	o->refs++; /* held across the close, which may be o's own descriptor's */
	if (st->fd[newfd].obj)
		sys_fd_close(st, newfd);
	o->refs--;
	sys_fd_set(st, newfd, o, cloexec);
	return (long)newfd;
}

static long dup_from(struct sys_state *st, uint64_t oldfd, uint64_t from, int cloexec)
{
	if (!sys_fd_obj(st, oldfd))
		return -EBADF;
	long fd = sys_fd_lowest(st, from);
	return fd < 0 ? fd : dup_to(st, oldfd, (uint64_t)fd, cloexec);
}

static long sys_close(struct sys_state *st, const uint64_t a[6])
{
	return sys_fd_close(st, a[0]);
}

/* close_range(first, last, flags): what a child closes before it execs, in one call
 * (CPython's subprocess, else 250 closes); CLOSE_RANGE_CLOEXEC marks instead, UNSHARE has
 * nothing to unshare (a process's descriptors are its own already) */
#define CLOSE_RANGE_UNSHARE_ (1u << 1)
#define CLOSE_RANGE_CLOEXEC_ (1u << 2)
static long sys_close_range(struct sys_state *st, const uint64_t a[6])
{
	uint32_t first = (uint32_t)a[0], last = (uint32_t)a[1];
	if (a[2] & ~(uint64_t)(CLOSE_RANGE_UNSHARE_ | CLOSE_RANGE_CLOEXEC_) || first > last)
		return -EINVAL;
	for (uint64_t fd = first; fd <= last && fd < SYS_FDS; fd++) {
		if (!st->fd[fd].obj)
			continue;
		if (a[2] & CLOSE_RANGE_CLOEXEC_)
			st->fd[fd].cloexec = 1;
		else
			sys_fd_close(st, fd);
	}
	return 0;
}

static long sys_dup(struct sys_state *st, const uint64_t a[6])
{
	return dup_from(st, a[0], 0, 0);
}

static long sys_dup2(struct sys_state *st, const uint64_t a[6])
{
	if (a[0] == a[1]) /* nothing changes, but the descriptor must be open */
		return sys_fd_obj(st, a[0]) ? (long)a[1] : -EBADF;
	return dup_to(st, a[0], a[1], 0);
}

static long sys_dup3(struct sys_state *st, const uint64_t a[6])
{
	if (a[2] & ~(uint64_t)O_CLOEXEC)
		return -EINVAL;
	if (a[0] == a[1])
		return -EINVAL;
	return dup_to(st, a[0], a[1], (a[2] & O_CLOEXEC) != 0);
}

/* what F_SETFL may change (Linux's O_APPEND, O_ASYNC, O_DIRECT and O_NOATIME mean nothing here) */
#define SETFL_MASK (O_NONBLOCK | O_APPEND)

static long sys_fcntl(struct sys_state *st, const uint64_t a[6])
{
	struct sys_obj *o = sys_fd_obj(st, a[0]);
	if (!o)
		return -EBADF;
	switch ((int)a[1]) {
	case F_GETFD:
		return st->fd[a[0]].cloexec ? FD_CLOEXEC : 0;
	case F_SETFD:
		st->fd[a[0]].cloexec = (a[2] & FD_CLOEXEC) != 0;
		return 0;
	case F_GETFL:
		return o->flags;
	case F_SETFL:
		o->flags = (o->flags & ~(uint32_t)SETFL_MASK) | ((uint32_t)a[2] & SETFL_MASK);
		return 0;
	case F_DUPFD:
	case F_DUPFD_CLOEXEC:
		if (a[2] >= SYS_FDS)
			return -EINVAL;
		return dup_from(st, a[0], a[2], (int)a[1] == F_DUPFD_CLOEXEC);
	case F_GETPIPE_SZ:
	case F_SETPIPE_SZ:
		if (o->kind == SYS_KIND_FIFO)
			return sys_tmp_fifo_size(st, o, (int)a[1] == F_SETPIPE_SZ, a[2]);
		if (o->kind != SYS_KIND_PIPE)
			return -EBADF;
		return sys_pipe_size(st, o, (int)a[1] == F_SETPIPE_SZ, a[2]);
	case F_SETLK:
	case F_SETLKW:
	case F_OFD_SETLK:
	case F_OFD_SETLKW:
		/* one process: every lock on a file is its own to take */
		return o->kind == SYS_KIND_FILE || o->kind == SYS_KIND_TMP ? 0 : -EBADF;
	case F_GETLK:
	case F_OFD_GETLK: { /* nothing stands in the way: l_type F_UNLCK */
		short unlck = F_UNLCK;
		if (o->kind != SYS_KIND_FILE && o->kind != SYS_KIND_TMP)
			return -EBADF;
		return sys_put(st, a[2], &unlck, sizeof(unlck)) ? -EFAULT : 0;
	}
	default:
		return -EINVAL;
	}
}

/* the calls on a socket: where no descriptor is one (fd_sock.c serves the pairs), as Linux says of
 * a descriptor that is not (bash asks getpeername of its stdin whether it runs under sshd) */
static long not_socket(struct sys_state *st, const uint64_t a[6])
{
	return sys_fd_obj(st, a[0]) ? -ENOTSOCK : -EBADF;
}

const struct sys_entry sys_fd_table[] = {
    {SYS_connect, "connect", not_socket, 0, NULL},
    {SYS_bind, "bind", not_socket, 0, NULL},
    {SYS_listen, "listen", not_socket, 0, NULL},
    {SYS_accept, "accept", not_socket, 0, NULL},
    {SYS_accept4, "accept4", not_socket, 0, NULL},
    {SYS_getpeername, "getpeername", not_socket, 0, NULL},
    {SYS_getsockname, "getsockname", not_socket, 0, NULL},
    {SYS_getsockopt, "getsockopt", not_socket, 0, NULL},
    {SYS_setsockopt, "setsockopt", not_socket, 0, NULL},
    {SYS_shutdown, "shutdown", not_socket, 0, NULL},
    {SYS_sendto, "sendto", not_socket, 0, NULL},
    {SYS_recvfrom, "recvfrom", not_socket, 0, NULL},
    {SYS_sendmsg, "sendmsg", not_socket, 0, NULL},
    {SYS_recvmsg, "recvmsg", not_socket, 0, NULL},
    {SYS_close, "close", sys_close, 0, NULL},
    {SYS_dup, "dup", sys_dup, 0, NULL},
    {SYS_close_range, "close_range", sys_close_range, 0, NULL},
    {SYS_dup2, "dup2", sys_dup2, 0, NULL},
    {SYS_dup3, "dup3", sys_dup3, 0, NULL},
    {SYS_fcntl, "fcntl", sys_fcntl, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};
