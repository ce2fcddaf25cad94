/* Which guest pages may hold data: the memfd's runs and copy-on-write runs, or on KVM the guest's
 * own accessed and dirty bits. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "vm/vm_impl.h"

/* The memfd's own map of its data, run by run (lseek), not mincore: mincore takes the host
 * process's mmap_lock, which every machine's creation and every munmap of any tenant take for
 * writing, so a reset would wait behind them; lseek takes only this machine's file's lock. It
 * also counts a page swapped out as data, which mincore does not. */
int vm_resident(struct vm *vm, uint64_t addr, uint64_t len, uint8_t *vec)
{
	if (addr % EMBER_PAGE_SIZE || len % EMBER_PAGE_SIZE || !vm_in_ram(vm, addr, len))
		return -EINVAL;
	memset(vec, 0, len / EMBER_PAGE_SIZE);
	uint64_t lo, hi, end = addr + len;
	for (uint64_t a = addr; a < end; a = hi) {
		int rc = vm_next_data(vm, a, end, &lo, &hi);
		if (rc <= 0)
			return rc;
		memset(vec + (lo - addr) / EMBER_PAGE_SIZE, 1, (hi - lo) / EMBER_PAGE_SIZE);
	}
	return 0;
}

typedef int (*part_fn)(struct vm *vm, uint64_t addr, uint64_t end, uint64_t *lo, uint64_t *hi);

/* the image's data at addr, a run of it: its end, or addr when addr is in a hole */
static uint64_t image_data_at(struct vm *vm, uint64_t addr, uint64_t end)
{
	off_t d = lseek(vm->image_fd, (off_t)addr, SEEK_DATA);
	if (d < 0 || (uint64_t)d != addr)
		return addr;
	off_t h = lseek(vm->image_fd, d, SEEK_HOLE);
	return h < 0 || (uint64_t)h > end ? end : (uint64_t)h;
}

static uint64_t used_at(struct vm *vm, uint64_t addr, uint64_t end)
{
	uint64_t lo, hi;
	return vm->ops->next_used(vm, addr, end, &lo, &hi) == 1 && lo == addr ? hi : addr;
}

/* Which pages of the image's run [addr, end) hold data: the image's own (the snapshot's pages,
 * the host's structures) and those used since it was mapped (the PTEs' accessed bits and the
 * host's marks), which may differ from it; a page neither names reads the image's hole, zero. */
static int image_next_data(struct vm *vm, uint64_t addr, uint64_t end, uint64_t *lo, uint64_t *hi)
{
	uint64_t ulo = end, uhi, dlo = end;
	if (!vm->ops->next_used || vm->ops->next_used(vm, addr, end, &ulo, &uhi) != 1)
		ulo = end;
	off_t d = lseek(vm->image_fd, (off_t)addr, SEEK_DATA);
	if (d >= 0 && (uint64_t)d < end)
		dlo = (uint64_t)d & ~(EMBER_PAGE_SIZE - 1);
	uint64_t a = ulo < dlo ? ulo : dlo, b = a;
	if (a >= end)
		return 0;
	for (;;) { /* the two grown into one run */
		uint64_t u = vm->ops->next_used ? used_at(vm, b, end) : b;
		uint64_t i = image_data_at(vm, b, end), n = u > i ? u : i;
		if (n == b)
			break;
		b = n;
	}
	*lo = a;
	*hi = (b + EMBER_PAGE_SIZE - 1) & ~(EMBER_PAGE_SIZE - 1);
	return 1;
}

/* the first run in [addr, end): part's (the memfd's, or the pages the PTEs show used) before the
 * first copy-on-write run, else that run (the two never overlap) */
static int next_run(struct vm *vm, uint64_t addr, uint64_t end, uint64_t *lo, uint64_t *hi,
		    part_fn part)
{
	if (addr % EMBER_PAGE_SIZE || end % EMBER_PAGE_SIZE || end < addr ||
	    !vm_in_ram(vm, addr, end - addr))
		return -EINVAL;
	uint64_t clo, chi;
	int cow = vm_next_cow(vm, addr, end, &clo, &chi);
	int rc = addr < (cow ? clo : end) ? part(vm, addr, cow ? clo : end, lo, hi) : 0;
	if (rc || !cow)
		return rc;
	/* the image spans guest memory: the pages the PTEs show used within it, not all of it
	 * (an unused page reads the image still: the snapshot's, or zero) */
	if (vm_image_piece(vm, clo)) {
		part_fn in = part == vm_memfd_next_data ? image_next_data : part;
		if ((rc = in(vm, clo, chi, lo, hi)) || chi >= end)
			return rc;
		return next_run(vm, chi, end, lo, hi, part);
	}
	*lo = clo;
	*hi = chi;
	return 1;
}

int vm_next_data(struct vm *vm, uint64_t addr, uint64_t end, uint64_t *lo, uint64_t *hi)
{
	return next_run(vm, addr, end, lo, hi, vm_memfd_next_data);
}

int vm_next_used(struct vm *vm, uint64_t addr, uint64_t end, uint64_t *lo, uint64_t *hi)
{
	if (!vm->ops->next_used || !vm->host_w)
		return vm_next_data(vm, addr, end, lo, hi);
	if (end > vm->user_top) /* the PTEs cover the program's memory, not the tables */
		return -EINVAL;
	return next_run(vm, addr, end, lo, hi, vm->ops->next_used);
}

int vm_unwritten(struct vm *vm, uint64_t addr)
{
	return vm->ops->unwritten && vm->host_w && addr % EMBER_PAGE_SIZE == 0 &&
	       addr < vm->user_top && vm->ops->unwritten(vm, addr);
}

int vm_memfd_next_data(struct vm *vm, uint64_t addr, uint64_t end, uint64_t *lo, uint64_t *hi)
{
	if (addr >= end)
		return 0;
	if (vm->memfd < 0) { /* given up for an image (vm_map_image): any page may hold data */
		*lo = addr;
		*hi = end;
		return 1;
	}
	off_t d = lseek(vm->memfd, (off_t)addr, SEEK_DATA);
	if (d < 0)
		return errno == ENXIO ? 0 : -errno;
	if ((uint64_t)d >= end)
		return 0;
	off_t h = lseek(vm->memfd, d, SEEK_HOLE);
	if (h < 0)
		return -errno;
	*lo = (uint64_t)d & ~(EMBER_PAGE_SIZE - 1);
	*hi =
	    (uint64_t)h < end ? ((uint64_t)h + EMBER_PAGE_SIZE - 1) & ~(EMBER_PAGE_SIZE - 1) : end;
	return 1;
}
