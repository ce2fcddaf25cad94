/* Time syscalls: clocks read from the host, CPU time as the scheduler counts it, sleeps that never
 * outlast the invocation's deadline. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>

#include "sys/sys.h"

/* the clocks a guest may read from the host's */
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
	return -EINVAL;
}

/* A CPU-time clock's time so far (ns): the time its threads ran on a vCPU, what the scheduler
 * counts (src/proc/); 0, or -EINVAL when id is none. Besides CLOCK_PROCESS_CPUTIME_ID and
 * CLOCK_THREAD_CPUTIME_ID, Linux's encoded ids (clock_getcpuclockid, pthread_getcpuclockid):
 * ~pid << 3, 4 for a thread, the low two bits PROF, VIRT or SCHED, alike here. Another
 * process's clock is refused. */
static int cpu_clock(struct sys_state *st, uint64_t id, uint64_t *ns)
{
	int32_t c = (int32_t)id; /* a clockid_t, an int: the register's upper half is not it */
	if (c == CLOCK_PROCESS_CPUTIME_ID || c == CLOCK_THREAD_CPUTIME_ID) {
		*ns = c == CLOCK_THREAD_CPUTIME_ID ? sys_cur(st)->cpu_ns : proc_cpu_ns(&st->pr);
		return 0;
	}
	if (c >= 0 || (c & 3) == 3)
		return -EINVAL;
	int pid = (int)~(c >> 3);
	if (c & 4) {
		struct proc_thread *t = pid ? proc_find(&st->pr, pid) : sys_cur(st);
		if (!t)
			return -EINVAL;
		*ns = t->cpu_ns;
		return 0;
	}
	if (pid && pid != st->pid)
		return -EINVAL;
	*ns = proc_cpu_ns(&st->pr);
	return 0;
}

static struct timespec ts_of(uint64_t ns)
{
	return (struct timespec){(time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL)};
}

static long sys_clock_gettime(struct sys_state *st, const uint64_t a[6])
{
	clockid_t c;
	struct timespec ts;
	uint64_t ns;
	if (!cpu_clock(st, a[0], &ns))
		ts = ts_of(ns);
	else if (!host_clock(a[0], &c))
		clock_gettime(c, &ts);
	else
		return -EINVAL;
	return sys_put(st, a[1], &ts, sizeof(ts));
}

static long sys_clock_getres(struct sys_state *st, const uint64_t a[6])
{
	clockid_t c;
	uint64_t ns;
	if (cpu_clock(st, a[0], &ns) && host_clock(a[0], &c))
		return -EINVAL;
	if (!a[1])
		return 0;
	const struct timespec ts = {0, 1};
	return sys_put(st, a[1], &ts, sizeof(ts));
}

/* the wall clock by clock_gettime alone: where the host's vDSO cannot serve the time (a guest
 * under QEMU), gettimeofday and time are system calls the sandbox does not allow */
static struct timespec wall(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ts;
}

static long sys_gettimeofday(struct sys_state *st, const uint64_t a[6])
{
	const struct timespec now = wall();
	const struct timeval tv = {now.tv_sec, now.tv_nsec / 1000};
	const struct timezone tz = {0, 0};
	if (a[0] && sys_put(st, a[0], &tv, sizeof(tv)))
		return -EFAULT;
	return a[1] ? sys_put(st, a[1], &tz, sizeof(tz)) : 0;
}

static long sys_time(struct sys_state *st, const uint64_t a[6])
{
	time_t now = wall().tv_sec;
	if (a[0] && sys_put(st, a[0], &now, sizeof(now)))
		return -EFAULT;
	return (long)now;
}

/* A sleep is a wait with a deadline: other threads run meanwhile, a handled signal ends it with
 * EINTR and the time left (sys_interrupt), the invocation's deadline ends the invocation. */
static long do_sleep(struct sys_state *st, clockid_t c, int flags, uint64_t req_addr)
{
	struct proc_thread *t = sys_cur(st);
	if (sys_retrying(st))
		return t->expired ? 0 : sys_wait(st, 0, 0, t->wdeadline);
	struct timespec want;
	/* a clock the host's clock_nanosleep refuses is refused here too (a time in the past
	 * returns at once where it is taken) */
	const struct timespec past = {0, 0};
	int rc = clock_nanosleep(c, TIMER_ABSTIME, &past, NULL);
	if (rc)
		return -rc;
	if (sys_get(st, &want, req_addr, sizeof(want)))
		return -EFAULT;
	if (want.tv_nsec < 0 || want.tv_nsec >= 1000000000L || want.tv_sec < 0)
		return -EINVAL;
	uint64_t ns = (uint64_t)want.tv_sec > (UINT64_MAX - 999999999ULL) / 1000000000ULL
			  ? UINT64_MAX
			  : (uint64_t)want.tv_sec * 1000000000ULL + (uint64_t)want.tv_nsec;
	uint64_t deadline;
	if (flags & TIMER_ABSTIME) {
		struct timespec now;
		clock_gettime(c, &now);
		uint64_t n = (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec;
		if (ns <= n)
			return 0;
		deadline = sys_deadline_in(st, ns - n);
	} else {
		if (!ns)
			return 0;
		deadline = sys_deadline_in(st, ns);
	}
	/* no deadline (past 2^64 ns): a wait that only a signal or the invocation's end ends */
	return sys_wait(st, 0, 0, deadline);
}

static long sys_nanosleep(struct sys_state *st, const uint64_t a[6])
{
	return do_sleep(st, CLOCK_MONOTONIC, 0, a[0]);
}

static long sys_clock_nanosleep(struct sys_state *st, const uint64_t a[6])
{
	clockid_t c;
	if (host_clock(a[0], &c))
		return -EINVAL; /* a CPU-time clock too */
	return do_sleep(st, c, (int)a[1] & TIMER_ABSTIME, a[2]);
}

/* getrusage: the CPU time as user time, of the process, the calling thread, or the children it
 * waited for */
static long sys_getrusage(struct sys_state *st, const uint64_t a[6])
{
	struct rusage ru;
	memset(&ru, 0, sizeof(ru));
	int who = (int)a[0];
	if (who != RUSAGE_SELF && who != RUSAGE_THREAD && who != RUSAGE_CHILDREN)
		return -EINVAL;
	uint64_t ns = who == RUSAGE_SELF     ? proc_cpu_ns(&st->pr)
		      : who == RUSAGE_THREAD ? sys_cur(st)->cpu_ns
					     : st->children_cpu;
	ru.ru_utime.tv_sec = (time_t)(ns / 1000000000ULL);
	ru.ru_utime.tv_usec = (long)(ns % 1000000000ULL / 1000);
	return sys_put(st, a[1], &ru, sizeof(ru));
}

/* clock_settime and settimeofday: the clock is the host's, not an unprivileged user's to set */
static long sys_clock_settime(struct sys_state *st, const uint64_t a[6])
{
	clockid_t c;
	struct timespec ts;
	if (host_clock(a[0], &c) || c != CLOCK_REALTIME)
		return -EINVAL;
	if (sys_get(st, &ts, a[1], sizeof(ts)))
		return -EFAULT;
	return ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000L || ts.tv_sec < 0 ? -EINVAL : -EPERM;
}

static long sys_settimeofday(struct sys_state *st, const uint64_t a[6])
{
	(void)st, (void)a;
	return -EPERM;
}

const struct sys_entry sys_time_table[] = {
    {SYS_getrusage, "getrusage", sys_getrusage, 0, NULL},
    {SYS_clock_gettime, "clock_gettime", sys_clock_gettime, 0, NULL},
    {SYS_clock_getres, "clock_getres", sys_clock_getres, 0, NULL},
    {SYS_clock_settime, "clock_settime", sys_clock_settime, 0, NULL},
    {SYS_settimeofday, "settimeofday", sys_settimeofday, 0, NULL},
    {SYS_gettimeofday, "gettimeofday", sys_gettimeofday, 0, NULL},
    {SYS_time, "time", sys_time, 0, NULL},
    {SYS_nanosleep, "nanosleep", sys_nanosleep, 0, NULL},
    {SYS_clock_nanosleep, "clock_nanosleep", sys_clock_nanosleep, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};
