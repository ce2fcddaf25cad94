/* The guest's memory map: sorted, non-overlapping page ranges with their protections. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sys/mman.h>

#include "sys/sys.h"

static int reserve(struct sys_state *st, size_t n)
{
	if (st->nvma + n <= st->vma_cap)
		return 0;
	size_t cap = st->vma_cap ? st->vma_cap * 2 : 32;
	while (cap < st->nvma + n)
		cap *= 2;
	struct sys_vma *v = realloc(st->vmas, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	st->vmas = v;
	st->vma_cap = cap;
	return 0;
}

/* index of the first vma whose end is above addr */
static size_t first_above(const struct sys_state *st, uint64_t addr)
{
	size_t lo = 0, hi = st->nvma;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (st->vmas[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct sys_vma *sys_vma_find(const struct sys_state *st, uint64_t addr)
{
	size_t i = first_above(st, addr);
	return i < st->nvma && st->vmas[i].start <= addr ? &st->vmas[i] : NULL;
}

/* Removes [start, end) from the map, splitting the ranges it cuts. */
int sys_vma_unmap(struct sys_state *st, uint64_t start, uint64_t end)
{
	if (reserve(st, 1))
		return -ENOMEM;
	sys_fs_rt_unmapped(st, start, end); /* a file's window there no longer is one */
	size_t i = first_above(st, start);
	while (i < st->nvma && st->vmas[i].start < end) {
		struct sys_vma *v = &st->vmas[i];
		if (v->start < start && v->end > end) { /* split in two */
			memmove(v + 2, v + 1, (st->nvma - i - 1) * sizeof(*v));
			v[1] = (struct sys_vma){end, v->end, v->prot};
			v->end = start;
			st->nvma++;
			return 0;
		}
		if (v->start < start) {
			v->end = start;
			i++;
		} else if (v->end > end) {
			v->start = end;
			i++;
		} else {
			memmove(v, v + 1, (st->nvma - i - 1) * sizeof(*v));
			st->nvma--;
		}
	}
	return 0;
}

static void merge_around(struct sys_state *st, size_t i)
{
	if (i + 1 < st->nvma && st->vmas[i].end == st->vmas[i + 1].start &&
	    st->vmas[i].prot == st->vmas[i + 1].prot) {
		st->vmas[i].end = st->vmas[i + 1].end;
		memmove(&st->vmas[i + 1], &st->vmas[i + 2],
			(st->nvma - i - 2) * sizeof(st->vmas[0]));
		st->nvma--;
	}
	if (i > 0 && st->vmas[i - 1].end == st->vmas[i].start &&
	    st->vmas[i - 1].prot == st->vmas[i].prot) {
		st->vmas[i - 1].end = st->vmas[i].end;
		memmove(&st->vmas[i], &st->vmas[i + 1], (st->nvma - i - 1) * sizeof(st->vmas[0]));
		st->nvma--;
	}
}

/* Maps [start, end) with prot, replacing whatever was there. */
int sys_vma_map(struct sys_state *st, uint64_t start, uint64_t end, int prot)
{
	if (sys_vma_unmap(st, start, end) || reserve(st, 1))
		return -ENOMEM;
	size_t i = first_above(st, start);
	memmove(&st->vmas[i + 1], &st->vmas[i], (st->nvma - i) * sizeof(st->vmas[0]));
	st->vmas[i] = (struct sys_vma){start, end, prot};
	st->nvma++;
	merge_around(st, i);
	return 0;
}

/* Linux's mprotect: ENOMEM unless the whole range is mapped. */
int sys_vma_protect(struct sys_state *st, uint64_t start, uint64_t end, int prot)
{
	uint64_t a = start;
	for (size_t i = first_above(st, start); i < st->nvma && a < end; i++) {
		if (st->vmas[i].start > a)
			return -ENOMEM;
		a = st->vmas[i].end;
	}
	if (a < end)
		return -ENOMEM;
	return sys_vma_map(st, start, end, prot);
}

/* bit set (on) or cleared in the protections of what is mapped in [start, end), the rest of
 * them kept, the machine told */
int sys_vma_flag(struct sys_state *st, uint64_t start, uint64_t end, int bit, int on)
{
	for (uint64_t a = start; a < end;) {
		size_t i = first_above(st, a);
		if (i >= st->nvma || st->vmas[i].start >= end)
			return 0;
		const struct sys_vma *v = &st->vmas[i];
		uint64_t lo = v->start > a ? v->start : a, hi = v->end < end ? v->end : end;
		int prot = on ? v->prot | bit : v->prot & ~bit;
		if (prot != v->prot &&
		    ((prot && vm_reserve(st->vm, lo, hi - lo)) || sys_vma_map(st, lo, hi, prot) ||
		     vm_protect(st->vm, lo, hi - lo, prot)))
			return -ENOMEM;
		a = hi;
	}
	return 0;
}

int sys_vma_free_range(const struct sys_state *st, uint64_t start, uint64_t end)
{
	size_t i = first_above(st, start);
	return i >= st->nvma || st->vmas[i].start >= end;
}

/* The highest free range of len bytes in the mmap area, above the heap; 0 if none. */
uint64_t sys_vma_find_gap(const struct sys_state *st, uint64_t len)
{
	/* leave the heap a page to grow into */
	uint64_t floor = (st->brk_cur + 2 * EMBER_PAGE_SIZE - 1) & ~(EMBER_PAGE_SIZE - 1);
	uint64_t top = st->proc.mmap_hi;
	size_t i = first_above(st, top);
	if (i < st->nvma && st->vmas[i].start < top)
		top = st->vmas[i].start;
	while (i > 0) {
		const struct sys_vma *v = &st->vmas[--i];
		uint64_t lo = v->end > floor ? v->end : floor;
		if (top >= lo && top - lo >= len)
			return top - len;
		top = v->start;
		if (top < floor)
			return 0;
	}
	return top >= floor && top - floor >= len ? top - len : 0;
}

void sys_note_writable(struct sys_state *st, uint64_t start, uint64_t end)
{
	const size_t cap = sizeof(st->wr) / sizeof(st->wr[0]);
	for (size_t i = 0; i < st->nwr; i++) {
		struct sys_vma *w = &st->wr[i];
		if (start <= w->end && end >= w->start) { /* overlapping or adjacent: widen */
			w->start = start < w->start ? start : w->start;
			w->end = end > w->end ? end : w->end;
			return;
		}
	}
	if (st->nwr == cap) { /* full: fold everything into one range, still covering all */
		for (size_t i = 1; i < cap; i++) {
			st->wr[0].start =
			    st->wr[i].start < st->wr[0].start ? st->wr[i].start : st->wr[0].start;
			st->wr[0].end =
			    st->wr[i].end > st->wr[0].end ? st->wr[i].end : st->wr[0].end;
		}
		st->nwr = 1;
		sys_note_writable(st, start, end);
		return;
	}
	st->wr[st->nwr++] = (struct sys_vma){start, end, PROT_WRITE};
}
