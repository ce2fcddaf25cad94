/* A snapshot's pages held in its domain's page store: identical pages of every function there once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "share/share.h"

#define PAGE EMBER_PAGE_SIZE

/* The store's copy cuts the snapshot's runs (consecutive pages of the guest that are consecutive
 * in the file) wherever a page was found already or took a freed slot, and every run is a host
 * mapping in each virtine: a language runtime's heap of 24,048 pages (Node.js) is 44 runs in its
 * own copy and 627 in the store's, which at 64 virtines is more mappings than the kernel allows.
 * Past twice its own runs (and a few), the snapshot keeps its own copy: the function's virtines
 * still share it, only other functions of the domain do not. Told by looking pages up, before
 * anything is added (pages added and given back would leave the store's free slots reversed),
 * new pages counted as if they went in one after the other. */
#define NEW UINT64_MAX

static int scattered(struct share_store *st, const struct snap *s)
{
	size_t own = 1, store = 1;
	uint64_t prev = NEW, off;
	for (size_t i = 0; i < s->npages; i++) {
		off = share_store_has(st, s->data + i * PAGE, &off) ? NEW : off;
		int next = i && s->pages[i] == s->pages[i - 1] + PAGE;
		own += i && !next;
		store += i && !(next && (off == NEW ? prev == NEW : prev == off - PAGE));
		prev = off;
	}
	return store > 2 * own + 16;
}

/* A machine maps the snapshot's image with one mapping (snap_image.c), which holds the
 * function's pages once for its virtines but not for other functions: a run of at least
 * OVERLAY_MIN pages that others hold in the store too (a table merged by madvise, the same
 * runtime's pages) is mapped from the store over it instead, at the price of a mapping or two
 * per virtine. Without memory for the marks, none is. */
#define OVERLAY_MIN 16

static void mark_overlay(struct share_store *st, struct snap *s, const uint64_t *offs)
{
	if (!(s->overlay = calloc(s->npages, 1)))
		return;
	for (size_t i = 0, n; i < s->npages; i += n) {
		for (n = 0; i + n < s->npages && share_store_refs(st, offs[i + n]) > 1 &&
			    (!n || (s->pages[i + n] == s->pages[i] + n * PAGE &&
				    offs[i + n] == offs[i] + n * PAGE));
		     n++)
			;
		if (n >= OVERLAY_MIN)
			memset(s->overlay + i, 1, n);
		n += !n;
	}
}

int share_snap_share(struct share_store *st, struct snap *s, struct share_refs *r)
{
	if (!s->npages || !s->data || s->store_fd || s->own_copy)
		return 0;
	if (scattered(st, s)) { /* its own sealed copy, shared by its virtines all the same */
		s->own_copy = 1;
		return 0;
	}
	uint64_t *offs = malloc(s->npages * sizeof(*offs));
	if (!offs)
		return -ENOMEM;
	r->st = st;
	int rc = 0;
	for (size_t i = 0; i < s->npages; i++) {
		if ((rc = share_store_intern(st, s->data + i * PAGE, &offs[i])))
			goto fail;
		if ((rc = share_refs_add(r, offs[i]))) {
			share_store_release(st, offs[i]);
			goto fail;
		}
	}
	mark_overlay(st, s, offs);
	uint8_t *view = snap_view(share_store_fd(st), offs, s->npages);
	if (!view) {
		rc = -errno;
		goto fail;
	}
	snap_data_free(s); /* its own copy goes: the store holds it now */
	s->data = view;
	s->offs = offs;
	s->memfd = share_store_fd(st);
	s->store_fd = s->sealed = 1;
	return 0;
fail:
	share_refs_release(r);
	free(offs);
	return rc;
}
