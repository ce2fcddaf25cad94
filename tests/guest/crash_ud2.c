/* crash_ud2: dies with SIGILL by executing the undefined instruction ud2. */
#include <stdio.h>

int main(void)
{
	puts("before");
	fflush(stdout);
	__asm__ volatile("ud2");
	puts("after");
	return 0;
}
