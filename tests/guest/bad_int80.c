/* bad_int80: contains a reachable legacy `int $0x80` syscall, which Ember must reject. */
#include <stdio.h>

/* 32-bit ABI getpid (20); only run when an argument is given */
__attribute__((noinline)) static long legacy_getpid(void)
{
	long ret = 20;

	__asm__ volatile("int $0x80" : "+a"(ret) : : "memory");
	return ret;
}

int main(int argc, char **argv)
{
	(void)argv;
	if (argc > 1)
		printf("int80 getpid: %ld\n", legacy_getpid());
	else
		puts("int80 not executed");
	return 0;
}
