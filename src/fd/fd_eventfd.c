/* eventfd: a 64-bit counter that writes add to and reads take (all of it, or one with
 * EFD_SEMAPHORE), waiting while it is zero or would overflow. */
#include <errno.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>

#include "fd/fd.h"

#define COUNT_MAX (UINT64_MAX - 1)

static long later(struct sys_state *st, const struct sys_obj *o)
{
	return o->flags & O_NONBLOCK ? -EAGAIN : sys_wait(st, SYS_KEY_FD, ~0u, 0);
}

static long event_read(struct sys_state *st, uint64_t fd, struct sys_obj *o,
		       const struct sys_iov *v, int n)
{
	(void)fd;
	if (sys_iov_total(v, n) < sizeof(uint64_t))
		return -EINVAL;
	if (!o->pos)
		return later(st, o);
	uint64_t take = o->id ? 1 : o->pos;
	if (sys_iov_out(st, v, n, 0, &take, sizeof(take)))
		return -EFAULT;
	o->pos -= take;
	sys_fd_changed(st, o);
	return sizeof(take);
}

static long event_write(struct sys_state *st, uint64_t fd, struct sys_obj *o,
			const struct sys_iov *v, int n)
{
	(void)fd;
	uint64_t add;
	if (sys_iov_total(v, n) < sizeof(add))
		return -EINVAL;
	if (sys_iov_in(st, v, n, 0, &add, sizeof(add)))
		return -EFAULT;
	if (add == UINT64_MAX)
		return -EINVAL;
	if (add > COUNT_MAX - o->pos)
		return later(st, o);
	o->pos += add;
	sys_fd_changed(st, o); /* even for 0, as Linux wakes its waiters */
	return sizeof(add);
}

static uint32_t event_poll(struct sys_state *st, struct sys_obj *o, uint64_t *next)
{
	(void)st, (void)next;
	return (o->pos ? EPOLLIN | EPOLLRDNORM : 0) |
	       (o->pos < COUNT_MAX ? EPOLLOUT | EPOLLWRNORM : 0);
}

/* an anonymous inode, as Linux's: mode 0600 and no type, owned by root */
static void event_stat(struct sys_state *st, struct sys_obj *o, struct stat *s)
{
	(void)st, (void)o;
	s->st_mode = 0600;
	s->st_uid = s->st_gid = 0;
}

static int event_pollable(const struct sys_obj *o)
{
	(void)o;
	return 1;
}

const struct sys_fd_ops sys_event_ops = {
    .read = event_read,
    .write = event_write,
    .poll = event_poll,
    .stat = event_stat,
    .pollable = event_pollable,
};

static long sys_eventfd2(struct sys_state *st, const uint64_t a[6])
{
	if (a[1] & ~(uint64_t)(EFD_SEMAPHORE | EFD_NONBLOCK | EFD_CLOEXEC))
		return -EINVAL;
	if (sys_fd_lowest(st, 0) < 0)
		return -EMFILE;
	struct sys_obj *o = sys_obj_new(st, SYS_KIND_EVENT, O_RDWR | (a[1] & EFD_NONBLOCK));
	o->pos = (uint32_t)a[0]; /* an unsigned int */
	o->id = (a[1] & EFD_SEMAPHORE) != 0;
	return sys_fd_open(st, o, (a[1] & EFD_CLOEXEC) != 0);
}

static long sys_eventfd(struct sys_state *st, const uint64_t a[6])
{
	const uint64_t b[6] = {a[0], 0, 0, 0, 0, 0};
	return sys_eventfd2(st, b);
}

const struct sys_entry sys_eventfd_table[] = {
    {SYS_eventfd, "eventfd", sys_eventfd, 0, NULL},
    {SYS_eventfd2, "eventfd2", sys_eventfd2, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};
