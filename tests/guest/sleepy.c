/* sleepy: sleeps 100 ms with nanosleep and 50 ms with clock_nanosleep(CLOCK_MONOTONIC). */
#include <stdio.h>
#include <time.h>

int main(void)
{
	struct timespec t0, t1, d1 = {0, 100000000}, d2 = {0, 50000000};
	long ms;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (nanosleep(&d1, NULL) != 0 || clock_nanosleep(CLOCK_MONOTONIC, 0, &d2, NULL) != 0) {
		puts("sleep failed");
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	fprintf(stderr, "slept %ld ms\n", ms);
	if (ms < 150)
		printf("slept too short: %ld ms\n", ms);
	else
		puts("slept");
	return 0;
}
