/* farmap: PROT_NONE reservations larger than guest memory (Go's way of taking address space),
 * after the request is read.
 *   farmap        reserve 64 GiB and 100 GiB, punch a hole, map a page into it MAP_FIXED, unmap
 *                 all: one "name=value" line each, the same natively
 *   farmap touch  make one page of a 64 GiB reservation read-write: "touch=<errno name or 0>"
 *   farmap keep   reserve 64 GiB and keep it: "kept=<address>", which is the same in every
 *                 invocation when the last one's reservation went with its reset */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define GIB  (1UL << 30)
#define NONE (MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE)

static char *reserve(size_t n)
{
	char *p = mmap(NULL, n, PROT_NONE, NONE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static int all(char *a, char *b)
{
	int apart = a && b && (b >= a + 64 * GIB || a >= b + 100 * GIB);
	printf("reserve64g=%d\nreserve100g=%d\napart=%d\n", a != NULL, b != NULL, apart);
	if (!a || !b)
		return 1;
	printf("hole=%d\n", munmap(a + GIB, GIB) == 0);
	char *f = mmap(a + GIB, 4096, PROT_NONE, NONE | MAP_FIXED, -1, 0);
	printf("fixed=%d\n", f == a + GIB);
	printf("dontneed=%d\n", madvise(a, 4096, MADV_DONTNEED) == 0);
	printf("unmap=%d\n", munmap(a, 64 * GIB) == 0 && munmap(b, 100 * GIB) == 0);
	return 0;
}

int main(int argc, char **argv)
{
	char req[64];
	if (read(0, req, sizeof(req)) < 0)
		return 2;
	const char *mode = argc > 1 ? argv[1] : "";
	if (!strcmp(mode, "touch")) {
		char *a = reserve(64 * GIB);
		if (!a)
			return 1;
		int rc = mprotect(a + 32 * GIB, 4096, PROT_READ | PROT_WRITE);
		printf("touch=%s\n", rc ? strerror(errno) : "0");
		return 0;
	}
	if (!strcmp(mode, "keep")) {
		char *a = reserve(64 * GIB);
		printf("kept=%p\n", (void *)a);
		return a ? 0 : 1;
	}
	return all(reserve(64 * GIB), reserve(100 * GIB));
}
