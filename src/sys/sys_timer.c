/* Timers that send signals: setitimer, alarm and the POSIX timers (timer_create), all on the
 * wall clock of the invocation (the CPU-time ones too), fired by the scheduler. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>

#include "sys/sys.h"

/* setitimer's ITIMER_REAL, _VIRTUAL and _PROF are slots 0 to 2; timer_create's the rest */
#define ITIMERS SYS_ITIMERS

static const int itimer_sig[ITIMERS] = {SIGALRM, SIGVTALRM, SIGPROF};

static uint64_t tv_ns(const struct timeval *tv)
{
	return (uint64_t)tv->tv_sec * 1000000000ULL + (uint64_t)tv->tv_usec * 1000ULL;
}

static struct timeval ns_tv(uint64_t ns)
{
	return (struct timeval){(time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL / 1000)};
}

static struct timespec ns_ts(uint64_t ns)
{
	return (struct timespec){(time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL)};
}

/* what is left of timer tm, ns */
static uint64_t left_of(const struct proc_timer *tm)
{
	uint64_t now = base_now_ns();
	return tm->armed && tm->at > now ? tm->at - now : tm->armed ? 1 : 0;
}

static void arm(struct proc_timer *tm, uint64_t value, uint64_t every)
{
	tm->armed = value != 0;
	tm->at = value ? base_now_ns() + value : 0;
	tm->every = value ? every : 0;
}

static long sys_getitimer(struct sys_state *st, const uint64_t a[6])
{
	if (a[0] >= ITIMERS)
		return -EINVAL;
	const struct proc_timer *tm = &st->pr.timers[a[0]];
	struct itimerval v = {ns_tv(tm->every), ns_tv(left_of(tm))};
	return sys_put(st, a[1], &v, sizeof(v));
}

static long sys_setitimer(struct sys_state *st, const uint64_t a[6])
{
	if (a[0] >= ITIMERS)
		return -EINVAL;
	struct proc_timer *tm = &st->pr.timers[a[0]];
	struct itimerval nv, old = {ns_tv(tm->every), ns_tv(left_of(tm))};
	memset(&nv, 0, sizeof(nv));
	if (a[1] && sys_get(st, &nv, a[1], sizeof(nv)))
		return -EFAULT;
	if (nv.it_value.tv_usec < 0 || nv.it_value.tv_usec >= 1000000 || nv.it_value.tv_sec < 0 ||
	    nv.it_interval.tv_usec < 0 || nv.it_interval.tv_usec >= 1000000 ||
	    nv.it_interval.tv_sec < 0)
		return -EINVAL;
	if (a[2] && sys_put(st, a[2], &old, sizeof(old)))
		return -EFAULT;
	tm->sig = itimer_sig[a[0]];
	tm->thread = 0;
	arm(tm, tv_ns(&nv.it_value), tv_ns(&nv.it_interval));
	return 0;
}

static long sys_alarm(struct sys_state *st, const uint64_t a[6])
{
	struct proc_timer *tm = &st->pr.timers[0];
	uint64_t left = left_of(tm);
	tm->sig = SIGALRM;
	tm->thread = 0;
	arm(tm, (a[0] & 0xffffffffULL) * 1000000000ULL, 0);
	return (long)((left + 999999999ULL) / 1000000000ULL);
}

/* now on timer tm's clock, ns. timer_create keeps the clock in `used`, as 1 + its id (so a timer
 * of a snapshot from before, used 1, reads CLOCK_REALTIME, as it always did); the CPU-time
 * clocks count the invocation's wall time, as clock_gettime answers them */
static uint64_t clock_now(const struct sys_state *st, const struct proc_timer *tm)
{
	struct timespec now;
	switch (tm->used - 1) {
	case CLOCK_MONOTONIC:
		clock_gettime(CLOCK_MONOTONIC, &now);
		break;
	case CLOCK_BOOTTIME:
		clock_gettime(CLOCK_BOOTTIME, &now);
		break;
	case CLOCK_PROCESS_CPUTIME_ID:
	case CLOCK_THREAD_CPUTIME_ID:
		return base_now_ns() - st->start_ns;
	default:
		clock_gettime(CLOCK_REALTIME, &now);
		break;
	}
	return (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec;
}

/* the POSIX timer with id, or NULL */
static struct proc_timer *posix_timer(struct sys_state *st, uint64_t id)
{
	if (id >= PROC_TIMERS - ITIMERS || !st->pr.timers[ITIMERS + id].used)
		return NULL;
	return &st->pr.timers[ITIMERS + id];
}

static long sys_timer_create(struct sys_state *st, const uint64_t a[6])
{
	if (a[0] != CLOCK_REALTIME && a[0] != CLOCK_MONOTONIC && a[0] != CLOCK_BOOTTIME &&
	    a[0] != CLOCK_PROCESS_CPUTIME_ID && a[0] != CLOCK_THREAD_CPUTIME_ID)
		return -EINVAL;
	struct sigevent ev;
	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_SIGNAL;
	ev.sigev_signo = SIGALRM;
	if (a[1] && sys_get(st, &ev, a[1], sizeof(ev)))
		return -EFAULT;
	int thread = 0;
	if (ev.sigev_notify == SIGEV_THREAD_ID) {
		if (!proc_find(&st->pr, ev._sigev_un._tid))
			return -EINVAL;
		thread = ev._sigev_un._tid;
	} else if (ev.sigev_notify != SIGEV_SIGNAL && ev.sigev_notify != SIGEV_NONE) {
		return -EINVAL;
	}
	if (ev.sigev_notify != SIGEV_NONE && (ev.sigev_signo <= 0 || ev.sigev_signo > 64))
		return -EINVAL;
	for (int id = 0; id < PROC_TIMERS - ITIMERS; id++) {
		struct proc_timer *tm = &st->pr.timers[ITIMERS + id];
		if (tm->used)
			continue;
		if (sys_put(st, a[2], &id, sizeof(id)))
			return -EFAULT;
		memset(tm, 0, sizeof(*tm));
		tm->used = 1 + (int)a[0]; /* its clock, for an absolute time (clock_now) */
		tm->sig = ev.sigev_notify == SIGEV_NONE ? 0 : ev.sigev_signo;
		tm->thread = thread;
		return 0;
	}
	return -EAGAIN;
}

static long sys_timer_settime(struct sys_state *st, const uint64_t a[6])
{
	struct proc_timer *tm = posix_timer(st, a[0]);
	struct itimerspec nv, old;
	if (!tm)
		return -EINVAL;
	if (sys_get(st, &nv, a[2], sizeof(nv)))
		return -EFAULT;
	if (nv.it_value.tv_nsec < 0 || nv.it_value.tv_nsec >= 1000000000L ||
	    nv.it_value.tv_sec < 0 || nv.it_interval.tv_nsec < 0 ||
	    nv.it_interval.tv_nsec >= 1000000000L || nv.it_interval.tv_sec < 0)
		return -EINVAL;
	old = (struct itimerspec){ns_ts(tm->every), ns_ts(left_of(tm))};
	if (a[3] && sys_put(st, a[3], &old, sizeof(old)))
		return -EFAULT;
	uint64_t value =
	    (uint64_t)nv.it_value.tv_sec * 1000000000ULL + (uint64_t)nv.it_value.tv_nsec;
	if (value && a[1] & TIMER_ABSTIME) { /* an absolute time on the timer's own clock */
		uint64_t n = clock_now(st, tm);
		value = value > n ? value - n : 1;
	}
	arm(tm, value,
	    (uint64_t)nv.it_interval.tv_sec * 1000000000ULL + (uint64_t)nv.it_interval.tv_nsec);
	return 0;
}

static long sys_timer_gettime(struct sys_state *st, const uint64_t a[6])
{
	struct proc_timer *tm = posix_timer(st, a[0]);
	if (!tm)
		return -EINVAL;
	struct itimerspec v = {ns_ts(tm->every), ns_ts(left_of(tm))};
	return sys_put(st, a[1], &v, sizeof(v));
}

static long sys_timer_getoverrun(struct sys_state *st, const uint64_t a[6])
{
	return posix_timer(st, a[0]) ? 0 : -EINVAL;
}

static long sys_timer_delete(struct sys_state *st, const uint64_t a[6])
{
	struct proc_timer *tm = posix_timer(st, a[0]);
	if (!tm)
		return -EINVAL;
	memset(tm, 0, sizeof(*tm));
	return 0;
}

const struct sys_entry sys_timer_table[] = {
    {SYS_getitimer, "getitimer", sys_getitimer, 0, NULL},
    {SYS_setitimer, "setitimer", sys_setitimer, 0, NULL},
    {SYS_alarm, "alarm", sys_alarm, 0, NULL},
    {SYS_timer_create, "timer_create", sys_timer_create, 0, NULL},
    {SYS_timer_settime, "timer_settime", sys_timer_settime, 0, NULL},
    {SYS_timer_gettime, "timer_gettime", sys_timer_gettime, 0, NULL},
    {SYS_timer_getoverrun, "timer_getoverrun", sys_timer_getoverrun, 0, NULL},
    {SYS_timer_delete, "timer_delete", sys_timer_delete, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};
