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
	uint64_t ns = vm_now_ns() - st->start_ns;
	ts->tv_sec = (time_t)(ns / 1000000000ULL);
	ts->tv_nsec = (long)(ns % 1000000000ULL);
}

static long sys_clock_gettime(struct sys_state *st, const uint64_t a[6])
{
	clockid_t c;
	if (host_clock(a[0], &c))
		return -EINVAL;
	struct timespec *ts = sys_user(st, a[1], sizeof(*ts), PROT_WRITE);
	if (!ts)
		return -EFAULT;
	if (c == CLOCK_PROCESS_CPUTIME_ID)
		cputime(st, ts);
	else
		clock_gettime(c, ts);
	return 0;
}

static long sys_clock_getres(struct sys_state *st, const uint64_t a[6])
{
	clockid_t c;
	if (host_clock(a[0], &c))
		return -EINVAL;
	if (!a[1])
		return 0;
	struct timespec *ts = sys_user(st, a[1], sizeof(*ts), PROT_WRITE);
	if (!ts)
		return -EFAULT;
	ts->tv_sec = 0;
	ts->tv_nsec = 1;
	return 0;
}

static long sys_gettimeofday(struct sys_state *st, const uint64_t a[6])
{
	if (a[0]) {
		struct timeval *tv = sys_user(st, a[0], sizeof(*tv), PROT_WRITE);
		if (!tv)
			return -EFAULT;
		gettimeofday(tv, NULL);
	}
	if (a[1]) {
		struct timezone *tz = sys_user(st, a[1], sizeof(*tz), PROT_WRITE);
		if (!tz)
			return -EFAULT;
		tz->tz_minuteswest = tz->tz_dsttime = 0;
	}
	return 0;
}

static long sys_time(struct sys_state *st, const uint64_t a[6])
{
	time_t now = time(NULL);
	if (a[0]) {
		time_t *t = sys_user(st, a[0], sizeof(*t), PROT_WRITE);
		if (!t)
			return -EFAULT;
		*t = now;
	}
	return (long)now;
}

/* Sleeps on the host; the deadline signal cuts it short and the run loop then ends the
 * invocation as timed out. */
static long do_sleep(struct sys_state *st, clockid_t c, int flags, uint64_t req_addr,
		     uint64_t rem_addr)
{
	const struct timespec *req = sys_user(st, req_addr, sizeof(*req), PROT_READ);
	if (!req)
		return -EFAULT;
	if (req->tv_nsec < 0 || req->tv_nsec >= 1000000000L || req->tv_sec < 0)
		return -EINVAL;
	struct timespec want = *req, left = {0, 0};
	int rc = clock_nanosleep(c, flags, &want, &left);
	if (rc == EINTR && rem_addr && !(flags & TIMER_ABSTIME)) {
		struct timespec *rem = sys_user(st, rem_addr, sizeof(*rem), PROT_WRITE);
		if (rem)
			*rem = left;
	}
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
    {SYS_clock_gettime, "clock_gettime", sys_clock_gettime, 0},
    {SYS_clock_getres, "clock_getres", sys_clock_getres, 0},
    {SYS_gettimeofday, "gettimeofday", sys_gettimeofday, 0},
    {SYS_time, "time", sys_time, 0},
    {SYS_nanosleep, "nanosleep", sys_nanosleep, 0},
    {SYS_clock_nanosleep, "clock_nanosleep", sys_clock_nanosleep, 0},
    {0, NULL, NULL, 0},
};
