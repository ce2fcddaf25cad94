/* pt_tls: __thread variables (zeroed and initialised) and pthread keys are each thread's own. */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "req.h"

#define NTHREADS 8

static __thread uint64_t tls_acc;  /* .tbss: zero in every new thread */
static __thread int tls_init = 42; /* .tdata: 42 in every new thread */
static __thread char tls_name[32];
static pthread_key_t key;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int destructed;
static uint64_t seed;

static uintptr_t addr[NTHREADS];
static uint64_t result[NTHREADS];
static int saw_fresh[NTHREADS], kept[NTHREADS];

static void destroy(void *v)
{
	pthread_mutex_lock(&lock);
	destructed += v != NULL;
	pthread_mutex_unlock(&lock);
}

static void *run(void *arg)
{
	long i = (long)(intptr_t)arg;
	char want[32];

	saw_fresh[i] = tls_acc == 0 && tls_init == 42 && tls_name[0] == '\0';
	tls_init = (int)i;
	snprintf(tls_name, sizeof(tls_name), "thread %ld", i);
	snprintf(want, sizeof(want), "thread %ld", i);
	pthread_setspecific(key, &tls_init);
	for (int k = 0; k < 100000; k++) {
		tls_acc += mix(seed + (uint64_t)i * 1000003 + (uint64_t)k) >> 48;
		if (k % 10000 == 0)
			sched_yield(); /* let the others write theirs in between */
	}
	addr[i] = (uintptr_t)&tls_acc;
	result[i] = tls_acc;
	kept[i] = tls_init == i && !strcmp(tls_name, want) && pthread_getspecific(key) == &tls_init;
	return NULL;
}

int main(void)
{
	char req[256];
	pthread_t t[NTHREADS];
	int fresh = 0, ok = 0, distinct = 1, rc;

	if (pthread_key_create(&key, destroy))
		return 1;
	tls_init = 7; /* main's own copy, set during the initialisation */
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
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	printf("pt_tls: request \"%s\"\n", req);
	for (int i = 0; i < NTHREADS; i++) {
		fresh += saw_fresh[i];
		ok += kept[i];
		for (int j = 0; j < i; j++)
			distinct &= addr[i] != addr[j] && addr[i] != (uintptr_t)&tls_acc;
		printf("thread %d: sum %llu\n", i, (unsigned long long)result[i]);
	}
	printf("threads that started with fresh TLS: %d of %d\n", fresh, NTHREADS);
	printf("threads that kept their own values: %d of %d\n", ok, NTHREADS);
	printf("TLS addresses distinct: %s\n", distinct ? "yes" : "no");
	printf("key destructors run: %d\n", destructed);
	printf("main's tls_init still 7, tls_acc still 0: %s\n",
	       tls_init == 7 && tls_acc == 0 ? "yes" : "no");
	return 0;
}
