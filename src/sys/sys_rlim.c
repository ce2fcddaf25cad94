/* The memory limits a program may lower (RLIMIT_DATA, RLIMIT_AS), and their checks. */
#include <errno.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "sys/sys.h"

/* Both start at the guest memory there is (what prlimit has always said); a program may lower
 * them, and raise them again up to that, never past it: asking for more (RLIM_INFINITY) is
 * asking for that. Kept by fork and execve, back to the start at a reset. */

static int slot(uint64_t res)
{
	return res == RLIMIT_DATA ? 0 : res == RLIMIT_AS ? 1 : -1;
}

/* a limit as recorded: 0 for all of guest memory, else the limit + 1 (a limit may be 0) */
static uint64_t top(const struct sys_state *st, uint64_t v)
{
	return v ? v - 1 : vm_user_top(st->vm);
}

int sys_rlim_get(const struct sys_state *st, uint64_t res, struct rlimit *out)
{
	int i = slot(res);
	if (i < 0)
		return -EINVAL;
	out->rlim_cur = top(st, st->rlim[i].start);
	out->rlim_max = top(st, st->rlim[i].end);
	return 0;
}

long sys_rlim_set(struct sys_state *st, uint64_t res, const struct rlimit *want)
{
	int i = slot(res);
	if (i < 0)
		return -EPERM; /* the others cannot be changed here */
	if (want->rlim_cur > want->rlim_max)
		return -EINVAL;
	uint64_t t = vm_user_top(st->vm);
	st->rlim[i].start = want->rlim_cur < t ? want->rlim_cur + 1 : 0;
	st->rlim[i].end = want->rlim_max < t ? want->rlim_max + 1 : 0;
	/* the in-guest runtime grows the heap itself up to a top the host gave it: from now on
	 * it asks for every page past the break, and the host checks */
	struct ember_rt_ctl *c =
	    i == 0 && st->proc.guest ? vm_guest(st->vm, EMBER_RT_CTL, sizeof(*c)) : NULL;
	if (c && c->brk_top > ((c->brk_cur + EMBER_PAGE_SIZE - 1) & ~(EMBER_PAGE_SIZE - 1)))
		c->brk_top = (c->brk_cur + EMBER_PAGE_SIZE - 1) & ~(EMBER_PAGE_SIZE - 1);
	return 0;
}

/* the program's mappings' bytes (the runtime's not counted): all, or the writable ones */
static uint64_t mapped(const struct sys_state *st, int writable)
{
	uint64_t n = 0;
	for (size_t i = 0; i < st->nvma; i++)
		if (st->vmas[i].start >= EMBER_SYS_END &&
		    (!writable || (st->vmas[i].prot & PROT_WRITE)))
			n += st->vmas[i].end - st->vmas[i].start;
	for (size_t i = 0; !writable && i < st->nfar; i++)
		n += st->far[i].end - st->far[i].start;
	return n;
}

uint64_t sys_rlim_mapped(const struct sys_state *st)
{
	return mapped(st, 0);
}

int sys_rlim_may_map(const struct sys_state *st, uint64_t len, int prot, int shared)
{
	if (st->rlim[1].start && mapped(st, 0) + len > st->rlim[1].start - 1)
		return -ENOMEM;
	if (st->rlim[0].start && (prot & PROT_WRITE) && !shared &&
	    mapped(st, 1) + len > st->rlim[0].start - 1)
		return -ENOMEM;
	return 0;
}

int sys_rlim_may_brk(const struct sys_state *st, uint64_t heap)
{
	return !st->rlim[0].start || heap <= st->rlim[0].start - 1;
}
