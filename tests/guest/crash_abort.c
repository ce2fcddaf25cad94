/* crash_abort: dies with SIGABRT by calling abort(). */
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
	puts("before");
	fflush(stdout);
	abort();
}
