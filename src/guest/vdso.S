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
	.weak \name
	.set \name, __vdso_\name
	.endm
	call_nr clock_gettime, 228
	call_nr gettimeofday, 96
	call_nr time, 201
	call_nr clock_getres, 229
	call_nr getcpu, 309
	.section .note.GNU-stack,"",@progbits
