/* UPM in user space: a program's madvise(MADV_MERGEABLE) served at once by merging its pages into
 * the store. */
#include <errno.h>
#include <string.h>

#include "share/share.h"

#define PAGE EMBER_PAGE_SIZE

struct run {
	uint64_t addr, off;
	size_t n;
};

static int same(struct share_refs *r, struct vm *vm, const struct run *run, size_t k)
{
	return !memcmp(vm_guest(vm, run->addr + k * PAGE, PAGE),
		       share_store_page(r->st, run->off + k * PAGE), PAGE);
}

/* maps the run onto the store, each page compared once more first: a page that changed since it
 * was hashed is not merged (its reference goes back) and cuts the run. A mapped page stays held,
 * even when there is no room to record it (then it is held until the process ends). */
static int flush(struct share_refs *r, struct vm *vm, struct run *run, size_t *merged)
{
	int rc = 0;
	for (size_t i = 0; i < run->n;) {
		size_t k = i;
		while (k < run->n && same(r, vm, run, k))
			k++;
		int mapped = k > i && !rc &&
			     (rc = vm_map_cow(vm, run->addr + i * PAGE, (k - i) * PAGE,
					      share_store_fd(r->st), run->off + i * PAGE)) == 0;
		if (rc == -ENOSPC) /* no room for more mappings: the advice is not taken */
			rc = 0;
		for (size_t j = i; j < k; j++) {
			if (!mapped)
				share_store_release(r->st, run->off + j * PAGE);
			else if (share_refs_add(r, run->off + j * PAGE))
				rc = -ENOMEM;
		}
		if (mapped)
			*merged += k - i;
		if (k < run->n)
			share_store_release(r->st, run->off + k * PAGE);
		i = k + 1;
	}
	run->n = 0;
	return rc;
}

int share_merge(struct share_refs *r, struct vm *vm, uint64_t addr, uint64_t len)
{
	if (!r->st)
		return -EOPNOTSUPP;
	if (vm_backend_of(vm) != VM_BACKEND_KVM)
		return 0; /* the ptrace stub sees guest memory only through its memfd: advice taken
			   */
	uint64_t t0 = base_now_ns();
	struct run run = {0, 0, 0};
	size_t merged = 0;
	int rc = 0;
	for (uint64_t p = addr; !rc && p < addr + len; p += PAGE) {
		const uint8_t *g = vm_guest(vm, p, PAGE);
		uint64_t off;
		if (!g || (rc = share_store_intern(r->st, g, &off)))
			break;
		if (run.n && (p != run.addr + run.n * PAGE || off != run.off + run.n * PAGE) &&
		    (rc = flush(r, vm, &run, &merged))) {
			share_store_release(r->st, off);
			break;
		}
		if (!run.n)
			run = (struct run){p, off, 0};
		run.n++;
	}
	if (!rc && run.n)
		rc = flush(r, vm, &run, &merged);
	share_store_count_merge(r->st, merged, base_now_ns() - t0);
	return rc == -EOPNOTSUPP ? 0 : rc;
}
