/* slowinit: spends about 300 ms computing a table before reading stdin, then answers at once. */
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define INIT_MS 300

static uint32_t table[4096];

static long elapsed_ms(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

int main(void)
{
	struct timespec t0;
	uint32_t h = 2166136261u;
	unsigned long rounds = 0;
	char buf[4096];
	ssize_t n;

	/* rounds of hashing into the table until INIT_MS have passed */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 1 << 16; i++) {
			h = (h ^ (uint32_t)i) * 16777619u;
			table[h % 4096] += h;
		}
		rounds++;
	} while (elapsed_ms(&t0) < INIT_MS);

	while ((n = read(0, buf, sizeof(buf))) > 0)
		;
	h = 0;
	for (int i = 0; i < 4096; i++)
		h = h * 31 + table[i];
	printf("ready %s\n", rounds > 0 && n == 0 ? "yes" : "no");
	return 0;
}
