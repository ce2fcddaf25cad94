/* The in-guest runtime's entries: from a rewritten site's `call *%rax` via the page-0 sled, and
 * from the host, which sends here the calls of trapping sites whose state the runtime keeps. */

/* rt_serve's frame below the runtime's stack top when it calls rt_syscall: its own return
 * address, the flags and twelve registers, 8 bytes of alignment and the sixth argument */
.set RT_SERVE_FRAME, 128

	.section .text.entry, "ax"
	.globl rt_entry
rt_entry:
	/* only a `call *%rax` (ff d0) may come here: a call through a null function pointer in
	 * another register slides down the same sled and must fault, not make a system call;
	 * rt_syscall checks that this one is a rewritten site (rt_site) */
	mov (%rsp), %r11
	cmpw $0xd0ff, -2(%r11)
	jne rt_badcall
	/* on the program's stack, [rsp] is the return address: switch to our own stack */
	mov %rsp, rt_saved_rsp(%rip)
	lea rt_stack_top(%rip), %rsp
	mov %r11, rt_site(%rip)
	call rt_serve
	mov rt_saved_rsp(%rip), %rsp
	ret

	/* EMBER_RT_BOUNCE_ENTRY: the host left the program's rsp alone (its red zone may be live)
	 * and wrote where to return, and with which rsp, at EMBER_RT_BOUNCE */
	.org 0x100
	.globl rt_bounce
rt_bounce:
	lea rt_stack_top(%rip), %rsp
	movq $0, rt_site(%rip) /* the host sent it from a trapping site: no site to check */
	call rt_serve
	/* as after a syscall: rcx = the return address, r11 = the flags (slot 2) */
	mov rt_bounce_slot(%rip), %r11
	mov (%r11), %rcx
	mov 8(%r11), %rsp
	mov 16(%r11), %r11
	jmp *%rcx

	/* EMBER_RT_EFAULT_ENTRY: rt_syscall faulted on the program's memory (a bad buffer); the
	 * host sent the vCPU here with whatever registers the fault left. rt_serve's frame is
	 * intact above rt_syscall's: drop the latter, count the call (rt_efaulted) and return
	 * -EFAULT from it, with every register rt_serve saved (the callee-saved ones too:
	 * rt_syscall never restored them). */
	.org 0x180
	.globl rt_efault
rt_efault:
	lea rt_stack_top - RT_SERVE_FRAME(%rip), %rsp
	call rt_efaulted
	mov $-14, %rax
	jmp rt_serve_done

	/* EMBER_RT_BADCALL: a call into page 0 that is no rewritten site; rax is its target. The
	 * host reports the page fault a call there would have been. */
	.org 0x1c0
	.globl rt_badcall
rt_badcall:
	ud2

/* a syscall keeps every register but rax, rcx and r11, and the flags; calls rt_syscall(nr,
 * a0..a5) on the runtime's own stack (rsp is at its top, less this call's return address).
 * The callee-saved registers are saved here too, for the return from rt_efault. */
rt_serve:
	pushfq
	push %rdi
	push %rsi
	push %rdx
	push %r8
	push %r9
	push %r10
	push %rbx
	push %rbp
	push %r12
	push %r13
	push %r14
	push %r15
	cld
	/* the sixth argument goes on the stack, 16-byte aligned at the call */
	sub $8, %rsp
	push %r9
	mov %r8, %r9
	mov %r10, %r8
	mov %rdx, %rcx
	mov %rsi, %rdx
	mov %rdi, %rsi
	mov %rax, %rdi
	call rt_syscall
rt_serve_done:
	add $16, %rsp
	pop %r15
	pop %r14
	pop %r13
	pop %r12
	pop %rbp
	pop %rbx
	pop %r10
	pop %r9
	pop %r8
	pop %rdx
	pop %rsi
	pop %rdi
	popfq
	ret
	.globl rt_entry_end
rt_entry_end:

	.bss
	.balign 16
	.globl rt_site
rt_site:
	.quad 0
rt_saved_rsp:
	.quad 0
	.balign 16
	.space 32768
rt_stack_top:
	.section .note.GNU-stack,"",@progbits
