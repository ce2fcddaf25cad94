/* Addresses and bit values of the x86-64 structures the KVM backend lays out in guest memory. */
#ifndef EMBER_VM_X86_H
#define EMBER_VM_X86_H

#define X86_GDT 0x1000ULL
/* each vCPU's TSS, 128 bytes apart in one page */
#define X86_TSS_PAGE 0x2000ULL
#define X86_TSS(i)   (X86_TSS_PAGE + 0x80ULL * (unsigned long long)(i))
#define X86_IDT	     0x3000ULL
#define X86_PML4     0x4000ULL
#define X86_PDPT     0x5000ULL
#define X86_PD0	     0x6000ULL /* one page directory per GiB, up to 64 */
/* the exception handlers (vm_isr.S), and per vCPU their CPL0 stack (RSP0) and the stack for a
 * double fault (IST1); all supervisor-only, the code page read-only */
#define X86_ISR		 0x80000ULL
#define X86_STACKS	 0x90000ULL /* two pages per vCPU, up to 0xb0000 */
#define X86_STACK0(i)	 (X86_STACKS + 0x2000ULL * (unsigned long long)(i) + 0x1000ULL)
#define X86_STACK_IST(i) (X86_STACKS + 0x2000ULL * (unsigned long long)(i) + 0x2000ULL)
/* MSR_LSTAR: a supervisor-only, no-execute page. Where `syscall` at CPL3 jumps to LSTAR
 * without entering CPL0 (PVM, whatever EFER.SCE says), the fetch there faults and is named a
 * stray syscall; elsewhere EFER.SCE=0 makes it #UD. */
#define X86_SYSCALL_TRAP 0x84000ULL
#define X86_IDT_VECTORS	 32 /* the exceptions; `int N` above them is #GP */

/* TSS: 104 bytes, then an I/O permission bitmap for ports 0-63 and its terminator byte. CPL3
 * may use exactly Ember's ports: the bitmap decides, as IOPL is 0 (PVM drops IOPL anyway). */
#define X86_TSS_IOMAP	    0x68ULL
#define X86_TSS_IOMAP_BYTES 8ULL
#define X86_TSS_LIMIT	    (X86_TSS_IOMAP + X86_TSS_IOMAP_BYTES) /* the terminator, last byte */
#define X86_PORT_FIRST	    0x10 /* EMBER_HC_SYSCALL .. EMBER_HC_FLUSH */
#define X86_PORT_LAST	    0x13
/* TR's type: a busy 64-bit TSS, as LTR leaves it (VT-x requires it at entry); an available one
 * where an emulator's I/O check insists (QEMU's TCG, under nested SVM) */
#define X86_TSS_BUSY  0xb
#define X86_TSS_AVAIL 0x9
/* the port the CPL0 handlers report an exception on; CPL3 cannot reach it */
#define X86_PORT_FAULT 0x14

/* selectors as Linux lays them out, so a guest reading them sees familiar values */
#define X86_SEL_KCODE  0x10
#define X86_SEL_KDATA  0x18
#define X86_SEL_UDATA  0x2b		 /* 0x28 | RPL 3 */
#define X86_SEL_UCODE  0x33		 /* 0x30 | RPL 3 */
#define X86_SEL_TSS(i) (0x40 + 16 * (i)) /* a 16-byte descriptor per vCPU */

#define X86_SEG_P    (1ULL << 47)
#define X86_SEG_DPL3 (3ULL << 45)
#define X86_SEG_S    (1ULL << 44)
#define X86_SEG_CODE (0xbULL << 40) /* execute/read, accessed */
#define X86_SEG_DATA (0x3ULL << 40) /* read/write, accessed */
#define X86_SEG_L    (1ULL << 53)
#define X86_SEG_DB   (1ULL << 54)
#define X86_SEG_G    (1ULL << 55)

#define X86_PTE_P (1ULL << 0)
#define X86_PTE_W (1ULL << 1)
#define X86_PTE_U (1ULL << 2)
/* accessed and dirty: set by the CPU (or KVM's shadow MMU) at a page's first use and write */
#define X86_PTE_A  (1ULL << 5)
#define X86_PTE_D  (1ULL << 6)
#define X86_PTE_NX (1ULL << 63)

#define X86_CR0_PE (1ULL << 0)
#define X86_CR0_MP (1ULL << 1)
#define X86_CR0_ET (1ULL << 4)
#define X86_CR0_NE (1ULL << 5)
#define X86_CR0_WP (1ULL << 16)
#define X86_CR0_AM (1ULL << 18)
#define X86_CR0_PG (1ULL << 31)

#define X86_CR4_PAE	   (1ULL << 5)
#define X86_CR4_OSFXSR	   (1ULL << 9)
#define X86_CR4_OSXMMEXCPT (1ULL << 10)
#define X86_CR4_FSGSBASE   (1ULL << 16)
#define X86_CR4_OSXSAVE	   (1ULL << 18)

#define X86_EFER_LME (1ULL << 8)
#define X86_EFER_LMA (1ULL << 10)
#define X86_EFER_NXE (1ULL << 11)

#define X86_RFLAGS_FIXED 0x2ULL

#define X86_MSR_FS_BASE 0xc0000100U
#define X86_MSR_GS_BASE 0xc0000101U
#define X86_MSR_LSTAR	0xc0000082U
#define X86_MSR_TSC	0x10U

/* the interrupt-gate type of a 64-bit IDT entry, present */
#define X86_GATE_INT64 0x8e

#endif
