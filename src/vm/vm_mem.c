/* Guest memory through the backend: permissions, zeroing and discards of ranges, and the one
 * checked accessor (vm_guest) with its copies. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "vm/vm_impl.h"

static int user_range_ok(const struct vm *vm, uint64_t addr, uint64_t len)
{
	return addr % EMBER_PAGE_SIZE == 0 && len % EMBER_PAGE_SIZE == 0 && addr >= EMBER_SYS_END &&
	       addr <= vm->user_top && len <= vm->user_top - addr;
}

/* page 0 (the sled) and the runtime's areas (its vCPUs' and its own) may be given to the program
 * too; the host's structures in between never */
static int protect_ok(const struct vm *vm, uint64_t addr, uint64_t len)
{
	if (user_range_ok(vm, addr, len))
		return 1;
	if (addr == 0 && len == EMBER_PAGE_SIZE)
		return 1;
	return addr % EMBER_PAGE_SIZE == 0 && len % EMBER_PAGE_SIZE == 0 && addr >= EMBER_RT_CPUS &&
	       addr <= EMBER_SYS_END && len <= EMBER_SYS_END - addr;
}

int vm_protect(struct vm *vm, uint64_t addr, uint64_t len, int prot)
{
	if (!protect_ok(vm, addr, len))
		return -EINVAL;
	if (len == 0)
		return 0;
	/* kept in the caller's books, never accessible (a file's pages past its end) */
	if (prot & VM_PROT_FAULT)
		prot = 0;
	return vm->ops->protect(vm, addr, len, prot);
}

int vm_reserve(struct vm *vm, uint64_t addr, uint64_t len)
{
	if (!protect_ok(vm, addr, len))
		return -EINVAL;
	return len && vm->ops->reserve ? vm->ops->reserve(vm, addr, len) : 0;
}

/* ranges up to this many pages are zeroed in place where they hold data: punching holes would
 * unmap the pages from the guest (a TLB shootdown on ptrace) only for it to fault them in again */
#define ZERO_IN_PLACE_PAGES 64

int vm_zero(struct vm *vm, uint64_t addr, uint64_t len)
{
	static const uint8_t zero[EMBER_PAGE_SIZE];
	uint8_t vec[ZERO_IN_PLACE_PAGES];
	if (!protect_ok(vm, addr, len))
		return -EINVAL;
	int rc = addr % EMBER_PAGE_SIZE || len % EMBER_PAGE_SIZE
		     ? 0
		     : vm_drop_files(vm, addr, addr + len); /* a file's pages: not copied to zero */
	if (rc)
		return rc;
	if (len > ZERO_IN_PLACE_PAGES * EMBER_PAGE_SIZE || addr % EMBER_PAGE_SIZE ||
	    len % EMBER_PAGE_SIZE || vm_resident(vm, addr, len, vec))
		return vm_discard(vm, addr, len);
	uint64_t n = len / EMBER_PAGE_SIZE;
	vm_mark_host(vm, addr, len);
	for (uint64_t i = 0; i < n; i++) {
		uint8_t *p = vm->mem + addr + i * EMBER_PAGE_SIZE;
		if (vec[i] & 1) {
			if (memcmp(p, zero, EMBER_PAGE_SIZE))
				memset(p, 0, EMBER_PAGE_SIZE);
			continue;
		}
		/* holds no data: a hole, punched again (nearly free) to keep one path */
		uint64_t j = i;
		while (j < n && !(vec[j] & 1))
			j++;
		int rc = vm_discard(vm, addr + i * EMBER_PAGE_SIZE, (j - i) * EMBER_PAGE_SIZE);
		if (rc)
			return rc;
		i = j - 1;
	}
	return 0;
}

/* a copy-on-write run reads as zero by being zeroed (a hole in the memfd would show the
 * snapshot's page again), page by page, leaving pages that are zero already shared; the rest
 * by a hole in the memfd */
static int discard_piece(struct vm *vm, uint64_t lo, uint64_t hi, int cow, void *ctx)
{
	static const uint8_t zero[EMBER_PAGE_SIZE];
	(void)ctx;
	if (!cow) {
		if (vm->memfd < 0) /* the page tables alone (vm_map_image), never given back */
			return -EINVAL;
		if (fallocate(vm->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)lo,
			      (off_t)(hi - lo)) < 0)
			return -errno;
		if (vm->ops->forget_used)
			vm->ops->forget_used(vm, lo, hi, 0);
		vm_mark_hole(vm, lo, hi);
		return 0;
	}
	if (vm_image_piece(vm, lo))
		return vm_image_discard(vm, lo, hi);
	for (uint64_t a = lo; a < hi; a += EMBER_PAGE_SIZE)
		if (memcmp(vm->mem + a, zero, EMBER_PAGE_SIZE))
			memset(vm->mem + a, 0, EMBER_PAGE_SIZE);
	return 0;
}

int vm_discard(struct vm *vm, uint64_t addr, uint64_t len)
{
	if (!protect_ok(vm, addr, len))
		return -EINVAL;
	if (!len)
		return 0;
	int rc = vm_drop_files(vm, addr, addr + len); /* zero without a copy of each page */
	if (rc)
		return rc;
	vm_mark_host(vm, addr, len);
	return vm_each_cow(vm, addr, addr + len, discard_piece, NULL);
}

void *vm_guest(struct vm *vm, uint64_t addr, uint64_t len)
{
	if (!vm_in_ram(vm, addr, len))
		return NULL;
	vm_mark_host(vm, addr, len);
	if (addr + len > vm->user_top && vm->ops->tables)
		vm->ops->tables(vm, addr, addr + len);
	return vm->mem + addr;
}

int vm_hypercall_at(struct vm *vm, uint64_t at)
{
	const uint8_t *insn = vm_guest(vm, at, EMBER_HC_LEN);
	return insn && insn[0] == EMBER_HC_OPCODE ? insn[1] : -1;
}

int vm_copy_to(struct vm *vm, uint64_t addr, const void *src, uint64_t len)
{
	void *p = vm_guest(vm, addr, len);
	if (!p)
		return -EFAULT;
	memcpy(p, src, len);
	return 0;
}

int vm_copy_from(struct vm *vm, void *dst, uint64_t addr, uint64_t len)
{
	if (!vm_in_ram(vm, addr, len)) /* a read: not recorded as touched */
		return -EFAULT;
	memcpy(dst, vm->mem + addr, len);
	return 0;
}

uint64_t vm_mem_size(const struct vm *vm)
{
	return vm->mem_size;
}

uint64_t vm_user_top(const struct vm *vm)
{
	return vm->user_top;
}
