/* pt_pool: a pool of worker threads started before the request is read, and used after it. */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "req.h"

#define NWORKERS 4
#define NTASKS	 64

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work_cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;
static int next_task = NTASKS, completed, quit, waiting;
static uint64_t seed, result[NTASKS];

static uint64_t task(int i)
{
	uint64_t x = seed ^ (uint64_t)i << 48;

	for (int k = 0; k < 20000; k++)
		x = mix(x);
	return x;
}

static void *worker(void *arg)
{
	int i;

	(void)arg;
	pthread_mutex_lock(&lock);
	for (;;) {
		waiting++;
		while (next_task == NTASKS && !quit)
			pthread_cond_wait(&work_cv, &lock);
		waiting--;
		if (next_task == NTASKS)
			break;
		i = next_task++;
		pthread_mutex_unlock(&lock);
		result[i] = task(i);
		pthread_mutex_lock(&lock);
		if (++completed == NTASKS)
			pthread_cond_signal(&done_cv);
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

int main(void)
{
	char req[256];
	pthread_t t[NWORKERS];
	uint64_t x = 0, want = 0;
	int idle, joined = 0, rc;

	for (int i = 0; i < NWORKERS; i++) {
		rc = pthread_create(&t[i], NULL, worker, NULL);
		if (rc) {
			fprintf(stderr, "pthread_create: %s\n", strerror(rc));
			return 1;
		}
	}
	/* the snapshot is taken with every worker asleep on work_cv */
	pthread_mutex_lock(&lock);
	while (waiting < NWORKERS) {
		pthread_mutex_unlock(&lock);
		sched_yield();
		pthread_mutex_lock(&lock);
	}
	idle = waiting;
	pthread_mutex_unlock(&lock);
	if (read_req(req, sizeof(req)) < 0)
		return 1;

	pthread_mutex_lock(&lock);
	seed = req_seed(req);
	next_task = 0;
	pthread_cond_broadcast(&work_cv);
	while (completed < NTASKS)
		pthread_cond_wait(&done_cv, &lock);
	quit = 1;
	pthread_cond_broadcast(&work_cv);
	pthread_mutex_unlock(&lock);
	for (int i = 0; i < NWORKERS; i++)
		joined += pthread_join(t[i], NULL) == 0;
	for (int i = 0; i < NTASKS; i++) {
		x ^= result[i];
		want ^= task(i);
	}
	printf("pt_pool: request \"%s\"\n", req);
	printf("workers waiting before the request: %d of %d\n", idle, NWORKERS);
	printf("tasks completed: %d of %d\n", completed, NTASKS);
	printf("combined result: %016llx\n", (unsigned long long)x);
	printf("equal to a serial run: %s\n", x == want ? "yes" : "no");
	printf("workers joined: %d\n", joined);
	return 0;
}
