/* threadbench: creates and joins K threads one after the other (K the request), timed inside. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void *nothing(void *arg)
{
	return arg;
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Prints "threads K ns T": T the nanoseconds the K creates and joins took on the program's own
 * monotonic clock (the request's read, the start and the exit are outside it). The request is
 * read first, so a snapshot taken at that read serves every K. */
int main(void)
{
	char req[32];
	ssize_t n = read(0, req, sizeof(req) - 1);

	if (n < 0)
		return 1;
	req[n] = 0;
	long k = strtol(req, NULL, 10);
	if (k < 0 || k > 1000000)
		return 2;
	long long t0 = now_ns();
	for (long i = 0; i < k; i++) {
		pthread_t t;
		void *ret = NULL;
		if (pthread_create(&t, NULL, nothing, (void *)(i + 1)) || pthread_join(t, &ret) ||
		    ret != (void *)(i + 1))
			return 3;
	}
	long long t1 = now_ns();
	printf("threads %ld ns %lld\n", k, t1 - t0);
	return 0;
}
