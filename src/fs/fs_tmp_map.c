/* /tmp files mapped: shared ones kept one with the file by copies; past its end, SIGBUS. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "sys/sys.h"
#include "fs/fs_tmp.h"

#define PAGE EMBER_PAGE_SIZE

/* A /tmp file's bytes live in host memory (sys_tmp.c) and guest memory is the virtine's own:
 * a shared mapping is a copy that the host makes agree with the file whenever the file is
 * reached through a call (read, write, truncate, a new mapping, msync, munmap). Every such call
 * goes through the host, so within one process nothing can tell the copy from the file's pages.
 * A fork child's copy is its own (the records are not inherited); a reset puts back the
 * snapshot's (sys_snap.c).
 * Every mapping of a file, private ones too, has its pages wholly past the file's end made to
 * fault (VM_PROT_FAULT in the memory map: SIGBUS, and EFAULT to a call), as the end moves. */

static struct sys_tmp_node *node_of(struct sys_state *st, uint32_t node)
{
	return &st->tmp->n[node];
}

/* the pages of s wholly past its file's end fault (SIGBUS, EFAULT to a call), the others not */
static void bus(struct sys_state *st, const struct sys_shm *s)
{
	uint64_t size = node_of(st, s->node)->size;
	uint64_t in = s->off < size ? (size - s->off + PAGE - 1) & ~(PAGE - 1) : 0;
	uint64_t edge = in < s->end - s->start ? s->start + in : s->end;
	sys_vma_flag(st, s->start, edge, VM_PROT_FAULT, 0);
	sys_vma_flag(st, edge, s->end, VM_PROT_FAULT, 1);
}

int sys_shm_add(struct sys_state *st, uint64_t start, uint64_t end, uint32_t node, uint64_t off,
		int priv)
{
	if (st->nshm == st->shm_cap) {
		size_t cap = st->shm_cap ? st->shm_cap * 2 : 8;
		struct sys_shm *s = realloc(st->shm, cap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		st->shm = s;
		st->shm_cap = cap;
	}
	st->shm[st->nshm++] = (struct sys_shm){start, end, off, node, priv};
	bus(st, &st->shm[st->nshm - 1]);
	return 0;
}

void sys_shm_bus_range(struct sys_state *st, uint64_t lo, uint64_t hi)
{
	for (size_t i = 0; i < st->nshm; i++)
		if (st->shm[i].start < hi && st->shm[i].end > lo)
			bus(st, &st->shm[i]);
}

int sys_shm_names(const struct sys_state *st, uint32_t node)
{
	for (size_t i = 0; i < st->nshm; i++)
		if (st->shm[i].node == node)
			return 1;
	return 0;
}

/* the file's bytes into every mapping of node; what lies past its end reads as zero */
static void refresh(struct sys_state *st, uint32_t node)
{
	const struct sys_tmp_node *n = node_of(st, node);
	for (size_t i = 0; i < st->nshm; i++) {
		const struct sys_shm *s = &st->shm[i];
		if (s->node != node || s->priv)
			continue;
		uint64_t len = s->end - s->start;
		uint64_t k = s->off < n->size ? n->size - s->off : 0;
		k = k < len ? k : len;
		uint8_t *dst = vm_guest(st->vm, s->start, len); /* mapped, so inside guest RAM */
		if (!dst)
			continue;
		if (k)
			memcpy(dst, n->data + s->off, k);
		uint64_t tail = (k + PAGE - 1) & ~(PAGE - 1);
		memset(dst + k, 0, tail - k);
		if (tail < len)
			vm_zero(st->vm, s->start + tail, len - tail);
	}
}

/* the bytes of [p, p + m) of mapping s differ from the file's */
static int differs(struct sys_state *st, const struct sys_shm *s, const uint8_t *file, uint64_t p,
		   uint64_t m)
{
	uint8_t page[PAGE];
	return !vm_copy_from(st->vm, page, s->start + p, m) && memcmp(page, file + s->off + p, m);
}

/* what the program wrote through the mappings of node into the file (up to its end); the
 * other mappings of it then see it too. Every mapping agreed with the file after the last
 * call, so a page that differs now was written there: all are found before any is copied, or
 * a mapping not written would seem to differ from the file another one just changed. */
void sys_shm_flush(struct sys_state *st, uint32_t node)
{
	struct {
		size_t i;
		uint64_t p, m;
	} *w = NULL;
	size_t nw = 0, cap = 0, many = 0;
	const struct sys_tmp_node *n = node_of(st, node);
	for (size_t i = 0; i < st->nshm; i++) {
		const struct sys_shm *s = &st->shm[i];
		if (s->node != node || s->priv)
			continue;
		many++;
		uint64_t len = s->end - s->start;
		uint64_t k = s->off < n->size ? n->size - s->off : 0;
		k = k < len ? k : len;
		for (uint64_t p = 0; p < k; p += PAGE) {
			uint64_t m = k - p < PAGE ? k - p : PAGE;
			if (!differs(st, s, n->data, p, m))
				continue;
			if (nw == cap) {
				cap = cap ? cap * 2 : 16;
				void *g = realloc(w, cap * sizeof(*w));
				if (!g)
					break; /* what is not written back now is at the next call
						*/
				w = g;
			}
			w[nw].i = i, w[nw].p = p, w[nw].m = m;
			nw++;
		}
	}
	for (size_t j = 0; j < nw; j++) {
		const struct sys_shm *s = &st->shm[w[j].i];
		vm_copy_from(st->vm, n->data + s->off + w[j].p, s->start + w[j].p, w[j].m);
	}
	free(w);
	if (nw && many > 1)
		refresh(st, node);
}

/* after a write or a new size: the shared mappings hold the file's bytes, and every mapping
 * faults past its end */
void sys_shm_refresh(struct sys_state *st, uint32_t node)
{
	if (!sys_shm_names(st, node))
		return;
	refresh(st, node);
	for (size_t i = 0; i < st->nshm; i++)
		if (st->shm[i].node == node)
			bus(st, &st->shm[i]);
}

/* the nodes of the mappings overlapping [lo, hi) flushed */
void sys_shm_flush_range(struct sys_state *st, uint64_t lo, uint64_t hi)
{
	for (size_t i = 0; i < st->nshm; i++)
		if (st->shm[i].start < hi && st->shm[i].end > lo)
			sys_shm_flush(st, st->shm[i].node);
}

void sys_shm_refresh_range(struct sys_state *st, uint64_t lo, uint64_t hi)
{
	for (size_t i = 0; i < st->nshm; i++)
		if (st->shm[i].start < hi && st->shm[i].end > lo)
			refresh(st, st->shm[i].node);
}

/* [lo, hi) no longer maps a file (munmap, a mapping over it): written back, then forgotten; a
 * file unlinked meanwhile goes with its last mapping */
void sys_shm_cut(struct sys_state *st, uint64_t lo, uint64_t hi)
{
	sys_shm_flush_range(st, lo, hi);
	for (size_t i = 0; i < st->nshm;) {
		struct sys_shm *s = &st->shm[i];
		if (s->start >= hi || s->end <= lo) {
			i++;
			continue;
		}
		if (s->start < lo && s->end > hi) { /* the middle goes: two remain */
			struct sys_shm right = {hi, s->end, s->off + (hi - s->start), s->node,
						s->priv};
			s->end = lo;
			if (sys_shm_add(st, right.start, right.end, right.node, right.off,
					right.priv))
				return; /* the right part stays a private copy */
			i++;
			continue;
		}
		if (s->start < lo) {
			s->end = lo;
		} else if (s->end > hi) {
			s->off += hi - s->start;
			s->start = hi;
		} else {
			uint32_t node = s->node;
			*s = st->shm[--st->nshm];
			if (!sys_shm_names(st, node))
				sys_tmp_release(st, node);
			continue;
		}
		i++;
	}
}

void sys_shm_free(struct sys_state *st)
{
	free(st->shm);
	st->shm = NULL;
	st->nshm = st->shm_cap = 0;
}

/* msync: Linux's checks; the mappings of /tmp files in the range written to their files */
static long sys_msync(struct sys_state *st, const uint64_t a[6])
{
	uint64_t addr = a[0], len = (a[1] + PAGE - 1) & ~(PAGE - 1);
	int flags = (int)a[2];
	if (addr % PAGE || (flags & ~(MS_ASYNC | MS_SYNC | MS_INVALIDATE)) ||
	    ((flags & MS_ASYNC) && (flags & MS_SYNC)))
		return -EINVAL;
	if (len < a[1] || addr + len < addr)
		return -ENOMEM;
	int hole = 0;
	for (uint64_t p = addr; p < addr + len; p += PAGE)
		if (!sys_vma_find(st, p)) {
			hole = 1;
			break;
		}
	sys_shm_flush_range(st, addr, addr + len);
	return hole ? -ENOMEM : 0;
}

const struct sys_entry sys_shm_table[] = {
    {SYS_msync, "msync", sys_msync, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};
