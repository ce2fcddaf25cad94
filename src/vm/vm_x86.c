/* 64-bit long-mode structures in guest memory for the KVM backend: page tables, GDT, TSS, IDT. */
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

/* the handlers' code, from vm_isr.S */
extern const uint8_t vm_isr_start[], vm_isr_end[];

/* RSP0 for faults from CPL3, IST1 for a double fault (its own stack, whatever went wrong), and
 * an I/O bitmap that lets CPL3 use Ember's ports and no other */
static void build_tss(uint8_t *tss, int i)
{
	memset(tss, 0, 0x80);
	uint64_t rsp0 = X86_STACK0(i), ist1 = X86_STACK_IST(i);
	memcpy(tss + 4, &rsp0, 8);
	memcpy(tss + 36, &ist1, 8);
	uint16_t iomap = X86_TSS_IOMAP;
	memcpy(tss + 102, &iomap, 2);
	memset(tss + X86_TSS_IOMAP, 0xff, X86_TSS_IOMAP_BYTES + 1); /* +1: the terminator */
	for (int port = X86_PORT_FIRST; port <= X86_PORT_LAST; port++)
		tss[X86_TSS_IOMAP + port / 8] &= (uint8_t) ~(1u << (port % 8));
}

/* one 64-bit interrupt gate per exception, to its 16-byte stub; #BP may be raised from CPL3
 * (`int3` is a breakpoint, not a #GP), #DF runs on IST1 */
static void build_idt(struct vm *vm)
{
	uint64_t *idt = (uint64_t *)(vm->mem + X86_IDT);
	memset(idt, 0, 4096);
	memcpy(vm->mem + X86_ISR, vm_isr_start, (size_t)(vm_isr_end - vm_isr_start));
	for (uint64_t v = 0; v < X86_IDT_VECTORS; v++) {
		uint64_t fn = X86_ISR + 16 * v;
		uint64_t dpl = v == 3 ? 3 : 0, ist = v == 8 ? 1 : 0;
		idt[2 * v] = (fn & 0xffff) | ((uint64_t)X86_SEL_KCODE << 16) | (ist << 32) |
			     ((uint64_t)(X86_GATE_INT64 | dpl << 5) << 40) |
			     ((fn >> 16 & 0xffff) << 48);
		idt[2 * v + 1] = fn >> 32;
	}
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
	/* a 64-bit TSS descriptor per vCPU, 16 bytes: base split over both words, type 0xb
	 * (busy). Nothing loads TR from it (KVM_SET_SREGS sets TR, of the type the first
	 * machine's probe chose); each vCPU has its own, for its own CPL0 stacks */
	memset(vm->mem + X86_TSS_PAGE, 0, 4096);
	for (int i = 0; i < VM_CPUS_MAX; i++) {
		uint64_t tss = X86_TSS(i), limit = X86_TSS_LIMIT;
		gdt[X86_SEL_TSS(i) >> 3] = (limit & 0xffff) | ((tss & 0xffffff) << 16) |
					   (0xbULL << 40) | X86_SEG_P |
					   (((tss >> 24) & 0xff) << 56);
		gdt[(X86_SEL_TSS(i) >> 3) + 1] = tss >> 32;
		build_tss(vm->mem + tss, i);
	}
	build_idt(vm);
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
	*pte_of(vm, X86_ISR) = X86_ISR | X86_PTE_P; /* the handlers: CPL0 may run, not write */
}

/* the bits that make a mapping: what the CPU sets itself (accessed, dirty) does not count */
#define PTE_PERM (X86_PTE_P | X86_PTE_W | X86_PTE_U | X86_PTE_NX)

int vm_x86_protect(struct vm *vm, uint64_t addr, uint64_t len, int prot, uint64_t *zap_lo,
		   uint64_t *zap_hi)
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
		/* a mapping that was present may be cached (KVM's shadow page tables, the guest's
		 * TLB under EPT/NPT): the caller must make KVM forget it, whether it lost a
		 * permission (else the old one still works) or gained one (else it faults). Only
		 * if it was used: KVM's walker sets the accessed bit before it makes a shadow
		 * entry (and prefetches only accessed ones), the CPU before it caches one, and
		 * nothing clears it while one may remain (vm_x86_forget_used follows a zap). A
		 * machine's own structures, never touched since vm_x86_build (a fork's child: the
		 * runtime's pages made the program's), need no zap: 64 mprotect calls a fork */
		if ((old & X86_PTE_P) && (old & X86_PTE_A) && (old & PTE_PERM) != (new &PTE_PERM)) {
			if (*zap_lo >= *zap_hi)
				*zap_lo = a;
			*zap_hi = a + 4096;
		}
		/* the accessed and dirty bits are the reset's record of what the guest used and
		 * wrote (vm_x86_next_used, vm_x86_unwritten): kept while the page stays mapped,
		 * handed to the host's marks when it goes */
		if (new && (old & X86_PTE_P))
			new |= old &(X86_PTE_A | X86_PTE_D);
		else if (!new && (old & X86_PTE_A))
			vm_mark_host(vm, a, 4096);
		*pte = new;
	}
	return 0;
}

/* A page the guest used since it was last emptied has its accessed bit set: the CPU (or KVM's
 * shadow MMU) sets it at the first access through the PTE, and nothing clears it while the page
 * stays mapped (vm_x86_protect keeps it, or marks the page when it unmaps it). With the host's
 * own marks that covers every page that may hold data: a page neither shows was never used or
 * was emptied since, and reads zero. One pass over the PTEs, no system call. */
static int used(const uint64_t *pte, const uint64_t *w, uint64_t p)
{
	return (pte[p] & X86_PTE_A) || (w[p / 64] >> (p % 64) & 1);
}

/* The CPU (or KVM's walker) sets the accessed bit of every paging entry it walks, so a page
 * directory entry whose bit is clear has no page with its accessed bit under it: nothing clears
 * that bit (vm_x86_build makes it clear, and CPL3 cannot reach the page directories), so it
 * stays set once any page of those 2 MiB was used. 2 MiB without the host's marks are passed
 * over at once there: most of a large stack or mapping never is used. */
static int region_unused(struct vm *vm, const uint64_t *w, uint64_t p)
{
	const uint64_t *pde = (const uint64_t *)(vm->mem + X86_PD0);
	if (pde[p / 512] & X86_PTE_A)
		return 0;
	uint64_t any = 0;
	for (int i = 0; i < 8; i++)
		any |= w[p / 64 + i];
	return !any;
}

int vm_x86_next_used(struct vm *vm, uint64_t addr, uint64_t end, uint64_t *lo, uint64_t *hi)
{
	const uint64_t *w = vm->host_w, *pte = pte_of(vm, 0);
	uint64_t p = addr / 4096, last = end / 4096;
	while (p < last && !used(pte, w, p)) {
		if (p % 512 == 0 && last - p >= 512 && region_unused(vm, w, p)) {
			p += 512;
			continue;
		}
		if (p % 64 == 0 && last - p >= 64 && !w[p / 64]) { /* 64 pages at once, mostly */
			uint64_t any = 0;
			for (int i = 0; i < 64; i++)
				any |= pte[p + i];
			if (!(any & X86_PTE_A)) {
				p += 64;
				continue;
			}
		}
		p++;
	}
	if (p >= last)
		return 0;
	*lo = p * 4096;
	while (++p < last && used(pte, w, p))
		;
	*hi = p * 4096;
	return 1;
}

/* KVM's mappings of [lo, hi) are gone (a hole punched, or the host's memory mapped anew there):
 * the next access walks the PTE again and sets the bits anew. A hole forgets that the page was
 * used; new memory also forgets that it was written (its content is what was mapped: the caller
 * marks it where that is not what the reset would compare it with). */
void vm_x86_forget_used(struct vm *vm, uint64_t lo, uint64_t hi, int written_too)
{
	uint64_t bits = X86_PTE_A | (written_too ? X86_PTE_D : 0);
	const uint64_t *pde = (const uint64_t *)(vm->mem + X86_PD0);
	for (uint64_t a = lo; a < hi;) {
		/* 2 MiB whose directory entry was never walked (region_unused) hold no bit to
		 * clear, and their table page is not read: reading it would give the memfd a
		 * page (a bit left set would only make the reset look closer) */
		if (a % (512 * 4096) == 0 && hi - a >= 512 * 4096 &&
		    !(pde[a / (512 * 4096)] & X86_PTE_A)) {
			a += 512 * 4096;
			continue;
		}
		uint64_t *e = pte_of(vm, a);
		if (*e & bits) /* written only where set: a page of the table is not copied for
				  nothing */
			*e &= ~bits;
		a += 4096;
	}
}

/* The page holds what it held at the end of the last reset: the guest never wrote it (the dirty
 * bit is kept for the PTE's life, across permission changes; a page unmapped is marked), the
 * host touched nothing there (its marks) and punched no hole (the holes bitmap). */
int vm_x86_unwritten(struct vm *vm, uint64_t addr)
{
	uint64_t p = addr / 4096, w = p / 64, bit = 1ULL << (p % 64);
	return !(*pte_of(vm, addr) & X86_PTE_D) && !((vm->host_w[w] | vm->holes[w]) & bit);
}
