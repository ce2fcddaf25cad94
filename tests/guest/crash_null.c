/* crash_null: dies with SIGSEGV by writing through a NULL pointer. */
#include <stdio.h>

static int *volatile target;

int main(void)
{
	puts("before");
	fflush(stdout);
	*target = 42;
	puts("after");
	return 0;
}
