/* The in-guest runtime's entries: from a rewritten site's `call *%rax` via the page-0 sled, and
 * from the host, which sends here the calls of trapping sites whose state the runtime keeps. */

/* rt_serve's frame below its vCPU's stack top when it calls rt_syscall: its own return
 * address, the flags and twelve registers, 8 bytes of alignment and the sixth argument */
.set RT_SERVE_FRAME, 128
/* struct ember_rt_cpu (abi.h), at GS base: this vCPU's area, its stack ending with the area */
.set CPU_SELF, 0
.set CPU_SAVED_RSP, 8
.set CPU_SITE, 16
.set CPU_FORWARD, 24
.set CPU_BOUNCE, 32
.set CPU_SIZE, 0x4000 /* EMBER_RT_CPU_SIZE */
.set HC_SYSCALL, 0x10 /* EMBER_HC_SYSCALL */

	.section .text.entry, "ax"
	.globl rt_entry
rt_entry:
	/* only a `call *%rax` (ff d0) may come here: a call through a null function pointer in
	 * another register slides down the same sled and must fault, not make a system call;
	 * rt_syscall checks that this one is a rewritten site (the area's site) */
	mov (%rsp), %r11
	cmpw $0xd0ff, -2(%r11)
	jne rt_badcall
	/* on the program's stack, [rsp] is the return address: switch to this vCPU's stack (rcx
	 * and r11 are the syscall's to clobber) */
	mov %gs:CPU_SELF, %rcx
	mov %rsp, CPU_SAVED_RSP(%rcx)
	mov %r11, CPU_SITE(%rcx)
	lea CPU_SIZE(%rcx), %rsp
	call rt_serve
rt_entry_back:
	/* back on the program's stack, its flags as rt_serve restored them: nothing below may
	 * change them (jrcxz and lea test and move without flags). The return goes to the site
	 * without reading the stack: a call may have unmapped it (musl's __unmapself frees a
	 * thread's stack, then exits). rcx holds the return address, as after a syscall. */
	mov %gs:CPU_SELF, %r11
	mov CPU_SAVED_RSP(%r11), %rsp
	mov CPU_FORWARD(%r11), %rcx
	jrcxz 1f
	movq $0, CPU_FORWARD(%r11)
	jmp rt_forward_out
1:	mov CPU_SITE(%r11), %rcx
	lea 8(%rsp), %rsp
	jmp *%rcx

	/* EMBER_RT_ENTRY_REL: a `call rel32` from a site's padding (abi.h), [rsp] its return
	 * address, at the padding's `jmp rel8` back to the site's end. Only such a call may come
	 * here; the site's end it names must be a rewritten site's (rt_syscall checks the area's
	 * site), and the call returns there, as one made at a `call *%rax` site. */
	.org 0x80
	.globl rt_entry_rel
rt_entry_rel:
	mov (%rsp), %r11
	cmpb $0xe8, -5(%r11)
	jne 2f
	cmpb $0xeb, (%r11)
	jne 2f
	movsbq 1(%r11), %rcx
	lea 2(%r11,%rcx), %r11
	mov %gs:CPU_SELF, %rcx
	mov %rsp, CPU_SAVED_RSP(%rcx)
	mov %r11, CPU_SITE(%rcx)
	lea CPU_SIZE(%rcx), %rsp
	call rt_serve
	jmp rt_entry_back
	/* no padding's call: a wild call into the runtime, reported as a fault at page 0 */
2:	xor %eax, %eax
	jmp rt_badcall

	/* EMBER_RT_BOUNCE_ENTRY: the host left the program's rsp alone (its red zone may be live)
	 * and wrote where to return, and with which rsp, in this vCPU's area */
	.org 0x100
	.globl rt_bounce
rt_bounce:
	mov %gs:CPU_SELF, %r11
	lea CPU_SIZE(%r11), %rsp
	movq $0, CPU_SITE(%r11) /* the host sent it from a trapping site: no site to check */
	call rt_serve
	/* as after a syscall: rcx = the return address, r11 = the flags (bounce[2]) */
	mov %gs:CPU_SELF, %r11
	mov CPU_BOUNCE(%r11), %rcx
	mov CPU_BOUNCE + 8(%r11), %rsp
	mov CPU_BOUNCE + 16(%r11), %r11
	jmp *%rcx

	/* EMBER_RT_EFAULT_ENTRY: rt_syscall faulted on the program's memory (a bad buffer); the
	 * host sent the vCPU here with whatever registers the fault left. rt_serve's frame is
	 * intact above rt_syscall's: drop the latter, count the call (rt_efaulted) and return
	 * -EFAULT from it, with every register rt_serve saved (the callee-saved ones too:
	 * rt_syscall never restored them). */
	.org 0x180
	.globl rt_efault
rt_efault:
	mov %gs:CPU_SELF, %r11
	lea CPU_SIZE - RT_SERVE_FRAME(%r11), %rsp
	call rt_efaulted
	mov $-14, %rax
	jmp rt_serve_done

	/* EMBER_RT_BADCALL: a call into page 0 that is no rewritten site; rax is its target. The
	 * host reports the page fault a call there would have been. */
	.org 0x1c0
	.globl rt_badcall
rt_badcall:
	ud2

	/* EMBER_RT_FORWARD_OUT: a call rt_syscall hands to the host as the program made it: rax
	 * its number, every other register the program's, rsp at the site's return address (the
	 * area's site). The host serves it as if made at the site, and resumes the program
	 * there. */
	.org 0x200
	.globl rt_forward_out
rt_forward_out:
	out %al, $HC_SYSCALL
	ret

/* a syscall keeps every register but rax, rcx and r11, and the flags; calls rt_syscall(nr,
 * a0..a5) on this vCPU's stack (rsp is at its top, less this call's return address).
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
	.section .note.GNU-stack,"",@progbits
