/* fpustate: the FPU state init leaves (rounding mode in MXCSR and the x87 control word, a value
 * in %xmm15 kept across the read of the request) is back in every invocation restored from the
 * snapshot, though each invocation changes all of it before it ends. */
#include <fenv.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

int main(void)
{
	fesetround(FE_TOWARDZERO);
	__asm__ volatile("movq %0, %%xmm15" : : "r"(0x1122334455667788ULL) : "xmm15");
	char buf[256];
	while (read(0, buf, sizeof(buf)) > 0)
		;
	uint64_t kept;
	__asm__ volatile("movq %%xmm15, %0" : "=r"(kept));
	volatile double one = 1.0, ten = 10.0;
	double q = one / ten;
	volatile long double lq = (long double)one / (long double)ten;
	int mode = fegetround();
	printf("round=%s q=%.17g lq=%.21Lg xmm15=%llx\n",
	       mode == FE_TOWARDZERO ? "towardzero"
	       : mode == FE_UPWARD   ? "upward"
				     : "other",
	       q, (long double)lq, (unsigned long long)kept);
	/* leave it all changed: the next invocation must not see this */
	fesetround(FE_UPWARD);
	__asm__ volatile("movq %0, %%xmm15" : : "r"(0xdeadULL) : "xmm15");
	return 0;
}
