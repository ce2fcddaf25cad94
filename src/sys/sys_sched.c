/* The scheduler as a program asks about it: every thread SCHED_OTHER at priority 0, real-time
 * policies not an unprivileged user's to take; a pid names the process or one of its threads. */
#include <errno.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>

#include "sys/sys.h"

#define RR_SLICE_NS 100000000 /* SCHED_RR's slice Linux reports: 100 ms */

/* pid 0 (the caller), the process, or one of its threads */
int sys_sched_task(struct sys_state *st, uint64_t pid)
{
	int p = (int)pid;
	if (p < 0)
		return -EINVAL;
	return !p || p == st->pid || proc_find(&st->pr, p) ? 0 : -ESRCH;
}

static long sys_sched_get_priority_max(struct sys_state *st, const uint64_t a[6])
{
	(void)st;
	int p = (int)a[0];
	if (p == SCHED_FIFO || p == SCHED_RR)
		return 99;
	return p == SCHED_OTHER || p == SCHED_BATCH || p == SCHED_IDLE ? 0 : -EINVAL;
}

static long sys_sched_get_priority_min(struct sys_state *st, const uint64_t a[6])
{
	(void)st;
	int p = (int)a[0];
	if (p == SCHED_FIFO || p == SCHED_RR)
		return 1;
	return p == SCHED_OTHER || p == SCHED_BATCH || p == SCHED_IDLE ? 0 : -EINVAL;
}

static long sys_sched_getscheduler(struct sys_state *st, const uint64_t a[6])
{
	long rc = sys_sched_task(st, a[0]);
	return rc ? rc : SCHED_OTHER;
}

static long sys_sched_getparam(struct sys_state *st, const uint64_t a[6])
{
	const int prio = 0;
	long rc = sys_sched_task(st, a[0]);
	if (rc)
		return rc;
	return a[1] && !sys_put(st, a[1], &prio, sizeof(prio)) ? 0 : -EINVAL;
}

/* SCHED_OTHER at priority 0 is what it has; anything else needs a privilege */
static long sys_sched_setscheduler(struct sys_state *st, const uint64_t a[6])
{
	int prio;
	long rc = sys_sched_task(st, a[0]);
	if (rc)
		return rc;
	if (!a[2] || sys_get(st, &prio, a[2], sizeof(prio)))
		return -EINVAL;
	int p = (int)a[1] & ~SCHED_RESET_ON_FORK;
	if (p != SCHED_OTHER && p != SCHED_BATCH && p != SCHED_IDLE && p != SCHED_FIFO &&
	    p != SCHED_RR)
		return -EINVAL;
	if (p == SCHED_FIFO || p == SCHED_RR)
		return prio < 1 || prio > 99 ? -EINVAL : -EPERM;
	return prio ? -EINVAL : 0;
}

static long sys_sched_setparam(struct sys_state *st, const uint64_t a[6])
{
	int prio;
	long rc = sys_sched_task(st, a[0]);
	if (rc)
		return rc;
	if (!a[1] || sys_get(st, &prio, a[1], sizeof(prio)))
		return -EINVAL;
	return prio ? -EINVAL : 0;
}

static long sys_sched_rr_get_interval(struct sys_state *st, const uint64_t a[6])
{
	const struct timespec ts = {0, RR_SLICE_NS};
	long rc = sys_sched_task(st, a[0]);
	return rc ? rc : sys_put(st, a[1], &ts, sizeof(ts));
}

const struct sys_entry sys_sched_table[] = {
    {SYS_sched_get_priority_max, "sched_get_priority_max", sys_sched_get_priority_max, 0, NULL},
    {SYS_sched_get_priority_min, "sched_get_priority_min", sys_sched_get_priority_min, 0, NULL},
    {SYS_sched_getscheduler, "sched_getscheduler", sys_sched_getscheduler, 0, NULL},
    {SYS_sched_setscheduler, "sched_setscheduler", sys_sched_setscheduler, 0, NULL},
    {SYS_sched_getparam, "sched_getparam", sys_sched_getparam, 0, NULL},
    {SYS_sched_setparam, "sched_setparam", sys_sched_setparam, 0, NULL},
    {SYS_sched_rr_get_interval, "sched_rr_get_interval", sys_sched_rr_get_interval, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};
