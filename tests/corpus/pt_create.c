/* pt_create: N threads created and joined, each writing its own slot; main prints their sum. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "req.h"

#define NTHREADS 16
#define ROUNDS	 200000

static uint64_t seed;
static uint64_t slot[NTHREADS];

static uint64_t work(long i)
{
	uint64_t x = seed + (uint64_t)i, sum = 0;

	for (int k = 0; k < ROUNDS; k++) {
		x = mix(x);
		sum += x >> 40;
	}
	return sum;
}

static void *run(void *arg)
{
	long i = (long)(intptr_t)arg;

	slot[i] = work(i);
	return (void *)(intptr_t)(i + 1);
}

int main(void)
{
	char req[256];
	pthread_t t[NTHREADS];
	uint64_t sum = 0, serial = 0;
	int joined = 0, rc;

	if (read_req(req, sizeof(req)) < 0)
		return 1;
	seed = req_seed(req);
	for (long i = 0; i < NTHREADS; i++) {
		rc = pthread_create(&t[i], NULL, run, (void *)(intptr_t)i);
		if (rc) {
			fprintf(stderr, "pthread_create: %s\n", strerror(rc));
			return 1;
		}
	}
	for (long i = 0; i < NTHREADS; i++) {
		void *ret;

		rc = pthread_join(t[i], &ret);
		if (rc) {
			fprintf(stderr, "pthread_join: %s\n", strerror(rc));
			return 1;
		}
		joined += (intptr_t)ret == i + 1;
	}
	for (long i = 0; i < NTHREADS; i++) {
		sum += slot[i];
		serial += work(i);
	}
	printf("pt_create: request \"%s\"\n", req);
	printf("threads joined with their own return value: %d of %d\n", joined, NTHREADS);
	printf("sum of the slots: %llu\n", (unsigned long long)sum);
	printf("equal to a serial run: %s\n", sum == serial ? "yes" : "no");
	return 0;
}
