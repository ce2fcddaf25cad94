/* pt_mutex: producers and consumers around a bounded queue, a mutex and two condition variables. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "req.h"

#define NPROD 3
#define NCONS 3
#define ITEMS 2000 /* per producer: each handover is a futex call, an exit in a virtine */
#define QLEN  8

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static uint64_t queue[QLEN];
static unsigned head, count, producers_done;
static uint64_t consumed, total;
static uint64_t seed;

static uint64_t item(long p, long k)
{
	return mix(seed ^ ((uint64_t)p << 32 | (uint64_t)k)) >> 20;
}

static void *produce(void *arg)
{
	long p = (long)(intptr_t)arg;

	for (long k = 0; k < ITEMS; k++) {
		pthread_mutex_lock(&lock);
		while (count == QLEN)
			pthread_cond_wait(&not_full, &lock);
		queue[(head + count++) % QLEN] = item(p, k);
		pthread_cond_signal(&not_empty);
		pthread_mutex_unlock(&lock);
	}
	pthread_mutex_lock(&lock);
	if (++producers_done == NPROD)
		pthread_cond_broadcast(&not_empty);
	pthread_mutex_unlock(&lock);
	return NULL;
}

static void *consume(void *arg)
{
	uint64_t mine = 0, n = 0;

	(void)arg;
	pthread_mutex_lock(&lock);
	for (;;) {
		while (count == 0 && producers_done < NPROD)
			pthread_cond_wait(&not_empty, &lock);
		if (count == 0)
			break;
		mine += queue[head];
		head = (head + 1) % QLEN;
		count--;
		n++;
		pthread_cond_signal(&not_full);
	}
	consumed += n;
	total += mine;
	pthread_mutex_unlock(&lock);
	return NULL;
}

int main(void)
{
	char req[256];
	pthread_t t[NPROD + NCONS];
	uint64_t want = 0;
	int rc;

	if (read_req(req, sizeof(req)) < 0)
		return 1;
	seed = req_seed(req);
	for (long i = 0; i < NPROD + NCONS; i++) {
		rc =
		    pthread_create(&t[i], NULL, i < NPROD ? produce : consume, (void *)(intptr_t)i);
		if (rc) {
			fprintf(stderr, "pthread_create: %s\n", strerror(rc));
			return 1;
		}
	}
	for (int i = 0; i < NPROD + NCONS; i++)
		pthread_join(t[i], NULL);
	for (long p = 0; p < NPROD; p++)
		for (long k = 0; k < ITEMS; k++)
			want += item(p, k);
	printf("pt_mutex: request \"%s\"\n", req);
	printf("%d producers, %d consumers, queue of %d\n", NPROD, NCONS, QLEN);
	printf("items consumed: %llu of %d\n", (unsigned long long)consumed, NPROD * ITEMS);
	printf("sum consumed: %llu\n", (unsigned long long)total);
	printf("equal to the sum produced: %s\n", total == want ? "yes" : "no");
	return 0;
}
