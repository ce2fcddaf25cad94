/* What a machine's guest memory holds: bytes shared with a snapshot's copy and its own, from the
 * host's page map. */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "vm/vm_impl.h"

#define PAGE EMBER_PAGE_SIZE

/* /proc/self/pagemap: bit 63 present, 62 swapped, 61 a file page (here: the snapshot's, shared) */
#define PM_PRESENT (1ULL << 63)
#define PM_SWAP	   (1ULL << 62)
#define PM_FILE	   (1ULL << 61)

static int count_run(int pm, const struct vm *vm, const struct vm_range *r, uint64_t *shared,
		     uint64_t *priv, int own)
{
	uint64_t e[512];
	for (uint64_t a = r->lo; a < r->hi;) {
		size_t n = (r->hi - a) / PAGE < 512 ? (r->hi - a) / PAGE : 512;
		off_t off = (off_t)((uintptr_t)(vm->mem + a) / PAGE * sizeof(e[0]));
		ssize_t got = pread(pm, e, n * sizeof(e[0]), off);
		if (got != (ssize_t)(n * sizeof(e[0])))
			return got < 0 ? -errno : -EIO;
		for (size_t i = 0; i < n; i++) {
			if (!own && (e[i] & PM_PRESENT) && (e[i] & PM_FILE))
				*shared += PAGE;
			else if (e[i] & (PM_PRESENT | PM_SWAP))
				*priv += PAGE;
		}
		a += n * PAGE;
	}
	return 0;
}

int vm_present(struct vm *vm, const uint64_t *addrs, size_t n, uint8_t *out)
{
	int pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (pm < 0)
		return -errno;
	int rc = 0;
	uint64_t e[64];
	/* consecutive addresses in one read: a cold start asks this of every page it did not
	 * read, most of them in runs */
	for (size_t i = 0, k = 0; !rc && i < n; i += k) {
		for (k = 1; i + k < n && k < 64 && addrs[i + k] == addrs[i] + k * PAGE &&
			    addrs[i + k] < vm->mem_size;
		     k++)
			;
		off_t off = (off_t)((uintptr_t)(vm->mem + addrs[i]) / PAGE * sizeof(e[0]));
		if (addrs[i] >= vm->mem_size)
			rc = -EINVAL;
		else if (pread(pm, e, k * sizeof(e[0]), off) != (ssize_t)(k * sizeof(e[0])))
			rc = -EIO;
		for (size_t j = 0; j < k; j++)
			out[i + j] = !rc && (e[j] & (PM_PRESENT | PM_SWAP)) != 0;
	}
	close(pm);
	return rc;
}

int vm_memory(struct vm *vm, uint64_t *shared, uint64_t *priv)
{
	*shared = *priv = 0;
	uint64_t lo, hi;
	int rc;
	for (uint64_t a = 0; vm->memfd >= 0 && a < vm->mem_size; a = hi) {
		if ((rc = vm_memfd_next_data(vm, a, vm->mem_size, &lo, &hi)) < 0)
			return rc;
		if (!rc)
			break;
		*priv += hi - lo;
	}
	if (!vm->ncow)
		return 0;
	int pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (pm < 0)
		return -errno;
	rc = 0;
	for (size_t i = 0; !rc && i < vm->ncow; i++)
		rc = count_run(pm, vm, &vm->cow[i], shared, priv, 0);
	/* without its memfd (vm_map_image): the page tables above user_top, its own */
	struct vm_range tables = {vm->user_top, vm->mem_size, 0, 0};
	if (!rc && vm->memfd < 0)
		rc = count_run(pm, vm, &tables, shared, priv, 1);
	close(pm);
	return rc;
}
