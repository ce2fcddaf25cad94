/* The cost of a guest's first touch of a page, timed inside (docs/benchmarks.md, CPython's
 * initialisation): N fresh anonymous pages written once, then again, then N others read once,
 * in microseconds per page on stderr; the request's read after it (the snapshot point), and
 * then in each invocation the first N pages written again (a page of the snapshot written after
 * a reset: a first touch in a restored machine, nearly free in a warm one). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static volatile char *fresh(long n)
{
	void *p = mmap(NULL, (size_t)n * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	return p;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000, sum = 0;
	char req[1];
	if (n < 1)
		return 1;
	volatile char *w = fresh(n), *r = fresh(n);
	double t0 = now_us();
	for (long i = 0; i < n; i++)
		w[i * 4096] = 1;
	double t1 = now_us();
	for (long i = 0; i < n; i++)
		w[i * 4096 + 64] = 2;
	double t2 = now_us();
	for (long i = 0; i < n; i++)
		sum += r[i * 4096];
	double t3 = now_us();
	fprintf(stderr,
		"%ld pages: first write %.2f us/page, second write %.2f, first read %.2f%s\n", n,
		(t1 - t0) / n, (t2 - t1) / n, (t3 - t2) / n, sum ? " (not zero!)" : "");
	if (read(0, req, 1) < 0)
		return 1;
	double t4 = now_us();
	for (long i = 0; i < n; i++)
		w[i * 4096 + 128] = 3;
	fprintf(stderr, "%ld pages of the snapshot written in the invocation: %.2f us/page\n", n,
		(now_us() - t4) / n);
	return 0;
}
