/* crash_fpe: dies with SIGFPE by an SSE division by zero with that exception unmasked. */
#include <stdio.h>

static volatile double one = 1.0, zero;

int main(void)
{
	puts("before");
	fflush(stdout);
	unsigned csr;
	__asm__ volatile("stmxcsr %0" : "=m"(csr));
	csr &= ~(1u << 9); /* ZM: divide-by-zero no longer masked */
	__asm__ volatile("ldmxcsr %0" : : "m"(csr));
	printf("%f\n", one / zero);
	return 0;
}
