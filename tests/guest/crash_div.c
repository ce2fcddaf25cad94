/* crash_div: dies with SIGFPE by an integer division by zero. */
#include <stdio.h>

/* both volatile: gcc folds 1 / x into a compare, which never traps */
static volatile int dividend = 42, zero;

int main(void)
{
	puts("before");
	fflush(stdout);
	printf("%d\n", dividend / zero);
	return 0;
}
