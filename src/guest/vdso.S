/* The virtine's vDSO: what glibc, musl and Go look up at AT_SYSINFO_EHDR, each function one
 * system call whose site the loader rewrites as the program's own (in guest mode served by the
 * in-guest runtime with no exit, where a call through the stray path would take one). */
	.text
	.macro call_nr name, nr
	.globl __vdso_\name
	.type __vdso_\name, @function
__vdso_\name:
	mov $\nr, %eax
	syscall
	ret
	.size __vdso_\name, . - __vdso_\name
	/* int3 padding up to the next function, as Go's linker leaves: a program without page 0
	 * (Go) reaches the runtime from the site through it (EMBER_RT_ENTRY_REL), not by a trap */
	.fill 8, 1, 0xcc
	.weak \name
	.set \name, __vdso_\name
	.endm
	call_nr clock_gettime, 228
	call_nr gettimeofday, 96
	call_nr time, 201
	call_nr clock_getres, 229
	call_nr getcpu, 309
	/* a function after the last padding, which padding must end at (never called) */
	.type vdso_end, @function
vdso_end:
	ud2
	.size vdso_end, . - vdso_end
	.section .note.GNU-stack,"",@progbits
