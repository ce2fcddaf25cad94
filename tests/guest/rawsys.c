/* Builds `syscall` instructions at run time (so the loader never saw them) and runs them: each is
 * served as any other call is, through the host's checked emulation and never the host kernel,
 * as the calls of code mapped at run time (ld.so's libraries, dlopen, a JIT) are. */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* mov $NR, %eax; syscall; ret: the arguments are the caller's rdi, rsi, rdx */
static long (*raw(unsigned char *at, unsigned nr))(long, long, long)
{
	unsigned char code[] = {0xb8, 0, 0, 0, 0, 0x0f, 0x05, 0xc3};
	memcpy(code + 1, &nr, 4);
	memcpy(at, code, sizeof(code));
	return (long (*)(long, long, long))(void *)at;
}

int main(void)
{
	unsigned char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 2;
	printf("before\n");
	fflush(stdout);
	long pid = raw(p, 39 /* getpid */)(0, 0, 0);
	printf("raw getpid %s getpid()\n", pid == getpid() ? "equals" : "differs from");
	fflush(stdout);
	static const char line[] = "a raw write\n";
	long n = raw(p + 16, 1 /* write */)(1, (long)line, sizeof(line) - 1);
	/* a descriptor that is not open: the emulation's EBADF, as Linux's */
	long bad = raw(p + 32, 1)(99, (long)line, 1);
	printf("wrote %ld; to fd 99: %ld\n", n, bad);
	return 0;
}
