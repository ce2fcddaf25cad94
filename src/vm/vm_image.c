/* Guest memory as one copy-on-write mapping of a snapshot's image, and what reads zero in it. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vm/vm_impl.h"

#define PAGE EMBER_PAGE_SIZE

int vm_map_image(struct vm *vm, int fd, int keep_memfd)
{
	int old = vm->image_fd;
	vm->image_fd = fd;
	int rc = fd < 0 ? -EINVAL : vm_map_run(vm, 0, vm->user_top, fd, 0, VM_RUN_SNAP, 1);
	if (rc) {
		vm->image_fd = old;
		return rc;
	}
	/* the memfd holds the page tables alone now, above user_top, where nothing maps, punches
	 * or asks about its data again: its mapping keeps them, its descriptor may go (the
	 * machine holds the VM's and its vCPUs' alone) */
	if (vm->memfd >= 0 && !keep_memfd)
		close(vm->memfd);
	if (!keep_memfd)
		vm->memfd = -1;
	return 0;
}

int vm_image_piece(const struct vm *vm, uint64_t addr)
{
	size_t i = vm_cow_at(vm, addr);
	return i < vm->ncow && vm->cow[i].lo <= addr && vm->cow[i].image;
}

/* where the image has data, each page zeroed in place (not written when zero already); where it
 * has a hole, the private copies dropped: the hole reads zero, as a hole of the memfd would */
int vm_image_discard(struct vm *vm, uint64_t lo, uint64_t hi)
{
	static const uint8_t zero[PAGE];
	for (uint64_t a = lo; a < hi;) {
		off_t d = lseek(vm->image_fd, (off_t)a, SEEK_DATA);
		uint64_t data = d < 0 || (uint64_t)d > hi ? hi : (uint64_t)d;
		if (data > a) {
			if (madvise(vm->mem + a, data - a, MADV_DONTNEED) < 0)
				return -errno;
			if (vm->ops->forget_used)
				vm->ops->forget_used(vm, a, data, 0);
			vm_mark_hole(vm, a, data);
			a = data;
			continue;
		}
		off_t h = lseek(vm->image_fd, (off_t)a, SEEK_HOLE);
		uint64_t end = h < 0 || (uint64_t)h > hi ? hi : (uint64_t)h;
		for (; a < end; a += PAGE)
			if (memcmp(vm->mem + a, zero, PAGE))
				memset(vm->mem + a, 0, PAGE);
	}
	return 0;
}
