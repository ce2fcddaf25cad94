/* The KVM backend's exception handlers: copied to X86_ISR, they report a fault in one exit. */
#include "vm/vm_x86.h"

/*
 * Data to the host, code to the guest: vm_x86_build copies [vm_isr_start, vm_isr_end) to
 * X86_ISR, a supervisor-only page. Entry v of the IDT points at vm_isr_start + 16 * v.
 *
 * Every handler leaves the same frame on its stack, lowest address first:
 *   saved rax, vector, error code (0 where the CPU pushes none), rip, cs, rflags, rsp, ss
 * and exits with rax = CR2 through `out` on X86_PORT_FAULT, a port the TSS bitmap keeps from
 * CPL3. If the host runs the vCPU on, the handler returns to the faulting instruction with
 * every register as it was. To start the vCPU somewhere else, the host writes an iretq frame
 * and points rip at vm_isr_iret.
 */
	.section .rodata.vm_isr, "a"
	.globl vm_isr_start, vm_isr_out, vm_isr_iret, vm_isr_end
	.balign 16
vm_isr_start:
	/* the vectors whose exceptions push an error code: #DF #TS #NP #SS #GP #PF #AC #CP #VC #SX */
	.irp v, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
	.balign 16
	.if (\v == 8) || (\v >= 10 && \v <= 14) || (\v == 17) || (\v == 21) || (\v == 29) || (\v == 30)
	pushq $\v
	.else
	pushq $0
	pushq $\v
	.endif
	jmp vm_isr_common
	.endr
	.balign 16
vm_isr_common:
	push %rax
	mov %cr2, %rax
vm_isr_out:
	out %al, $X86_PORT_FAULT
	pop %rax
	add $16, %rsp
	iretq
vm_isr_iret:
	iretq
vm_isr_end:
	/* the handlers fit their one page at X86_ISR: the assembler refuses to move .org back */
	.org vm_isr_start + 4096

	.section .note.GNU-stack, "", @progbits
