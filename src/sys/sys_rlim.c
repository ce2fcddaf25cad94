/* The memory limits a program may lower (RLIMIT_DATA, RLIMIT_AS) kept to where memory is mapped
 * and the break moves; the limits themselves are sys_rlimit.c's. */
#include <errno.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "fd/fd.h"

#define NO_LIMIT UINT64_MAX

/* a limit below the guest memory there is: one to keep to (0 too); else NO_LIMIT */
static uint64_t limit(const struct sys_state *st, unsigned r)
{
	uint64_t v = sys_rlimit_cur(st, r);
	return v < vm_user_top(st->vm) ? v : NO_LIMIT;
}

void sys_rlim_data_set(struct sys_state *st)
{
	/* the in-guest runtime grows the heap itself up to a top the host gave it: from now on
	 * it asks for every page past the break, and the host checks */
	struct ember_rt_ctl *c = st->proc.guest ? vm_guest(st->vm, EMBER_RT_CTL, sizeof(*c)) : NULL;
	uint64_t cur =
	    c ? (c->brk_cur + EMBER_PAGE_SIZE - 1) & ~(uint64_t)(EMBER_PAGE_SIZE - 1) : 0;
	if (c && limit(st, RLIMIT_DATA) != NO_LIMIT && c->brk_top > cur)
		c->brk_top = cur;
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
	uint64_t as = limit(st, RLIMIT_AS), data = limit(st, RLIMIT_DATA);
	if (as != NO_LIMIT && mapped(st, 0) + len > as)
		return -ENOMEM;
	if (data != NO_LIMIT && (prot & PROT_WRITE) && !shared && mapped(st, 1) + len > data)
		return -ENOMEM;
	return 0;
}

int sys_rlim_may_brk(const struct sys_state *st, uint64_t heap)
{
	uint64_t data = limit(st, RLIMIT_DATA);
	return data == NO_LIMIT || heap <= data;
}
