/* A leaf function keeping live data in its red zone around an inline syscall: rewriting that
 * site into `call *%rax` would overwrite the data with a return address. */
#include <stdio.h>
#include <unistd.h>

static long __attribute__((noinline)) leaf(long x)
{
	long r;
	__asm__ volatile("movq %[x], -8(%%rsp)\n\t"
			 "movq $39, %%rax\n\t" /* getpid */
			 "syscall\n\t"
			 "movq -8(%%rsp), %[r]\n\t"
			 : [r] "=r"(r)
			 : [x] "r"(x)
			 : "rax", "rcx", "r11", "memory");
	return r;
}

int main(void)
{
	char buf[64];
	while (read(0, buf, sizeof(buf)) > 0)
		;
	long v = leaf(0x1234567890abcdefL);
	if (v != 0x1234567890abcdefL) {
		printf("redzone clobbered: %lx\n", v);
		return 1;
	}
	printf("redzone ok\n");
	return 0;
}
