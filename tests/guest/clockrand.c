/* Prints what each request sees of the clocks and of getrandom, for the tests of freshness:
 * monotonic and realtime nanoseconds, and 16 random bytes in hex. */
#include <stdio.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static long long ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(void)
{
	unsigned char before[16];
	getrandom(before, sizeof(before), 0); /* drawn in init: the same in every request */
	char buf[64];
	while (read(0, buf, sizeof(buf)) > 0)
		;
	unsigned char r[16];
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return 1;
	long long m1 = ns(CLOCK_MONOTONIC), m2 = ns(CLOCK_MONOTONIC);
	printf("mono %lld\nreal %lld\nrandom ", m1, ns(CLOCK_REALTIME));
	for (int i = 0; i < 16; i++)
		printf("%02x", r[i]);
	printf("\n%s\n", m2 >= m1 ? "forward" : "backward");
	return 0;
}
