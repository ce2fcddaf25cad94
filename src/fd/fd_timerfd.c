/* timerfd: expirations counted on CLOCK_MONOTONIC when they are looked at (a read, a poll, the
 * time left), so a timer costs nothing until then; a read waits until the next one. */
#include <errno.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>

#include "fd/fd.h"

#define NS 1000000000ULL

/* the expirations due by now counted; a periodic timer's next one set, a single one disarmed */
static void advance(struct sys_obj *o, uint64_t now)
{
	if (!o->at || o->at > now)
		return;
	uint64_t n = 1;
	if (o->every) {
		n += (now - o->at) / o->every;
		o->at += n * o->every;
	} else {
		o->at = 0;
	}
	o->pos = o->pos + n < o->pos ? UINT64_MAX : o->pos + n;
	o->seq++; /* a change nobody made: edge-triggered epoll sees it all the same */
}

static long timer_read(struct sys_state *st, uint64_t fd, struct sys_obj *o,
		       const struct sys_iov *v, int n)
{
	(void)fd;
	if (sys_iov_total(v, n) < sizeof(uint64_t))
		return -EINVAL;
	advance(o, base_now_ns());
	if (!o->pos) /* until the next expiry, or a change of the timer */
		return o->flags & O_NONBLOCK ? -EAGAIN : sys_wait(st, SYS_KEY_FD, ~0u, o->at);
	if (sys_iov_out(st, v, n, 0, &o->pos, sizeof(o->pos)))
		return -EFAULT;
	o->pos = 0;
	sys_fd_changed(st, o);
	return sizeof(uint64_t);
}

static uint32_t timer_poll(struct sys_state *st, struct sys_obj *o, uint64_t *next)
{
	(void)st;
	advance(o, base_now_ns());
	if (o->pos)
		return EPOLLIN | EPOLLRDNORM;
	if (o->at && (!*next || o->at < *next))
		*next = o->at;
	return 0;
}

static void timer_stat(struct sys_state *st, struct sys_obj *o, struct stat *s)
{
	(void)st, (void)o;
	s->st_mode = 0600; /* an anonymous inode */
	s->st_uid = s->st_gid = 0;
}

static int timer_pollable(const struct sys_obj *o)
{
	(void)o;
	return 1;
}

const struct sys_fd_ops sys_timer_ops = {
    .read = timer_read,
    .poll = timer_poll,
    .stat = timer_stat,
    .pollable = timer_pollable,
};

static long sys_timerfd_create(struct sys_state *st, const uint64_t a[6])
{
	int c = (int)a[0];
	if (c == CLOCK_REALTIME_ALARM || c == CLOCK_BOOTTIME_ALARM)
		return -EPERM; /* CAP_WAKE_ALARM, which the program has not */
	if (c != CLOCK_REALTIME && c != CLOCK_MONOTONIC && c != CLOCK_BOOTTIME)
		return -EINVAL;
	if (a[1] & ~(uint64_t)(TFD_CLOEXEC | TFD_NONBLOCK))
		return -EINVAL;
	if (sys_fd_lowest(st, 0) < 0)
		return -EMFILE;
	struct sys_obj *o = sys_obj_new(st, SYS_KIND_TIMER, O_RDWR | (a[1] & TFD_NONBLOCK));
	o->id = (uint32_t)c;
	return sys_fd_open(st, o, (a[1] & TFD_CLOEXEC) != 0);
}

static struct sys_obj *timer_of(struct sys_state *st, uint64_t fd, long *err)
{
	struct sys_obj *o = sys_fd_obj(st, fd);
	*err = !o ? -EBADF : o->kind != SYS_KIND_TIMER ? -EINVAL : 0;
	return *err ? NULL : o;
}

static uint64_t ns_of(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec > (UINT64_MAX - NS) / NS
		   ? UINT64_MAX / 2
		   : (uint64_t)ts->tv_sec * NS + (uint64_t)ts->tv_nsec;
}

static struct timespec ts_of(uint64_t ns)
{
	return (struct timespec){(time_t)(ns / NS), (long)(ns % NS)};
}

/* the time left and the interval, as timerfd_gettime says them */
static struct itimerspec value_of(struct sys_obj *o, uint64_t now)
{
	advance(o, now);
	return (struct itimerspec){ts_of(o->every), ts_of(o->at ? o->at - now : 0)};
}

static long sys_timerfd_settime(struct sys_state *st, const uint64_t a[6])
{
	long err;
	struct sys_obj *o = timer_of(st, a[0], &err);
	if (!o)
		return err;
	if (a[1] & ~(uint64_t)(TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET))
		return -EINVAL;
	struct itimerspec nv;
	if (sys_get(st, &nv, a[2], sizeof(nv)))
		return -EFAULT;
	const struct timespec *t[2] = {&nv.it_value, &nv.it_interval};
	for (int i = 0; i < 2; i++)
		if (t[i]->tv_sec < 0 || t[i]->tv_nsec < 0 || t[i]->tv_nsec >= (long)NS)
			return -EINVAL;
	uint64_t now = base_now_ns();
	const struct itimerspec old = value_of(o, now);
	if (a[3] && sys_put(st, a[3], &old, sizeof(old)))
		return -EFAULT;
	uint64_t value = ns_of(&nv.it_value);
	o->pos = 0;
	o->every = value ? ns_of(&nv.it_interval) : 0;
	o->at = 0;
	if (value && (a[1] & TFD_TIMER_ABSTIME)) {
		/* a time on the timer's clock, as far from now on CLOCK_MONOTONIC (a time past
		 * expires at once, with the periods since counted) */
		struct timespec c;
		clock_gettime((clockid_t)o->id, &c);
		uint64_t cnow = ns_of(&c);
		o->at = value >= cnow ? now + (value - cnow)
				      : (cnow - value < now ? now - (cnow - value) : 1);
	} else if (value) {
		o->at = value > UINT64_MAX - now ? UINT64_MAX : now + value;
	}
	sys_fd_changed(st, o);
	return 0;
}

static long sys_timerfd_gettime(struct sys_state *st, const uint64_t a[6])
{
	long err;
	struct sys_obj *o = timer_of(st, a[0], &err);
	if (!o)
		return err;
	const struct itimerspec cur = value_of(o, base_now_ns());
	return sys_put(st, a[1], &cur, sizeof(cur));
}

const struct sys_entry sys_timerfd_table[] = {
    {SYS_timerfd_create, "timerfd_create", sys_timerfd_create, 0, NULL},
    {SYS_timerfd_settime, "timerfd_settime", sys_timerfd_settime, 0, NULL},
    {SYS_timerfd_gettime, "timerfd_gettime", sys_timerfd_gettime, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};
