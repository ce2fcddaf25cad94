/* crash_hlt: executes the privileged hlt at CPL3 (a general-protection fault: SIGSEGV natively). */
#include <stdio.h>

int main(void)
{
	puts("before");
	fflush(stdout);
	__asm__ volatile("hlt");
	puts("after");
	return 0;
}
