/* A snapshot's pages held in its domain's page store: identical pages of every function there once.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "mem/mem.h"

#define PAGE EMBER_PAGE_SIZE

/* a dense read-only view of the pages at offs: one mapping per run of consecutive offsets */
static uint8_t *view_of(int fd, const uint64_t *offs, size_t n)
{
	uint8_t *v =
	    mmap(NULL, n * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (v == MAP_FAILED)
		return NULL;
	for (size_t i = 0, k; i < n; i += k) {
		for (k = 1; i + k < n && offs[i + k] == offs[i] + k * PAGE; k++)
			;
		if (mmap(v + i * PAGE, k * PAGE, PROT_READ, MAP_SHARED | MAP_FIXED, fd,
			 (off_t)offs[i]) == MAP_FAILED) {
			munmap(v, n * PAGE);
			return NULL;
		}
	}
	return v;
}

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
	uint8_t *view = view_of(mem_store_fd(st), offs, s->npages);
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
