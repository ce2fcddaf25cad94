/* A function's files in its sharing domain's page store: identical file pages of different
 * functions held, and mapped, once. */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "bundle/bnd.h"
#include "share/share.h"

#define PAGE EMBER_PAGE_SIZE

/* the pages of b's data that node n has to itself (a file of a page or more): [*lo, *hi) */
static int own_pages(const struct bnd *b, uint32_t n, uint64_t *lo, uint64_t *hi)
{
	const struct bnd_node *f = &b->nodes[n];
	if (!bnd_is(b, n, S_IFREG) || f->size < BND_PAGE)
		return 0;
	*lo = f->data_off / PAGE;
	*hi = bnd_page_up(f->data_off + f->size) / PAGE;
	return 1;
}

int share_bnd_share(struct share_store *st, struct bnd *b, struct share_refs *r)
{
	uint64_t pages = (b->mem_len - b->data_at) / PAGE, lo, hi;
	uint64_t *offs = malloc((pages ? pages : 1) * sizeof(*offs));
	if (!offs)
		return -ENOMEM;
	for (uint64_t i = 0; i < pages; i++)
		offs[i] = BND_NOT_SHARED;
	r->st = st;
	int rc = 0;
	for (uint32_t n = 0; !rc && n < b->nnodes; n++) {
		if (!own_pages(b, n, &lo, &hi) || hi > pages)
			continue;
		bnd_want(b, lo * PAGE, (hi - lo) * PAGE);
		for (uint64_t p = lo; !rc && p < hi; p++) {
			if (offs[p] != BND_NOT_SHARED)
				continue; /* two files at one place of the data */
			if (!(rc = share_store_intern(st, b->data + p * PAGE, &offs[p])) &&
			    (rc = share_refs_add(r, offs[p])))
				share_store_release(st, offs[p]);
		}
	}
	if (rc) { /* the bundle's own pages, as without a store */
		free(offs);
		share_refs_release(r);
		return rc;
	}
	b->shared_fd = share_store_fd(st);
	b->shared_pages = pages;
	__atomic_store_n(&b->shared_off, offs, __ATOMIC_RELEASE); /* a mapping may look now */
	/* every page was read to be compared: what machines map comes from the store now */
	bnd_let_go(b);
	return 0;
}

void share_bnd_unshare(struct bnd *b, struct share_refs *r)
{
	if (b) {
		free(b->shared_off);
		b->shared_off = NULL;
		b->shared_pages = 0;
	}
	share_refs_release(r);
}
