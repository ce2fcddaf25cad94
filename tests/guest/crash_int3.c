/* crash_int3: dies with SIGTRAP at a breakpoint instruction. */
#include <stdio.h>

int main(void)
{
	puts("before");
	fflush(stdout);
	__asm__ volatile("int3");
	puts("after");
	return 0;
}
