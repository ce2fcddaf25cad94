/* isolation: the request names one check that must end in a page fault; surviving it prints LEAK.
 *   ro     a page written, then made read-only, is written again
 *   unmap  a page written, then unmapped, is read again
 *   map    maps the page at A (free at init) and writes a secret there: exits 0
 *   peek   reads A, which no invocation has mapped as far as the snapshot knows
 *   bigmap writes a secret into a page of every MiB of B, 8 MiB mapped at init and never
 *          touched there (whole page directories of it hold no page of the snapshot)
 *   bigpeek reads those pages again: prints "bigpeek 0" when all are zero, else LEAK
 * Each prints what it is about to do first, so the output before the fault is checked too.
 * Surviving prints LEAK and exits 3 when the secret is read, else prints what was read and
 * exits 4 (the in-guest runtime's pool keeps freed memory readable, zeroed: see run.md). */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE   4096
#define SECRET 0x5ec12e7u

static volatile unsigned *a; /* chosen at init: free in the snapshot */
#define BIG (8u << 20)
static volatile unsigned char *big; /* mapped at init, untouched until an invocation */

static volatile unsigned *fresh_page(void)
{
	void *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static int survived(const char *what, unsigned v)
{
	printf("%s %s: %#x\n", v == SECRET ? "LEAK" : "survived", what, v);
	return v == SECRET ? 3 : 4;
}

int main(void)
{
	/* first, so that A below is not where this goes */
	void *b = mmap(NULL, BIG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b == MAP_FAILED)
		return 2;
	big = b;
	volatile unsigned *p = fresh_page();
	if (!p)
		return 2;
	a = p;
	munmap((void *)p, PAGE);
	char req[16] = "";
	ssize_t n = read(0, req, sizeof(req) - 1);
	if (n > 0)
		req[n] = 0;
	req[strcspn(req, "\n")] = 0;
	if (strcmp(req, "map") == 0) {
		if (mmap((void *)a, PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != (void *)a)
			return 2;
		*a = SECRET;
		printf("mapped %u\n", *a == SECRET);
		return 0;
	}
	if (strcmp(req, "bigmap") == 0) {
		for (unsigned off = 0x3000; off < BIG; off += 1u << 20)
			*(volatile unsigned *)(big + off) = SECRET;
		printf("bigmap\n");
		return 0;
	}
	if (strcmp(req, "bigpeek") == 0) {
		unsigned seen = 0;
		for (unsigned off = 0x3000; off < BIG; off += 1u << 20)
			seen |= *(volatile unsigned *)(big + off);
		if (seen)
			return survived("bigpeek after another invocation wrote the pages", seen);
		printf("bigpeek 0\n");
		return 0;
	}
	if (strcmp(req, "peek") == 0) {
		printf("peek\n");
		fflush(stdout);
		return survived("peek after another invocation mapped the page", *a);
	}
	if (!(p = fresh_page()))
		return 2;
	*p = SECRET; /* touched: the machine maps it writable now */
	if (strcmp(req, "ro") == 0) {
		mprotect((void *)p, PAGE, PROT_READ);
		printf("read-only %u\n", *p == SECRET);
		fflush(stdout);
		*p = 1;
		return survived("write after mprotect(PROT_READ)", *p);
	}
	if (strcmp(req, "unmap") == 0) {
		munmap((void *)p, PAGE);
		printf("unmapped\n");
		fflush(stdout);
		return survived("read after munmap", *p);
	}
	printf("unknown request '%s'\n", req);
	return 2;
}
