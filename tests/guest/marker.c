/* marker: checks that nothing written by one request is visible in the next, then writes some;
 * three pages it writes are left read-only, inaccessible and unmapped for the reset to find. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define AREA   8192
#define BIG    (256 * 1024) /* above both libcs' mmap threshold */
#define MARKER "EMBER-LEAK-MARKER-7f3a91"

static char static_area[AREA];
/* never written at init, so not in the snapshot: each request writes them and then changes them
 * (the reset maps them as they were, and must find what was written all the same) */
static char left_ro[4096] __attribute__((aligned(4096)));
static char left_none[4096] __attribute__((aligned(4096)));
static char left_gone[4096] __attribute__((aligned(4096)));
static char *heap_before, *mmap_before;
static volatile char *stack_area; /* an array in main's frame, which lives across requests */
static int leaks;

static void check(const volatile char *p, size_t n, const char *where)
{
	if (memmem((const char *)p, n, MARKER, sizeof(MARKER) - 1)) {
		printf("LEAK %s\n", where);
		leaks++;
	}
}

static void mark(volatile char *p, size_t n)
{
	for (size_t off = 0; off + sizeof(MARKER) <= n; off += 512)
		memcpy((char *)p + off, MARKER, sizeof(MARKER) - 1);
}

/* hides where p points, so the compiler lets memory it thinks uninitialised be read */
static void *opaque(void *p)
{
	__asm__ volatile("" : "+r"(p) : : "memory");
	return p;
}

/* a frame below main's at the same depth each call: checks it, or fills it with markers */
__attribute__((noinline)) static void deep_stack(int write)
{
	char area[AREA], *p = opaque(area);

	if (write)
		mark(p, sizeof(area));
	else
		check(p, sizeof(area), "deep-stack");
}

int main(void)
{
	volatile char frame[AREA];
	char buf[4096], *heap_after, *big_after;
	ssize_t n;

	memset((char *)frame, 0, sizeof(frame));
	stack_area = frame;
	heap_before = calloc(1, AREA);
	mmap_before = mmap(NULL, AREA, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!heap_before || mmap_before == MAP_FAILED)
		return 1;

	while ((n = read(0, buf, sizeof(buf))) > 0)
		;
	if (n < 0)
		return 1;
	heap_after = opaque(malloc(AREA));
	big_after = opaque(malloc(BIG));
	if (!heap_after || !big_after)
		return 1;

	check(static_area, AREA, "static");
	check(heap_before, AREA, "heap-before");
	check(mmap_before, AREA, "mmap-before");
	check(heap_after, AREA, "heap-after");
	check(big_after, BIG, "big-heap-after");
	check(stack_area, AREA, "stack");
	deep_stack(0);
	check(left_ro, sizeof(left_ro), "left-read-only");
	check(left_none, sizeof(left_none), "left-inaccessible");
	check(left_gone, sizeof(left_gone), "left-unmapped");
	if (!leaks)
		puts("clean");

	mark(static_area, AREA);
	mark(heap_before, AREA);
	mark(mmap_before, AREA);
	mark(heap_after, AREA);
	mark(big_after, BIG);
	mark(stack_area, AREA);
	deep_stack(1);
	mark(left_ro, sizeof(left_ro));
	mark(left_none, sizeof(left_none));
	mark(left_gone, sizeof(left_gone));
	if (mprotect(left_ro, sizeof(left_ro), PROT_READ) ||
	    mprotect(left_none, sizeof(left_none), PROT_NONE) ||
	    munmap(left_gone, sizeof(left_gone)))
		return 1;
	/* freed, so that without a reset the next request's malloc would hand them out again */
	free(heap_after);
	free(big_after);
	return 0;
}
