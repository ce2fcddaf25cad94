/* The KVM backend's long-mode structures, checked by walking them as the CPU would. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <cmocka.h>

#include "vm/vm_impl.h"
#include "vm/vm_x86.h"

#define MEM (64ULL << 20)

static struct vm *fake_vm(uint64_t size)
{
	struct vm *vm = calloc(1, sizeof(*vm));
	vm->mem_size = size;
	vm->user_top = size - vm_x86_pt_bytes(size);
	vm->mem = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	assert_true(vm->mem != MAP_FAILED);
	vm_x86_build(vm);
	return vm;
}

static void free_vm(struct vm *vm)
{
	munmap(vm->mem, vm->mem_size);
	free(vm);
}

/* a 4-level walk: returns the final PTE (0 if not present) and the AND of U and W bits */
static uint64_t walk(const struct vm *vm, uint64_t va, int *user, int *write, int *nx)
{
	uint64_t table = X86_PML4, e = 0;
	*user = *write = 1;
	*nx = 0;
	for (int level = 3; level >= 0; level--) {
		uint64_t idx = (va >> (12 + 9 * level)) & 511;
		assert_true(table + idx * 8 + 8 <= vm->mem_size);
		memcpy(&e, vm->mem + table + idx * 8, 8);
		if (!(e & X86_PTE_P))
			return 0;
		*user &= !!(e & X86_PTE_U);
		*write &= !!(e & X86_PTE_W);
		*nx |= !!(e & X86_PTE_NX);
		table = e & 0x000ffffffffff000ULL;
	}
	return e;
}

static void identity_and_permissions(void **state)
{
	(void)state;
	struct vm *vm = fake_vm(MEM);
	int u, w, nx;
	/* nothing of the program's range is mapped before vm_protect */
	assert_int_equal(walk(vm, 0x400000, &u, &w, &nx), 0);
	/* page 0 is absent; the rest of the first 2 MiB is supervisor-only (GDT, TSS, tables) */
	assert_int_equal(walk(vm, 0, &u, &w, &nx), 0);
	uint64_t e = walk(vm, X86_GDT, &u, &w, &nx);
	assert_int_equal(e & ~0xfffULL & ~X86_PTE_NX, X86_GDT);
	assert_false(u);
	int reduced = 0;
	vm_x86_protect(vm, 0x400000, 0x3000, PROT_READ | PROT_EXEC, &reduced);
	vm_x86_protect(vm, 0x403000, 0x1000, PROT_READ | PROT_WRITE, &reduced);
	assert_false(reduced);
	e = walk(vm, 0x401234, &u, &w, &nx);
	assert_int_equal(e & 0x000ffffffffff000ULL, 0x401000); /* identity */
	assert_true(u);
	assert_false(w);
	assert_false(nx);
	e = walk(vm, 0x403000, &u, &w, &nx);
	assert_true(u && w && nx);
	/* taking a permission away asks for a TLB flush */
	vm_x86_protect(vm, 0x403000, 0x1000, PROT_READ, &reduced);
	assert_true(reduced);
	reduced = 0;
	vm_x86_protect(vm, 0x403000, 0x1000, 0, &reduced);
	assert_true(reduced);
	assert_int_equal(walk(vm, 0x403000, &u, &w, &nx), 0);
	/* the last user page maps; the page tables above user_top are never user pages */
	vm_x86_protect(vm, vm->user_top - 4096, 4096, PROT_READ | PROT_WRITE, &reduced);
	assert_int_not_equal(walk(vm, vm->user_top - 4096, &u, &w, &nx), 0);
	assert_int_equal(walk(vm, vm->user_top, &u, &w, &nx), 0);
	free_vm(vm);
}

static void large_memory(void **state)
{
	(void)state;
	struct vm *vm = fake_vm(3ULL << 30); /* three page directories */
	int u, w, nx, reduced = 0;
	uint64_t a = (2ULL << 30) + 0x12345000;
	vm_x86_protect(vm, a, 4096, PROT_READ | PROT_WRITE, &reduced);
	assert_int_equal(walk(vm, a, &u, &w, &nx) & 0x000ffffffffff000ULL, a);
	assert_true(u && w);
	free_vm(vm);
}

static void descriptors(void **state)
{
	(void)state;
	struct vm *vm = fake_vm(MEM);
	const uint64_t *gdt = (const uint64_t *)(vm->mem + X86_GDT);
	uint64_t ucode = gdt[X86_SEL_UCODE >> 3], udata = gdt[X86_SEL_UDATA >> 3];
	assert_int_equal((ucode >> 45) & 3, 3); /* DPL 3 */
	assert_true(ucode & X86_SEG_L);		/* 64-bit code */
	assert_true(ucode & X86_SEG_P);
	assert_int_equal((udata >> 45) & 3, 3);
	assert_int_equal((udata >> 40) & 0xf, 3); /* read/write data */
	uint64_t tss = gdt[X86_SEL_TSS >> 3];
	uint64_t base = ((tss >> 16) & 0xffffff) | (((tss >> 56) & 0xff) << 24) |
			(gdt[(X86_SEL_TSS >> 3) + 1] << 32);
	assert_int_equal(base, X86_TSS);
	assert_int_equal((tss >> 40) & 0xf, 0xb); /* busy 64-bit TSS */
	/* no I/O bitmap: the map base lies past the limit */
	assert_true(*(const uint16_t *)(vm->mem + X86_TSS + 102) > X86_TSS_LIMIT);
	free_vm(vm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(identity_and_permissions),
	    cmocka_unit_test(large_memory),
	    cmocka_unit_test(descriptors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
