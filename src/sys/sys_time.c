/* Time syscalls: clocks read from the host, sleeps that never outlast the invocation's deadline. */
#include <errno.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>

#include "sys/sys.h"

/* the clocks a guest may read; CPU-time clocks count the invocation's wall time */
static int host_clock(uint64_t id, clockid_t *out)
{
	static const clockid_t ok[] = {CLOCK_REALTIME,	       CLOCK_MONOTONIC,
				       CLOCK_MONOTONIC_RAW,    CLOCK_REALTIME_COARSE,
				       CLOCK_MONOTONIC_COARSE, CLOCK_BOOTTIME};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		if ((clockid_t)id == ok[i]) {
			*out = ok[i];
			return 0;
		}
	}
	if (id == CLOCK_PROCESS_CPUTIME_ID || id == CLOCK_THREAD_CPUTIME_ID) {
		*out = CLOCK_PROCESS_CPUTIME_ID;
		return 0;
	}
	return -EINVAL;
}

static void cputime(const struct sys_state *st, struct timespec *ts)
{
	uint64_t ns = base_now_ns() - st->start_ns;
	ts->tv_sec = (time_t)(ns / 1000000000ULL);
	ts->tv_nsec = (long)(ns % 1000000000ULL);
}

static long sys_clock_gettime(struct sys_state *st, const uint64_t a[6])
{
	clockid_t c;
	if (host_clock(a[0], &c))
		return -EINVAL;
	struct timespec ts;
	if (c == CLOCK_PROCESS_CPUTIME_ID)
		cputime(st, &ts);
	else
		clock_gettime(c, &ts);
	return sys_put(st, a[1], &ts, sizeof(ts));
}

static long sys_clock_getres(struct sys_state *st, const uint64_t a[6])
{
	clockid_t c;
	if (host_clock(a[0], &c))
		return -EINVAL;
	if (!a[1])
		return 0;
	const struct timespec ts = {0, 1};
	return sys_put(st, a[1], &ts, sizeof(ts));
}

static long sys_gettimeofday(struct sys_state *st, const uint64_t a[6])
{
	struct timeval tv;
	const struct timezone tz = {0, 0};
	gettimeofday(&tv, NULL);
	if (a[0] && sys_put(st, a[0], &tv, sizeof(tv)))
		return -EFAULT;
	return a[1] ? sys_put(st, a[1], &tz, sizeof(tz)) : 0;
}

static long sys_time(struct sys_state *st, const uint64_t a[6])
{
	time_t now = time(NULL);
	if (a[0] && sys_put(st, a[0], &now, sizeof(now)))
		return -EFAULT;
	return (long)now;
}

/* Sleeps on the host; the deadline signal cuts it short and the run loop then ends the
 * invocation as timed out. */
static long do_sleep(struct sys_state *st, clockid_t c, int flags, uint64_t req_addr,
		     uint64_t rem_addr)
{
	struct timespec want, left = {0, 0};
	if (sys_get(st, &want, req_addr, sizeof(want)))
		return -EFAULT;
	if (want.tv_nsec < 0 || want.tv_nsec >= 1000000000L || want.tv_sec < 0)
		return -EINVAL;
	int rc = vm_sleep(st->vm, c, flags, &want, &left);
	if (rc == EINTR && rem_addr && !(flags & TIMER_ABSTIME))
		sys_put(st, rem_addr, &left, sizeof(left));
	return rc ? -rc : 0;
}

static long sys_nanosleep(struct sys_state *st, const uint64_t a[6])
{
	return do_sleep(st, CLOCK_MONOTONIC, 0, a[0], a[1]);
}

static long sys_clock_nanosleep(struct sys_state *st, const uint64_t a[6])
{
	clockid_t c;
	if (host_clock(a[0], &c) || c == CLOCK_PROCESS_CPUTIME_ID)
		return -EINVAL;
	return do_sleep(st, c, (int)a[1] & TIMER_ABSTIME, a[2], a[3]);
}

const struct sys_entry sys_time_table[] = {
    {SYS_clock_gettime, "clock_gettime", sys_clock_gettime, 0, NULL},
    {SYS_clock_getres, "clock_getres", sys_clock_getres, 0, NULL},
    {SYS_gettimeofday, "gettimeofday", sys_gettimeofday, 0, NULL},
    {SYS_time, "time", sys_time, 0, NULL},
    {SYS_nanosleep, "nanosleep", sys_nanosleep, 0, NULL},
    {SYS_clock_nanosleep, "clock_nanosleep", sys_clock_nanosleep, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};
