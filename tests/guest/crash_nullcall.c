/* crash_nullcall: calls through a null function pointer held in rax, with arguments that would
 * make a read of the request succeed: it must die with SIGSEGV (as natively), never serve a
 * system call (in guest mode `call *%rax` is also the form of a rewritten site). */
#include <stdio.h>

int main(void)
{
	static char buf[16];
	puts("before");
	fflush(stdout);
	__asm__ volatile("xor %%eax, %%eax\n\tcall *%%rax"
			 :
			 : "D"(0), "S"(buf), "d"(sizeof(buf))
			 : "rax", "rcx", "r8", "r9", "r10", "r11", "memory", "cc");
	printf("after: '%s'\n", buf);
	return 0;
}
