/* workout: exercises malloc, qsort, printf/strtod, clocks and getrandom with deterministic output.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static uint64_t lcg_state = 42;

static uint32_t lcg(void)
{
	lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint32_t)(lcg_state >> 32);
}

static uint32_t fnv(uint32_t h, const void *p, size_t n)
{
	for (const unsigned char *c = p; n--; c++)
		h = (h ^ *c) * 16777619u;
	return h;
}

/* a size from 1 B to 4 MiB, mostly small */
static size_t pick_size(void)
{
	uint32_t r = lcg() % 100;

	if (r < 70)
		return 1 + lcg() % 4096;
	if (r < 99)
		return 1 + lcg() % (256 * 1024);
	return 1 + lcg() % (4 * 1024 * 1024);
}

static int intact(const unsigned char *p, size_t n, unsigned char v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return 0;
	return 1;
}

static void heap(void)
{
	enum { SLOTS = 64, ROUNDS = 3000 };
	unsigned char *slot[SLOTS] = {0}, tag[SLOTS] = {0};
	size_t size[SLOTS] = {0}, bytes = 0;
	unsigned mallocs = 0, reallocs = 0, frees = 0, bad = 0;

	for (int r = 0; r < ROUNDS; r++) {
		unsigned i = lcg() % SLOTS;
		size_t n = pick_size();
		unsigned char *p;

		if (!slot[i]) {
			p = malloc(n);
			mallocs++;
		} else if (lcg() % 3 == 0) {
			bad += !intact(slot[i], size[i], tag[i]);
			free(slot[i]);
			slot[i] = NULL;
			frees++;
			continue;
		} else {
			p = realloc(slot[i], n);
			reallocs++;
			bad += p && !intact(p, n < size[i] ? n : size[i], tag[i]);
		}
		if (!p) {
			printf("heap: allocation of %zu failed\n", n);
			exit(1);
		}
		tag[i] = (unsigned char)lcg();
		memset(p, tag[i], n);
		slot[i] = p;
		size[i] = n;
		bytes += n;
	}
	for (int i = 0; i < SLOTS; i++) {
		if (slot[i])
			bad += !intact(slot[i], size[i], tag[i]);
		free(slot[i]);
	}
	printf("heap: %u mallocs, %u reallocs, %u frees, %zu bytes, %u corrupt\n", mallocs,
	       reallocs, frees, bytes, bad);

	/* every power of two from 1 B to 8 MiB, grown and shrunk */
	bad = 0;
	for (size_t n = 1; n <= 8 * 1024 * 1024; n *= 2) {
		unsigned char *p = malloc(n), *q;

		if (!p)
			exit(1);
		memset(p, (int)n, n);
		if (!(q = realloc(p, 2 * n + 1)))
			exit(1);
		bad += !intact(q, n, (unsigned char)n);
		if (!(p = realloc(q, n / 2 + 1)))
			exit(1);
		bad += !intact(p, n / 2 + 1 < n ? n / 2 + 1 : n, (unsigned char)n);
		free(p);
	}
	printf("heap: power-of-two sizes %s\n", bad ? "corrupt" : "ok");
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

static void sort(void)
{
	enum { N = 10000 };
	static uint32_t v[N];
	uint64_t sum = 0;
	int sorted = 1;

	for (int i = 0; i < N; i++)
		v[i] = lcg();
	qsort(v, N, sizeof(v[0]), cmp_u32);
	for (int i = 0; i < N; i++) {
		sum = sum * 31 + v[i];
		sorted &= i == 0 || v[i - 1] <= v[i];
	}
	printf("qsort: %d values, %s, checksum %016llx\n", N, sorted ? "sorted" : "UNSORTED",
	       (unsigned long long)sum);
}

static double random_double(void)
{
	uint64_t bits;
	double d;

	do {
		bits = (uint64_t)lcg() << 32 | lcg();
		memcpy(&d, &bits, sizeof(d));
	} while (d != d || d - d != 0); /* skip NaN and infinities */
	return d;
}

static void floats(void)
{
	static const double fixed[] = {0.0,  -0.0, 1.0,	 0.1,	     -2.5,   1.0 / 3,
				       M_PI, 1e-5, 1e21, 123456.789, 5e-324, DBL_MAX};
	char buf[1024];
	uint32_t h = 2166136261u;
	int trips = 0;

	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		double d = fixed[i];

		printf("fmt: %g | %.17g | %e", d, d, d);
		if (d < 1e30) /* %f of DBL_MAX is 300 digits */
			printf(" | %f", d);
		putchar('\n');
	}
	printf("fmt: %g %g %g %f\n", INFINITY, -INFINITY, NAN, NAN);
	for (int i = 0; i < 2000; i++) {
		double d = random_double(), back;
		int n = snprintf(buf, sizeof(buf), "%g %.17g %e %f", d, d, d, d);

		h = fnv(h, buf, n < (int)sizeof(buf) ? (size_t)n : sizeof(buf));
		snprintf(buf, sizeof(buf), "%.17g", d);
		back = strtod(buf, NULL);
		trips += memcmp(&back, &d, sizeof(d)) == 0;
	}
	printf("fmt: 2000 random doubles, hash %08x\n", h);
	printf("strtod: %d/2000 round trips exact\n", trips);
	printf("strtod: %.17g %.17g %.17g\n", strtod("0.1", NULL), strtod("1e-320", NULL),
	       strtod("  -12.5e3xyz", NULL));
}

static void clocks(void)
{
	unsigned char rnd[64] = {0};
	struct timespec a, b;
	ssize_t n = getrandom(rnd, sizeof(rnd), 0);
	int nonzero = 0;

	for (size_t i = 0; i < sizeof(rnd); i++)
		nonzero |= rnd[i];
	printf("time: after 2020: %s\n", time(NULL) > 1600000000 ? "yes" : "no");
	printf("getrandom: %zd bytes, %s\n", n, nonzero ? "not all zero" : "all zero");
	clock_gettime(CLOCK_MONOTONIC, &a);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("monotonic: %s\n",
	       b.tv_sec > a.tv_sec || (b.tv_sec == a.tv_sec && b.tv_nsec >= a.tv_nsec)
		   ? "non-decreasing"
		   : "WENT BACKWARDS");
}

static void echo(void)
{
	char buf[4096];
	size_t total = 0;
	uint32_t h = 2166136261u;
	ssize_t n;

	while ((n = read(0, buf, sizeof(buf))) > 0) {
		total += (size_t)n;
		h = fnv(h, buf, (size_t)n);
	}
	printf("request: %zu bytes, fnv1a %08x%s\n", total, h, n < 0 ? ", read error" : "");
}

int main(void)
{
	heap();
	sort();
	floats();
	clocks();
	echo();
	puts("workout done");
	return 0;
}
