/* crash_stack: overflows the stack by unbounded recursion with a big local array. */
#include <stdio.h>

static volatile long limit = -1; /* never reached: keeps the compiler from seeing the recursion */

__attribute__((noinline)) static long recurse(long depth)
{
	volatile char frame[64 * 1024];

	frame[depth % sizeof(frame)] = (char)depth;
	if (depth == limit)
		return 0;
	/* using the result after the call defeats tail-call optimisation */
	return recurse(depth + 1) + frame[(depth * 7) % sizeof(frame)];
}

int main(void)
{
	puts("before");
	fflush(stdout);
	printf("%ld\n", recurse(0));
	return 0;
}
