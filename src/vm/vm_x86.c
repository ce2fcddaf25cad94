/* 64-bit long-mode structures in guest memory for the KVM backend: page tables, GDT, TSS. */
#include <string.h>
#include <sys/mman.h>

#include "vm/vm_impl.h"
#include "vm/vm_x86.h"

/* One 4 KiB page-table page maps 2 MiB; all of them sit contiguously at the top of guest RAM, so
 * the PTE of guest page n is simply the n-th 64-bit word there. */
uint64_t vm_x86_pt_bytes(uint64_t mem_size)
{
	return mem_size / 512;
}

static uint64_t *pte_of(struct vm *vm, uint64_t addr)
{
	uint64_t pt_base = vm->mem_size - vm_x86_pt_bytes(vm->mem_size);
	return (uint64_t *)(vm->mem + pt_base) + (addr >> 12);
}

static void put_seg(uint64_t *gdt, int idx, uint64_t flags)
{
	/* base 0, limit 0xfffff with 4 KiB granularity: flat */
	gdt[idx] = 0x000f00000000ffffULL | flags;
}

void vm_x86_build(struct vm *vm)
{
	uint64_t *gdt = (uint64_t *)(vm->mem + X86_GDT);
	memset(gdt, 0, 4096);
	put_seg(gdt, X86_SEL_KCODE >> 3,
		X86_SEG_P | X86_SEG_S | X86_SEG_CODE | X86_SEG_L | X86_SEG_G);
	put_seg(gdt, X86_SEL_KDATA >> 3,
		X86_SEG_P | X86_SEG_S | X86_SEG_DATA | X86_SEG_DB | X86_SEG_G);
	put_seg(gdt, X86_SEL_UDATA >> 3,
		X86_SEG_P | X86_SEG_S | X86_SEG_DATA | X86_SEG_DPL3 | X86_SEG_DB | X86_SEG_G);
	put_seg(gdt, X86_SEL_UCODE >> 3,
		X86_SEG_P | X86_SEG_S | X86_SEG_CODE | X86_SEG_DPL3 | X86_SEG_L | X86_SEG_G);
	/* 64-bit TSS descriptor, 16 bytes: base split over both words, type 0xb (busy) */
	uint64_t tss = X86_TSS, limit = X86_TSS_LIMIT;
	gdt[X86_SEL_TSS >> 3] = (limit & 0xffff) | ((tss & 0xffffff) << 16) | (0xbULL << 40) |
				X86_SEG_P | (((tss >> 24) & 0xff) << 56);
	gdt[(X86_SEL_TSS >> 3) + 1] = tss >> 32;
	memset(vm->mem + X86_TSS, 0, 4096);
	/* the I/O map base past the limit: no I/O bitmap, so port access is decided by IOPL */
	*(uint16_t *)(vm->mem + X86_TSS + 102) = (uint16_t)(X86_TSS_LIMIT + 1);
	memset(vm->mem + X86_IDT, 0, 4096);

	uint64_t *pml4 = (uint64_t *)(vm->mem + X86_PML4);
	uint64_t *pdpt = (uint64_t *)(vm->mem + X86_PDPT);
	memset(pml4, 0, 4096);
	memset(pdpt, 0, 4096);
	pml4[0] = X86_PDPT | X86_PTE_P | X86_PTE_W | X86_PTE_U;
	uint64_t pt_base = vm->mem_size - vm_x86_pt_bytes(vm->mem_size);
	uint64_t n_pd = (vm->mem_size + (1ULL << 30) - 1) >> 30;
	for (uint64_t i = 0; i < n_pd; i++) {
		uint64_t *pd = (uint64_t *)(vm->mem + X86_PD0 + i * 4096);
		memset(pd, 0, 4096);
		pdpt[i] = (X86_PD0 + i * 4096) | X86_PTE_P | X86_PTE_W | X86_PTE_U;
		for (uint64_t j = 0; j < 512; j++) {
			uint64_t two_mib = (i << 30) | (j << 21);
			if (two_mib >= vm->mem_size)
				break;
			pd[j] =
			    (pt_base + (two_mib >> 21) * 4096) | X86_PTE_P | X86_PTE_W | X86_PTE_U;
		}
	}
	/* the host structures stay mapped (PVM reads the GDT through the page tables) but are
	 * supervisor-only, and page 0 is absent: CPL3 cannot touch the first 2 MiB */
	for (uint64_t a = 4096; a < EMBER_SYS_END; a += 4096)
		*pte_of(vm, a) = a | X86_PTE_P | X86_PTE_W | X86_PTE_NX;
}

int vm_x86_protect(struct vm *vm, uint64_t addr, uint64_t len, int prot, int *reduced)
{
	uint64_t flags = 0;
	if (prot & (PROT_READ | PROT_WRITE | PROT_EXEC)) {
		flags = X86_PTE_P | X86_PTE_U;
		if (prot & PROT_WRITE)
			flags |= X86_PTE_W;
		if (!(prot & PROT_EXEC))
			flags |= X86_PTE_NX;
	}
	for (uint64_t a = addr; a < addr + len; a += 4096) {
		uint64_t *pte = pte_of(vm, a);
		uint64_t old = *pte;
		uint64_t new = flags ? (a | flags) : 0;
		/* a permission taken away may be cached in the guest TLB: ask for a flush */
		if ((old & X86_PTE_P) &&
		    (!(new &X86_PTE_P) || ((old & X86_PTE_W) && !(new &X86_PTE_W)) ||
		     (!(old & X86_PTE_NX) && (new &X86_PTE_NX))))
			*reduced = 1;
		*pte = new;
	}
	return 0;
}
