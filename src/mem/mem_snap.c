/* A snapshot's pages held in its domain's page store: identical pages of every function there once.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "mem/mem.h"

#define PAGE EMBER_PAGE_SIZE

int mem_snap_share(struct mem_store *st, struct snap *s, struct mem_refs *r)
{
	if (!s->npages || !s->data || s->store_fd)
		return 0;
	uint64_t *offs = malloc(s->npages * sizeof(*offs));
	if (!offs)
		return -ENOMEM;
	r->st = st;
	int rc = 0;
	for (size_t i = 0; i < s->npages; i++) {
		if ((rc = mem_store_intern(st, s->data + i * PAGE, &offs[i])))
			goto fail;
		if ((rc = mem_refs_add(r, offs[i]))) {
			mem_store_release(st, offs[i]);
			goto fail;
		}
	}
	uint8_t *view = snap_view(mem_store_fd(st), offs, s->npages);
	if (!view) {
		rc = -errno;
		goto fail;
	}
	snap_data_free(s); /* its own copy goes: the store holds it now */
	s->data = view;
	s->offs = offs;
	s->memfd = mem_store_fd(st);
	s->store_fd = s->sealed = 1;
	return 0;
fail:
	mem_refs_release(r);
	free(offs);
	return rc;
}
