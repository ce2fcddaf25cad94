/* Reservations beyond guest memory: PROT_NONE mappings too large for the guest's RAM, kept as
 * address ranges only (they hold nothing and cost nothing), from SYS_FAR_BASE up to 2^47. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sys/sys.h"

#define FAR_TOP (1ULL << 47) /* the user half of the address space, as on Linux */

int sys_far_is(uint64_t addr, uint64_t len)
{
	return addr >= SYS_FAR_BASE && len <= FAR_TOP - SYS_FAR_BASE && addr <= FAR_TOP - len;
}

/* room for one range more: 0, or -ENOMEM */
static int far_room(struct sys_state *st)
{
	if (st->nfar < st->far_cap)
		return 0;
	size_t cap = st->far_cap ? st->far_cap * 2 : 8;
	struct sys_vma *n = realloc(st->far, cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	st->far = n;
	st->far_cap = cap;
	return 0;
}

/* [lo, hi) no longer reserved: ranges cut where they overlap it */
static int far_cut(struct sys_state *st, uint64_t lo, uint64_t hi)
{
	for (size_t i = 0; i < st->nfar; i++) {
		struct sys_vma *v = &st->far[i];
		if (v->end <= lo || v->start >= hi)
			continue;
		if (v->start < lo && v->end > hi) { /* a hole in the middle: one range more */
			if (far_room(st))
				return -ENOMEM;
			v = &st->far[i];
			memmove(v + 1, v, (st->nfar - i) * sizeof(*v));
			st->nfar++;
			v[0].end = lo;
			v[1].start = hi;
			return 0;
		}
		if (v->start < lo) {
			v->end = lo;
		} else if (v->end > hi) {
			v->start = hi;
		} else {
			memmove(v, v + 1, (st->nfar - i - 1) * sizeof(*v));
			st->nfar--;
			i--;
		}
	}
	return 0;
}

/* a free range of len bytes: the first fit from SYS_FAR_BASE, 0 when none */
static uint64_t far_gap(const struct sys_state *st, uint64_t len)
{
	uint64_t at = SYS_FAR_BASE;
	for (size_t i = 0; i < st->nfar; i++) {
		if (st->far[i].start >= at && st->far[i].start - at >= len)
			break;
		if (st->far[i].end > at)
			at = st->far[i].end;
	}
	return sys_far_is(at, len) ? at : 0;
}

long sys_far_map(struct sys_state *st, uint64_t addr, uint64_t len)
{
	if (!addr && !(addr = far_gap(st, len)))
		return -ENOMEM;
	if (!sys_far_is(addr, len) || far_cut(st, addr, addr + len))
		return -ENOMEM;
	if (far_room(st))
		return -ENOMEM;
	size_t i = 0;
	while (i < st->nfar && st->far[i].start < addr)
		i++;
	memmove(&st->far[i + 1], &st->far[i], (st->nfar - i) * sizeof(*st->far));
	st->far[i] = (struct sys_vma){addr, addr + len, 0};
	st->nfar++;
	return (long)addr;
}

int sys_far_unmap(struct sys_state *st, uint64_t addr, uint64_t len)
{
	return far_cut(st, addr, addr + len);
}

int sys_far_taken(const struct sys_state *st, uint64_t addr, uint64_t len)
{
	for (size_t i = 0; i < st->nfar; i++)
		if (st->far[i].start < addr + len && st->far[i].end > addr)
			return 1;
	return 0;
}
