/* loop: a CPU-bound guest that never finishes (for timeouts and preemption). */
#include <stdio.h>

static volatile unsigned long counter;

int main(void)
{
	puts("looping");
	fflush(stdout);
	for (;;)
		counter++;
}
