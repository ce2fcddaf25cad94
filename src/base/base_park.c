/* Threads parked between short jobs: a job handed to one rather than a thread made for it. */
#include <errno.h>

#include "base/base.h"

/* Made ahead (base_park_prepare) or by the first job that finds none idle; past PARKED at once
 * a job gets a thread of its own. A thread made here costs 30-130 us on these machines: a
 * start from disk asks for two (its fault server, its work after the response) and must not
 * make either on its way. */
#define PARKED 8
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static struct parked {
	struct base_job *job; /* the one it runs, NULL while parked */
	int started;
} threads[PARKED];

static void *parked_main(void *arg)
{
	struct parked *t = arg;
	pthread_setname_np(pthread_self(), "ember-parked");
	pthread_mutex_lock(&mu);
	for (;;) {
		while (!t->job)
			pthread_cond_wait(&cv, &mu);
		struct base_job *j = t->job;
		pthread_mutex_unlock(&mu);
		j->run(j->arg);
		pthread_mutex_lock(&mu);
		j->done = 1; /* the last touch of j: its owner may free it once it sees this */
		t->job = NULL;
		pthread_cond_broadcast(&cv);
	}
	return NULL;
}

/* with mu held: one more parked thread; NULL when every slot is taken or none can be made */
static struct parked *make_one(void)
{
	for (int i = 0; i < PARKED; i++) {
		if (threads[i].started)
			continue;
		pthread_t th;
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		threads[i].started = pthread_create(&th, &attr, parked_main, &threads[i]) == 0;
		pthread_attr_destroy(&attr);
		return threads[i].started ? &threads[i] : NULL;
	}
	return NULL;
}

/* with mu held: the idle ones */
static int idle(void)
{
	int n = 0;
	for (int i = 0; i < PARKED; i++)
		n += threads[i].started && !threads[i].job;
	return n;
}

void base_park_prepare(int n)
{
	pthread_mutex_lock(&mu);
	while (idle() < n && make_one())
		;
	pthread_mutex_unlock(&mu);
}

int base_park_start(struct base_job *j)
{
	struct parked *t = NULL;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < PARKED && !t; i++)
		if (threads[i].started && !threads[i].job)
			t = &threads[i];
	if (!t)
		t = make_one();
	j->parked = t != NULL;
	j->done = 0;
	if (t) {
		t->job = j;
		pthread_cond_broadcast(&cv);
	}
	pthread_mutex_unlock(&mu);
	return t ? 0 : pthread_create(&j->own, NULL, j->run, j->arg);
}

void base_park_wait(struct base_job *j)
{
	if (!j->parked) {
		pthread_join(j->own, NULL);
		return;
	}
	pthread_mutex_lock(&mu);
	while (!j->done)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}
