/* Snapshot capture, restore into a clean machine, and reset of a used one. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "snap/snap.h"

#define PAGE EMBER_PAGE_SIZE

/* calls fn for each page of [start, end) that holds data, run by run of the memfd's data (a page
 * swapped out counts: it still holds data) */
static int each_resident(struct vm *vm, uint64_t start, uint64_t end,
			 int (*fn)(void *ctx, uint64_t addr), void *ctx)
{
	uint64_t lo, hi;
	int rc;
	for (uint64_t a = start; a < end; a = hi) {
		if ((rc = vm_next_data(vm, a, end, &lo, &hi)) <= 0)
			return rc;
		for (uint64_t p = lo; p < hi; p += PAGE)
			if ((rc = fn(ctx, p)))
				return rc;
	}
	return 0;
}

struct collect {
	struct snap *s;
	size_t cap;
	struct vm *vm;
};

static int collect_page(void *ctx, uint64_t addr)
{
	struct collect *c = ctx;
	struct snap *s = c->s;
	if (s->npages == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 256;
		uint64_t *p = realloc(s->pages, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		s->pages = p;
		uint8_t *d = realloc(s->data, cap * PAGE);
		if (!d)
			return -ENOMEM;
		s->data = d;
		c->cap = cap;
	}
	memcpy(s->data + s->npages * PAGE, vm_guest(c->vm, addr, PAGE), PAGE);
	s->pages[s->npages++] = addr;
	return 0;
}

/* stopped in the in-guest runtime's input hypercall, which saved the function's FPU state in
 * guest memory and restores it from there when resumed (src/guest/rt.c): the snapshot's memory
 * carries that state, and no restore or reset needs to set it */
static int fpu_in_guest(struct vm *vm, const struct sys_state *st, const struct vm_regs *r)
{
	const struct ember_rt_ctl *c = vm_guest(vm, EMBER_RT_CTL, sizeof(*c));
	return st->proc.guest && st->pending == EMBER_HC_INPUT && r->rip > EMBER_RT_BASE &&
	       r->rip <= EMBER_RT_BASE + EMBER_RT_CODE_SIZE && c && c->magic == EMBER_RT_MAGIC &&
	       c->fpu_saved == EMBER_RT_FPU_SAVED;
}

int snap_capture(struct snap *s, struct vm *vm, const struct sys_state *st)
{
	memset(s, 0, sizeof(*s));
	int rc;
	if ((rc = vm_get_regs(vm, &s->regs)) || (rc = vm_get_fs_base(vm, &s->fs_base)) ||
	    (rc = vm_get_fpu(vm, s->fpu, &s->fpu_len)) || (rc = sys_save(st, &s->sys)))
		goto fail;
	if (fpu_in_guest(vm, st, &s->regs))
		s->fpu_len = 0; /* nothing for the host to set */
	s->proc = st->proc;
	struct collect c = {s, 0, vm};
	for (size_t i = 0; i < st->nvma; i++)
		if ((rc = each_resident(vm, st->vmas[i].start, st->vmas[i].end, collect_page, &c)))
			goto fail;
	return 0;
fail:
	snap_free(s);
	return rc;
}

void snap_free(struct snap *s)
{
	sys_saved_free(&s->sys);
	free(s->hashes);
	free(s->pages);
	free(s->data);
	memset(s, 0, sizeof(*s));
}

size_t snap_page_index(const struct snap *s, uint64_t addr)
{
	size_t lo = 0, hi = s->npages;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (s->pages[mid] < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void copy_pages(const struct snap *s, struct vm *vm, uint64_t start, uint64_t end)
{
	for (size_t i = snap_page_index(s, start); i < s->npages && s->pages[i] < end; i++)
		memcpy(vm_guest(vm, s->pages[i], PAGE), s->data + i * PAGE, PAGE);
}

int snap_set_cpu(const struct snap *s, struct vm *vm)
{
	int rc;
	if ((rc = vm_set_regs(vm, &s->regs)) || (rc = vm_set_fs_base(vm, s->fs_base)) ||
	    (s->fpu_len && (rc = vm_set_fpu(vm, s->fpu, s->fpu_len))))
		return rc;
	return 0;
}

int snap_restore(const struct snap *s, struct vm *vm, struct sys_state *st)
{
	int rc;
	for (size_t i = 0; i < s->sys.nvma; i++) {
		const struct sys_vma *v = &s->sys.vmas[i];
		copy_pages(s, vm, v->start, v->end);
		if ((rc = vm_protect(vm, v->start, v->end - v->start, v->prot)))
			return rc;
	}
	if ((rc = sys_restore(st, &s->sys)))
		return rc;
	return snap_set_cpu(s, vm);
}

/* pages the snapshot does not have that one reset keeps, zeroed, instead of giving them back:
 * the next invocation most likely touches the same ones, and a page fault costs more than a
 * memset; a run that touched more gives the rest back */
#define KEEP_PAGES 256

struct scrub {
	const struct snap *s;
	struct vm *vm;
	size_t next;	/* snapshot page cursor, for pages met in ascending order */
	size_t dropped; /* pages given back or zeroed */
	size_t *keep;	/* pages that may still be kept, zeroed */
};

/* a resident page the snapshot does not have reads as zero again: zeroed while the budget lasts,
 * else given back */
static int drop_extra(void *ctx, uint64_t addr)
{
	static const uint8_t zero[PAGE];
	struct scrub *c = ctx;
	const struct snap *s = c->s;
	while (c->next < s->npages && s->pages[c->next] < addr)
		c->next++;
	if (c->next < s->npages && s->pages[c->next] == addr)
		return 0;
	uint8_t *g = vm_guest(c->vm, addr, PAGE);
	if (g && *c->keep) {
		(*c->keep)--;
		if (memcmp(g, zero, PAGE)) {
			memset(g, 0, PAGE);
			c->dropped++;
		}
		return 0;
	}
	c->dropped++;
	return vm_discard(c->vm, addr, PAGE);
}

/* [start, end) back to the snapshot: its pages copied in where they differ (also those the run
 * gave back with munmap or madvise), every other page dropped; *touched counts both */
static int scrub(const struct snap *s, struct vm *vm, uint64_t start, uint64_t end, size_t *touched,
		 size_t *keep)
{
	size_t first = snap_page_index(s, start);
	for (size_t i = first; i < s->npages && s->pages[i] < end; i++) {
		uint8_t *g = vm_guest(vm, s->pages[i], PAGE);
		if (memcmp(g, s->data + i * PAGE, PAGE)) {
			memcpy(g, s->data + i * PAGE, PAGE);
			(*touched)++;
		}
	}
	struct scrub c = {s, vm, first, 0, keep};
	int rc = each_resident(vm, start, end, drop_extra, &c);
	*touched += c.dropped;
	return rc;
}

/* the permissions of addr in a sorted map, 0 when unmapped; *next gets where that changes */
static int prot_at(const struct sys_vma *v, size_t n, uint64_t addr, uint64_t *next)
{
	for (size_t i = 0; i < n; i++) {
		if (v[i].end <= addr)
			continue;
		if (v[i].start > addr) {
			*next = v[i].start;
			return 0;
		}
		*next = v[i].end;
		return v[i].prot;
	}
	*next = UINT64_MAX;
	return 0;
}

/* One walk over both memory maps, interval by interval: permissions are changed only where
 * they differ from the snapshot's, and content is put back where the run could have changed it
 * (writable in the snapshot, or mapped differently since). */
int snap_reset(const struct snap *s, struct vm *vm, struct sys_state *st, size_t *touched)
{
	int rc;
	uint64_t a = 0;
	*touched = 0;
	size_t keep = KEEP_PAGES;
	while (a != UINT64_MAX) {
		uint64_t next_cur, next_snap;
		int cur = prot_at(st->vmas, st->nvma, a, &next_cur);
		int old = prot_at(s->sys.vmas, s->sys.nvma, a, &next_snap);
		uint64_t b = next_cur < next_snap ? next_cur : next_snap;
		if (cur != old && (rc = vm_protect(vm, a, b - a, old)))
			return rc;
		if ((cur != old || (old & PROT_WRITE)) && (rc = scrub(s, vm, a, b, touched, &keep)))
			return rc;
		a = b;
	}
	/* made writable and back during the run: written, perhaps, though read-only again */
	for (size_t i = 0; i < st->nwr; i++)
		if ((rc = scrub(s, vm, st->wr[i].start, st->wr[i].end, touched, &keep)))
			return rc;
	if ((rc = sys_restore(st, &s->sys)))
		return rc;
	return snap_set_cpu(s, vm);
}
