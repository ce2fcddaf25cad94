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
	uint64_t lo = 0, hi = 0;
	vm_x86_protect(vm, 0x400000, 0x3000, PROT_READ | PROT_EXEC, &lo, &hi);
	vm_x86_protect(vm, 0x403000, 0x1000, PROT_READ | PROT_WRITE, &lo, &hi);
	assert_true(lo >= hi); /* nothing was mapped before: nothing for KVM to forget */
	e = walk(vm, 0x401234, &u, &w, &nx);
	assert_int_equal(e & 0x000ffffffffff000ULL, 0x401000); /* identity */
	assert_true(u);
	assert_false(w);
	assert_false(nx);
	e = walk(vm, 0x403000, &u, &w, &nx);
	assert_true(u && w && nx);
	/* a mapping never used (its accessed bit clear) is in no cache: nothing to forget */
	vm_x86_protect(vm, 0x403000, 0x1000, PROT_READ, &lo, &hi);
	assert_true(lo >= hi);
	vm_x86_protect(vm, 0x403000, 0x1000, PROT_READ | PROT_WRITE, &lo, &hi);
	assert_true(lo >= hi);
	for (uint64_t a = 0x400000; a < 0x404000; a += 0x1000) /* used: their accessed bits */
		*(uint64_t *)(vm->mem + vm->user_top + (a >> 12) * 8) |= 0x20;
	/* taking a permission away, or giving one, names the pages KVM must forget */
	vm_x86_protect(vm, 0x403000, 0x1000, PROT_READ, &lo, &hi);
	assert_int_equal(lo, 0x403000);
	assert_int_equal(hi, 0x404000);
	lo = hi = 0;
	vm_x86_protect(vm, 0x400000, 0x4000, 0, &lo, &hi);
	assert_int_equal(lo, 0x400000);
	assert_int_equal(hi, 0x404000);
	assert_int_equal(walk(vm, 0x403000, &u, &w, &nx), 0);
	/* the same permissions again change nothing, even with the accessed/dirty bits set */
	vm_x86_protect(vm, 0x400000, 0x1000, PROT_READ | PROT_WRITE, &lo, &hi);
	*(uint64_t *)(vm->mem + vm->user_top + (0x400000 >> 12) * 8) |= 0x60; /* A, D */
	lo = hi = 0;
	vm_x86_protect(vm, 0x400000, 0x1000, PROT_READ | PROT_WRITE, &lo, &hi);
	assert_true(lo >= hi);
	lo = hi = 0;
	vm_x86_protect(vm, 0x400000, 0x1000, PROT_READ | PROT_WRITE | PROT_EXEC, &lo, &hi);
	assert_int_equal(lo, 0x400000);
	/* the last user page maps; the page tables above user_top are never user pages */
	vm_x86_protect(vm, vm->user_top - 4096, 4096, PROT_READ | PROT_WRITE, &lo, &hi);
	assert_int_not_equal(walk(vm, vm->user_top - 4096, &u, &w, &nx), 0);
	assert_int_equal(walk(vm, vm->user_top, &u, &w, &nx), 0);
	free_vm(vm);
}

static void large_memory(void **state)
{
	(void)state;
	struct vm *vm = fake_vm(3ULL << 30); /* three page directories */
	int u, w, nx;
	uint64_t a = (2ULL << 30) + 0x12345000, lo = 0, hi = 0;
	vm_x86_protect(vm, a, 4096, PROT_READ | PROT_WRITE, &lo, &hi);
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
	/* each vCPU has its own TSS, so its own CPL0 stacks: two vCPUs fault at once */
	for (int i = 0; i < VM_CPUS_MAX; i++) {
		uint64_t tss = gdt[X86_SEL_TSS(i) >> 3];
		uint64_t base = ((tss >> 16) & 0xffffff) | (((tss >> 56) & 0xff) << 24) |
				(gdt[(X86_SEL_TSS(i) >> 3) + 1] << 32);
		assert_int_equal(base, X86_TSS(i));
		assert_int_equal((tss >> 40) & 0xf, 0xb); /* busy 64-bit TSS */
		/* the limit covers an I/O bitmap and its terminator: PVM drops IOPL, so CPL3
		 * reaches a port only through the bitmap, and exactly Ember's ports are open */
		uint64_t limit = (tss & 0xffff) | (((tss >> 48) & 0xf) << 16);
		assert_int_equal(limit, X86_TSS_LIMIT);
		const uint8_t *t = vm->mem + X86_TSS(i);
		uint16_t iomap;
		memcpy(&iomap, t + 102, 2);
		assert_true(iomap >= 0x68 && iomap + X86_TSS_IOMAP_BYTES <= limit);
		for (int port = 0; port < (int)X86_TSS_IOMAP_BYTES * 8; port++) {
			int open = !(t[iomap + port / 8] & (1 << (port % 8)));
			assert_int_equal(open, port >= EMBER_HC_SYSCALL && port <= EMBER_HC_FLUSH);
		}
		assert_true(X86_PORT_FAULT >= 64 ||
			    (t[iomap + X86_PORT_FAULT / 8] >> (X86_PORT_FAULT % 8)) & 1);
		assert_int_equal(t[iomap + X86_TSS_IOMAP_BYTES], 0xff); /* the terminator */
		/* faults from CPL3 land on the supervisor stack, a double fault on its own */
		uint64_t rsp0, ist1;
		memcpy(&rsp0, t + 4, 8);
		memcpy(&ist1, t + 36, 8);
		assert_int_equal(rsp0, X86_STACK0(i));
		assert_int_equal(ist1, X86_STACK_IST(i));
		assert_true(X86_STACK_IST(i) <= EMBER_RT_CPUS); /* below the runtime's areas */
	}
	free_vm(vm);
}

/* every exception has a present 64-bit interrupt gate into the handlers' supervisor page */
static void exception_gates(void **state)
{
	(void)state;
	struct vm *vm = fake_vm(MEM);
	const uint64_t *idt = (const uint64_t *)(vm->mem + X86_IDT);
	for (uint64_t v = 0; v < X86_IDT_VECTORS; v++) {
		uint64_t lo = idt[2 * v], hi = idt[2 * v + 1];
		uint64_t fn = (lo & 0xffff) | (((lo >> 48) & 0xffff) << 16) | (hi << 32);
		assert_int_equal(fn, X86_ISR + 16 * v);
		assert_int_equal((lo >> 16) & 0xffff, X86_SEL_KCODE);
		assert_int_equal((lo >> 40) & 0x9f, 0x8e); /* present, 64-bit interrupt gate */
		/* only int3 may be raised from CPL3: other `int N` are a #GP, as on Linux */
		assert_int_equal((lo >> 45) & 3, v == 3 ? 3 : 0);
		assert_int_equal((lo >> 32) & 7, v == 8 ? 1 : 0);
		/* each stub pushes the vector (pushq imm8: 6a v) */
		const uint8_t *stub = vm->mem + fn;
		assert_true((stub[0] == 0x6a && stub[1] == v) ||
			    (stub[0] == 0x6a && stub[1] == 0 && stub[2] == 0x6a && stub[3] == v));
	}
	int u, w, nx;
	uint64_t e = walk(vm, X86_ISR, &u, &w, &nx);
	assert_true(e && !u && !w && !nx); /* CPL0 runs it; nobody writes it */
	for (int i = 0; i < VM_CPUS_MAX; i++) {
		e = walk(vm, X86_STACK0(i) - 8, &u, &w, &nx);
		assert_true(e && !u && w && nx);
	}
	e = walk(vm, X86_SYSCALL_TRAP, &u, &w, &nx);
	assert_true(e && !u && nx); /* a jump there from CPL3 faults */
	free_vm(vm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(identity_and_permissions),
	    cmocka_unit_test(large_memory),
	    cmocka_unit_test(descriptors),
	    cmocka_unit_test(exception_gates),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
