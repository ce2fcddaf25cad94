/* The guest/host ABI: hypercall ports, the guest memory layout and the numbers both sides share. */
#ifndef EMBER_ABI_H
#define EMBER_ABI_H

/*
 * A rewritten `syscall` site (0f 05) becomes `out %al,$EMBER_HC_SYSCALL` (e6 10): two bytes, so
 * no instruction moves. The host reads the Linux syscall number from rax and the arguments from
 * rdi, rsi, rdx, r10, r8, r9, and writes the result to rax, exactly like the kernel would.
 */
#define EMBER_HC_SYSCALL 0x10
/* the port a test guest uses to leave at once (the exit floor benchmark) */
#define EMBER_HC_NOP 0x11

/* Syscall numbers Ember adds above Linux's range; a native run gets ENOSYS from them. */
#define EMBER_SYS_BASE     0x454d00 /* "EM" */
#define EMBER_SYS_SNAPSHOT (EMBER_SYS_BASE + 1)

/*
 * Guest memory layout. Guest virtual addresses equal guest physical addresses.
 *   [0, EMBER_SYS_END)          host structures (page tables, GDT, TSS); never reachable at CPL3
 *   [EMBER_IMAGE_BASE, ...)     the program (static-PIE images are loaded here)
 *   brk heap after the image, mmap area top-down below the stack guard
 *   [stack_top - stack, stack_top)  the stack; stack_top is below the page-table pages at the top
 */
#define EMBER_PAGE_SIZE   4096ULL
#define EMBER_SYS_END     0x200000ULL
#define EMBER_IMAGE_BASE  0x400000ULL
#define EMBER_STACK_GUARD 0x10000ULL

/* fd 3 carries a runtime's source code (read once, before the snapshot) */
#define EMBER_CODE_FD 3

#endif
