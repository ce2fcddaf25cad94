/* Snapshot capture, restore into a clean machine, and reset of a used one. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "snap/snap.h"

#define PAGE EMBER_PAGE_SIZE

typedef int (*next_fn)(struct vm *vm, uint64_t addr, uint64_t end, uint64_t *lo, uint64_t *hi);

static int each_run(next_fn next, struct vm *vm, uint64_t start, uint64_t end,
		    int (*fn)(void *ctx, uint64_t addr), void *ctx)
{
	uint64_t lo, hi;
	int rc;
	for (uint64_t a = start; a < end; a = hi) {
		if ((rc = next(vm, a, end, &lo, &hi)) <= 0)
			return rc;
		for (uint64_t p = lo; p < hi; p += PAGE)
			if ((rc = fn(ctx, p)))
				return rc;
	}
	return 0;
}

int snap_each_data(struct vm *vm, uint64_t start, uint64_t end, int (*fn)(void *ctx, uint64_t addr),
		   void *ctx)
{
	return each_run(vm_next_data, vm, start, end, fn, ctx);
}

int snap_each_used(struct vm *vm, uint64_t start, uint64_t end, int (*fn)(void *ctx, uint64_t addr),
		   void *ctx)
{
	return each_run(vm_next_used, vm, start, end, fn, ctx);
}

struct collect {
	struct snap *s;
	size_t cap;
	struct vm *vm;
};

/* room for one more page: the next page's bytes, or NULL (no memory) */
static uint8_t *next_slot(struct collect *c)
{
	struct snap *s = c->s;
	if (s->npages == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 256;
		uint64_t *p = realloc(s->pages, cap * sizeof(*p));
		if (!p)
			return NULL;
		s->pages = p;
		uint8_t *d = realloc(s->data, cap * PAGE);
		if (!d)
			return NULL;
		s->data = d;
		c->cap = cap;
	}
	return s->data + s->npages * PAGE;
}

static int collect_page(void *ctx, uint64_t addr)
{
	struct collect *c = ctx;
	uint8_t *slot = next_slot(c);
	if (!slot)
		return -ENOMEM;
	memcpy(slot, vm_guest(c->vm, addr, PAGE), PAGE);
	c->s->pages[c->s->npages++] = addr;
	return 0;
}

int snap_capture_memory(struct snap *s, struct vm *vm, const struct sys_state *st)
{
	memset(s, 0, sizeof(*s));
	struct collect c = {s, 0, vm};
	int rc = 0;
	for (size_t i = 0; i < st->nvma && !rc; i++)
		rc = snap_each_data(vm, st->vmas[i].start, st->vmas[i].end, collect_page, &c);
	if (rc || (rc = snap_seal(s)))
		snap_free(s);
	return rc;
}

/* a page that may differ from the last reset's content, copied without marking it touched */
static int collect_changed(struct collect *c, uint64_t addr)
{
	if (vm_unwritten(c->vm, addr))
		return 0;
	uint8_t *slot = next_slot(c);
	if (!slot)
		return -ENOMEM;
	if (vm_copy_from(c->vm, slot, addr, PAGE))
		return -EFAULT;
	c->s->pages[c->s->npages++] = addr;
	return 0;
}

int snap_capture_changed(struct snap *s, struct vm *vm, const struct sys_state *st)
{
	memset(s, 0, sizeof(*s));
	struct collect c = {s, 0, vm};
	int rc = 0;
	for (size_t i = 0; i < st->nvma && !rc; i++)
		for (uint64_t a = st->vmas[i].start; a < st->vmas[i].end && !rc; a += PAGE)
			rc = collect_changed(&c, a);
	if (rc || (rc = snap_seal(s)))
		snap_free(s);
	return rc;
}

int snap_capture(struct snap *s, struct vm *vm, const struct sys_state *st)
{
	memset(s, 0, sizeof(*s));
	int rc;
	if ((rc = vm_get_regs(vm, &s->regs)) || (rc = vm_get_fs_base(vm, &s->fs_base)) ||
	    (rc = vm_get_fpu(vm, s->fpu, &s->fpu_len)) || (rc = sys_save(st, &s->sys)))
		goto fail;
	if (st->rt->fpu_saved(st, &s->regs))
		s->fpu_len = 0; /* in guest memory (the runtime): nothing for the host to set */
	s->proc = st->proc;
	struct collect c = {s, 0, vm};
	for (size_t i = 0; i < st->nvma; i++)
		if ((rc = snap_each_data(vm, st->vmas[i].start, st->vmas[i].end, collect_page, &c)))
			goto fail;
	if ((rc = snap_seal(s)))
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
	snap_image_free(s);
	snap_data_free(s);
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

int snap_set_cpu(const struct snap *s, struct vm *vm)
{
	int rc;
	if ((rc = vm_set_regs(vm, &s->regs)) || (rc = vm_set_fs_base(vm, s->fs_base)) ||
	    (s->fpu_len && (rc = vm_set_fpu(vm, s->fpu, s->fpu_len))))
		return rc;
	return 0;
}

int snap_restore(const struct snap *s, struct vm *vm, struct sys_state *st, enum snap_share m)
{
	int rc, image = m == SNAP_SHARE_UPM && !snap_image_map(s, vm, 0);
	for (size_t i = 0; i < s->sys.nvma; i++) {
		const struct sys_vma *v = &s->sys.vmas[i];
		if ((!image && (rc = snap_put_memory(s, vm, v->start, v->end, m))) ||
		    (rc = vm_protect(vm, v->start, v->end - v->start, v->prot)))
			return rc;
	}
	if (m == SNAP_SHARE_KSM && (rc = vm_mergeable(vm)))
		return rc;
	if ((rc = sys_restore(st, &s->sys)) || (rc = snap_set_cpu(s, vm)))
		return rc;
	vm_forget_written(vm); /* the first reset puts back what the first run writes */
	return 0;
}
