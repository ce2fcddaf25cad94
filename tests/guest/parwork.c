/* parwork: CPU-bound work split over two threads, a fixed amount each (the request: rounds). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define NTHREADS 2

struct share {
	uint64_t seed, rounds, sum;
};

/* a dependent chain of a 64-bit LCG step with an xorshift out: no memory, no system call */
static void *work(void *arg)
{
	struct share *s = arg;
	uint64_t x = s->seed, sum = 0;

	for (uint64_t i = 0; i < s->rounds; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		x ^= x >> 29;
		sum += x >> 40;
	}
	s->sum = sum;
	return NULL;
}

/* Prints "parwork R sum S": each of the two threads ran R rounds from its own seed. The request
 * is read first (the snapshot point); the threads are made per invocation. */
int main(void)
{
	char req[32];
	ssize_t n = read(0, req, sizeof(req) - 1);

	if (n < 0)
		return 1;
	req[n] = 0;
	long long rounds = strtoll(req, NULL, 10);
	if (rounds < 0)
		return 2;
	struct share sh[NTHREADS];
	pthread_t t[NTHREADS];
	uint64_t sum = 0;
	for (int i = 0; i < NTHREADS; i++) {
		sh[i] = (struct share){.seed = (uint64_t)i + 1, .rounds = (uint64_t)rounds};
		if (pthread_create(&t[i], NULL, work, &sh[i]))
			return 3;
	}
	for (int i = 0; i < NTHREADS; i++) {
		if (pthread_join(t[i], NULL))
			return 3;
		sum += sh[i].sum;
	}
	printf("parwork %lld sum %llu\n", rounds, (unsigned long long)sum);
	return 0;
}
