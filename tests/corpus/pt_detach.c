/* pt_detach: detached threads that report through a condition variable; pthread_once; a barrier. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "req.h"

#define NTHREADS 8

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_barrier_t barrier;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;
static atomic_int once_runs, arrived, saw_all, serial;
static int finished;
static uint64_t seed, sum;

static void init_once(void)
{
	atomic_fetch_add(&once_runs, 1);
}

static void *run(void *arg)
{
	long i = (long)(intptr_t)arg;
	uint64_t x = seed + (uint64_t)i;

	if (i % 2) /* the odd ones detach themselves; the even ones were created detached */
		pthread_detach(pthread_self());
	pthread_once(&once, init_once);
	atomic_fetch_add(&arrived, 1);
	if (pthread_barrier_wait(&barrier) == PTHREAD_BARRIER_SERIAL_THREAD)
		atomic_fetch_add(&serial, 1);
	atomic_fetch_add(&saw_all, atomic_load(&arrived) == NTHREADS);
	for (int k = 0; k < 50000; k++)
		x = mix(x);
	pthread_mutex_lock(&lock);
	sum += x >> 16;
	if (++finished == NTHREADS)
		pthread_cond_signal(&done_cv);
	pthread_mutex_unlock(&lock);
	return NULL;
}

int main(void)
{
	char req[256];
	pthread_attr_t detached;
	pthread_t t;
	uint64_t want = 0;
	int rc;

	if (read_req(req, sizeof(req)) < 0)
		return 1;
	seed = req_seed(req);
	pthread_barrier_init(&barrier, NULL, NTHREADS);
	pthread_attr_init(&detached);
	pthread_attr_setdetachstate(&detached, PTHREAD_CREATE_DETACHED);
	for (long i = 0; i < NTHREADS; i++) {
		rc = pthread_create(&t, i % 2 ? NULL : &detached, run, (void *)(intptr_t)i);
		if (rc) {
			fprintf(stderr, "pthread_create: %s\n", strerror(rc));
			return 1;
		}
	}
	pthread_mutex_lock(&lock);
	while (finished < NTHREADS)
		pthread_cond_wait(&done_cv, &lock);
	pthread_mutex_unlock(&lock);
	for (long i = 0; i < NTHREADS; i++) {
		uint64_t x = seed + (uint64_t)i;

		for (int k = 0; k < 50000; k++)
			x = mix(x);
		want += x >> 16;
	}
	printf("pt_detach: request \"%s\"\n", req);
	printf("detached threads finished: %d of %d\n", finished, NTHREADS);
	printf("pthread_once ran its routine: %d time(s)\n", atomic_load(&once_runs));
	printf("threads past the barrier that saw all %d arrive: %d\n", NTHREADS,
	       atomic_load(&saw_all));
	printf("barrier serial threads: %d\n", atomic_load(&serial));
	printf("sum equal to a serial run: %s\n", sum == want ? "yes" : "no");
	return 0;
}
