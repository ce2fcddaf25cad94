/* Builds a `syscall` instruction at run time (so the loader never saw it) and executes it: an
 * unrewritten syscall must end the invocation, never reach the host kernel. */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

int main(void)
{
	/* mov $10, %eax (mprotect); syscall; ret */
	static const unsigned char code[] = {0xb8, 0x0a, 0x00, 0x00, 0x00, 0x0f, 0x05, 0xc3};
	unsigned char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 2;
	memcpy(p, code, sizeof(code));
	printf("before\n");
	fflush(stdout);
	((void (*)(void))p)();
	printf("after: the raw syscall returned\n");
	return 0;
}
