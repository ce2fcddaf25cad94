/* Resource limits: getrlimit, setrlimit and prlimit64 of the process itself. Ember's own limits
 * are what a process starts with (its stack, its memory, its descriptors: SYS_FDS); a program
 * may lower them, or raise one back up to its hard limit, as Linux lets a process without
 * CAP_SYS_RESOURCE. A lowered RLIMIT_NOFILE is kept to (sys_fd_lowest), RLIMIT_DATA and
 * RLIMIT_AS where memory is mapped (sys_rlim.c); the others are said back as set. */
#include <errno.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "fd/fd.h"

/* the limit of resource r as Ember sets it at the start */
static struct sys_rlim own(const struct sys_state *st, unsigned r)
{
	uint64_t v = RLIM_INFINITY;
	if (r == RLIMIT_STACK)
		v = st->proc.stack_size;
	else if (r == RLIMIT_NOFILE)
		v = SYS_FDS;
	else if (r == RLIMIT_NICE)
		v = 0; /* Linux's start: no nice value below 0 without CAP_SYS_NICE (sys_nice.c) */
	/* RLIMIT_AS and RLIMIT_DATA infinite, as Linux's: guest memory bounds them anyway */
	return (struct sys_rlim){v, v};
}

static struct sys_rlim limit_of(const struct sys_state *st, unsigned r)
{
	return st->rlim_set & (1u << r) ? st->rlim[r] : own(st, r);
}

uint64_t sys_rlimit_cur(const struct sys_state *st, unsigned r)
{
	return r < SYS_RLIMITS ? limit_of(st, r).cur : RLIM_INFINITY;
}

uint64_t sys_rlimit_nofile(const struct sys_state *st)
{
	uint64_t n = limit_of(st, RLIMIT_NOFILE).cur;
	return n < SYS_FDS ? n : SYS_FDS;
}

int sys_rlimit_valid(uint32_t set, const struct sys_rlim *r)
{
	if (set >> SYS_RLIMITS)
		return 0;
	for (unsigned i = 0; i < SYS_RLIMITS; i++)
		if ((set & (1u << i)) && r[i].cur > r[i].max)
			return 0;
	return 1;
}

/* the old limit of r into old (if not 0), then the new one from new (if not 0) */
static long rlimit(struct sys_state *st, uint64_t r, uint64_t new, uint64_t old)
{
	if (r >= SYS_RLIMITS)
		return -EINVAL;
	struct sys_rlim cur = limit_of(st, (unsigned)r), want;
	if (new &&sys_get(st, &want, new, sizeof(want)))
		return -EFAULT;
	if (new &&want.cur > want.max)
		return -EINVAL;
	if (new &&want.max > cur.max)
		return -EPERM; /* raising a hard limit takes CAP_SYS_RESOURCE */
	if (old && sys_put(st, old, &cur, sizeof(cur)))
		return -EFAULT;
	if (new) {
		st->rlim[r] = want;
		st->rlim_set |= 1u << r;
		if (r == RLIMIT_DATA)
			sys_rlim_data_set(st);
	}
	return 0;
}

static long sys_prlimit64(struct sys_state *st, const uint64_t a[6])
{
	if (a[0] != 0 && (int)a[0] != st->pid)
		return -ESRCH;
	return rlimit(st, a[1], a[2], a[3]);
}

static long sys_getrlimit(struct sys_state *st, const uint64_t a[6])
{
	return rlimit(st, a[0], 0, a[1]);
}

static long sys_setrlimit(struct sys_state *st, const uint64_t a[6])
{
	return rlimit(st, a[0], a[1], 0);
}

const struct sys_entry sys_rlimit_table[] = {
    {SYS_prlimit64, "prlimit64", sys_prlimit64, 0, NULL},
    {SYS_getrlimit, "getrlimit", sys_getrlimit, 0, NULL},
    {SYS_setrlimit, "setrlimit", sys_setrlimit, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};
