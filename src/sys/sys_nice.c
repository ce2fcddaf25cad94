/* getpriority and setpriority: the nice value of the process, as Linux keeps one for an
 * unprivileged process. Who names the caller (0), its process or a thread (PRIO_PROCESS), its
 * group (PRIO_PGRP) or its user (PRIO_USER): no other process of the invocation is found.
 * Lowering the value takes RLIMIT_NICE (0 at the start: EACCES); a fork and an execve keep it,
 * every invocation starts at 0 (sys_snap.c). */
#include <errno.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "fd/fd.h"

#define NICE_MIN (-20)
#define NICE_MAX 19

/* who names this process under which: 0, -EINVAL (no such which) or -ESRCH */
static int names_us(struct sys_state *st, uint64_t which, uint64_t who)
{
	int w = (int)who;
	switch ((int)which) {
	case PRIO_PROCESS:
		return !w || w == st->pid || (w > 0 && proc_find(&st->pr, w)) ? 0 : -ESRCH;
	case PRIO_PGRP:
		return !w || w == st->pgid ? 0 : -ESRCH;
	case PRIO_USER:
		return !w || (uint32_t)w == SYS_GUEST_UID ? 0 : -ESRCH;
	default:
		return -EINVAL;
	}
}

/* the system call answers 20 - nice (1 to 40), so that no answer looks like an error */
static long sys_getpriority(struct sys_state *st, const uint64_t a[6])
{
	int rc = names_us(st, a[0], a[1]);
	return rc ? rc : 20 - st->nice;
}

static long sys_setpriority(struct sys_state *st, const uint64_t a[6])
{
	int rc = names_us(st, a[0], a[1]);
	if (rc)
		return rc;
	int nice = (int)a[2];
	nice = nice < NICE_MIN ? NICE_MIN : nice > NICE_MAX ? NICE_MAX : nice;
	/* Linux's can_nice: 20 - nice within RLIMIT_NICE, or CAP_SYS_NICE, which the guest has not
	 */
	if (nice < st->nice && (uint64_t)(20 - nice) > sys_rlimit_cur(st, RLIMIT_NICE))
		return -EACCES;
	st->nice = nice;
	return 0;
}

const struct sys_entry sys_nice_table[] = {
    {SYS_getpriority, "getpriority", sys_getpriority, 0, NULL},
    {SYS_setpriority, "setpriority", sys_setpriority, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};
