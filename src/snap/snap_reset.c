/* Putting a used machine back into its snapshot's state: the pages it wrote, the permissions it
 * changed. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "snap/snap.h"

#define PAGE EMBER_PAGE_SIZE

/* pages the snapshot does not have that one reset keeps, zeroed, instead of giving them back:
 * the next invocation most likely touches the same ones, and a page fault costs more than a
 * memset; a run that touched more gives the rest back */
#define KEEP_PAGES 256

/* a write fault costs about this many page comparisons; fewer pages than LOG_MIN are always
 * compared */
#define LOG_RATIO 48
#define LOG_MIN	  256

struct scrub {
	const struct snap *s;
	struct vm *vm;
	size_t next;	/* snapshot page cursor, for pages met in ascending order */
	size_t dropped; /* pages given back or zeroed */
	size_t *keep;	/* pages that may still be kept, zeroed */
};

/* a page the snapshot does not have reads as zero again: zeroed while the budget lasts, else
 * given back; *dropped counts the pages that were not zero */
static int zero_extra(struct vm *vm, uint64_t addr, size_t *keep, size_t *dropped)
{
	static const uint8_t zero[PAGE];
	uint8_t *g = vm_guest(vm, addr, PAGE);
	if (g && *keep) {
		(*keep)--;
		if (memcmp(g, zero, PAGE)) {
			memset(g, 0, PAGE);
			(*dropped)++;
		}
		return 0;
	}
	(*dropped)++;
	return vm_discard(vm, addr, PAGE);
}

/* a resident page of a compared range that the snapshot does not have */
static int drop_extra(void *ctx, uint64_t addr)
{
	struct scrub *c = ctx;
	const struct snap *s = c->s;
	while (c->next < s->npages && s->pages[c->next] < addr)
		c->next++;
	if (c->next < s->npages && s->pages[c->next] == addr)
		return 0;
	return zero_extra(c->vm, addr, c->keep, &c->dropped);
}

/* [start, end) back to the snapshot: its pages copied in where they differ (also those the run
 * gave back with munmap or madvise), every other page dropped; *touched counts both */
static int scrub(const struct snap *s, struct vm *vm, uint64_t start, uint64_t end, size_t *touched,
		 size_t *keep, size_t *compared)
{
	size_t first = snap_page_index(s, start);
	for (size_t i = first; i < s->npages && s->pages[i] < end; i++) {
		if (vm_unwritten(vm, s->pages[i]))
			continue; /* read, never written: the snapshot's still */
		uint8_t *g = vm_guest(vm, s->pages[i], PAGE);
		(*compared)++;
		if (memcmp(g, s->data + i * PAGE, PAGE)) {
			memcpy(g, s->data + i * PAGE, PAGE);
			(*touched)++;
		}
	}
	struct scrub c = {s, vm, first, 0, keep};
	int rc = snap_each_used(vm, start, end, drop_extra, &c);
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

/* With the backend's record of written pages: each written page of the snapshot compared and
 * put back, each other written page of the program's memory (mapped now, or in the snapshot)
 * zeroed or given back. Pages KVM wrote in the host's own structures (the page tables' accessed
 * and dirty bits) are neither. */
static int put_back_written(const struct snap *s, struct vm *vm, struct sys_state *st,
			    const uint64_t *bits, size_t words, size_t *touched, size_t *keep)
{
	uint64_t next;
	int rc;
	for (size_t w = 0; w < words; w++) {
		for (uint64_t b = bits[w]; b; b &= b - 1) {
			uint64_t addr = (w * 64 + (uint64_t)__builtin_ctzll(b)) * PAGE;
			size_t i = snap_page_index(s, addr);
			if (i < s->npages && s->pages[i] == addr) {
				uint8_t *g = vm_guest(vm, addr, PAGE);
				if (g && memcmp(g, s->data + i * PAGE, PAGE)) {
					memcpy(g, s->data + i * PAGE, PAGE);
					(*touched)++;
				}
				continue;
			}
			if ((sys_vma_find(st, addr) ||
			     prot_at(s->sys.vmas, s->sys.nvma, addr, &next)) &&
			    (rc = zero_extra(vm, addr, keep, touched)))
				return rc;
		}
	}
	return 0;
}

/* One walk over both memory maps, interval by interval: permissions are changed only where
 * they differ from the snapshot's. Content: where the backend records written pages, those are
 * put back first; else it is compared where the run could have changed it (writable in the
 * snapshot, or mapped differently since). */
int snap_reset(const struct snap *s, struct vm *vm, struct sys_state *st, size_t *touched)
{
	int rc;
	uint64_t a = 0;
	*touched = 0;
	size_t keep = KEEP_PAGES, words, compared = 0;
	const uint64_t *bits;
	/* the files the run mapped go first: private zero memory in their place, written */
	if ((rc = vm_drop_files(vm, 0, UINT64_MAX)))
		return rc;
	int tracked = vm_take_written(vm, &bits, &words) == 0;
	if (tracked && (rc = put_back_written(s, vm, st, bits, words, touched, &keep)))
		return rc;
	while (a != UINT64_MAX) {
		uint64_t next_cur, next_snap;
		int cur = prot_at(st->vmas, st->nvma, a, &next_cur);
		int old = prot_at(s->sys.vmas, s->sys.nvma, a, &next_snap);
		uint64_t b = next_cur < next_snap ? next_cur : next_snap;
		if (cur != old && (rc = vm_protect(vm, a, b - a, old)))
			return rc;
		if (!tracked && (cur != old || (old & PROT_WRITE)) &&
		    (rc = scrub(s, vm, a, b, touched, &keep, &compared)))
			return rc;
		a = b;
	}
	/* made writable and back during the run: written, perhaps, though read-only again */
	for (size_t i = 0; !tracked && i < st->nwr; i++)
		if ((rc = scrub(s, vm, st->wr[i].start, st->wr[i].end, touched, &keep, &compared)))
			return rc;
	vm_written_done(vm); /* the pages put back were the host's writes, not the next run's */
	/* Comparing costs 0.25-0.75 us a snapshot page; recording writes costs the guest a
	 * write-protect fault per page it writes in a round, ~12 us under PVM (docs/memory.md),
	 * and the reset a fixed ~10 us. A machine whose comparison costs more than that records
	 * its writes from now on (it is clean at this point), and goes back to comparing when its
	 * runs write so much that the faults cost more. */
	if (!tracked && compared > LOG_RATIO * *touched + LOG_MIN)
		vm_log_writes(vm);
	else if (tracked && LOG_RATIO * *touched > 2 * (s->npages + LOG_MIN))
		vm_unlog_writes(vm);
	if ((rc = sys_restore(st, &s->sys)))
		return rc;
	return snap_set_cpu(s, vm);
}
