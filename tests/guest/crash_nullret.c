/* crash_nullret: returns to address 0 (a smashed return address): it must die with SIGSEGV, as
 * natively, though in guest mode page 0 holds the runtime's sled. */
#include <stdio.h>

int main(void)
{
	puts("before");
	fflush(stdout);
	__asm__ volatile("push $0\n\tpush $0\n\tret" : : : "memory");
	puts("after");
	return 0;
}
