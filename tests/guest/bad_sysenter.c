/* bad_sysenter: contains a reachable `sysenter` instruction, which Ember must reject. */
#include <stdio.h>

/* only run when an argument is given (natively it faults in 64-bit mode) */
__attribute__((noinline)) static long legacy_sysenter(void)
{
	long ret = 20;

	__asm__ volatile("sysenter" : "+a"(ret) : : "rcx", "r11", "memory");
	return ret;
}

int main(int argc, char **argv)
{
	(void)argv;
	if (argc > 1)
		printf("sysenter: %ld\n", legacy_sysenter());
	else
		puts("sysenter not executed");
	return 0;
}
