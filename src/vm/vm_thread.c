/* A vCPU thread: runs calls for a machine that must be driven from one thread (ptrace). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "vm/vm_impl.h"

struct vm_thread {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	void (*fn)(void *);
	void *arg;
	int busy, quit;
};

static void *loop(void *p)
{
	struct vm_thread *t = p;
	pthread_mutex_lock(&t->mu);
	for (;;) {
		while (!t->busy && !t->quit)
			pthread_cond_wait(&t->cv, &t->mu);
		if (t->quit && !t->busy)
			break;
		pthread_mutex_unlock(&t->mu);
		t->fn(t->arg);
		pthread_mutex_lock(&t->mu);
		t->busy = 0;
		pthread_cond_broadcast(&t->cv);
	}
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

int vm_thread_start(struct vm_thread **out)
{
	struct vm_thread *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->cv, NULL);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	int rc = pthread_create(&t->th, &attr, loop, t);
	pthread_attr_destroy(&attr);
	if (rc) {
		free(t);
		return -rc;
	}
	*out = t;
	return 0;
}

/* Runs fn(arg) on the thread and waits for it; calls from several threads take turns. */
void vm_thread_call(struct vm_thread *t, void (*fn)(void *), void *arg)
{
	pthread_mutex_lock(&t->mu);
	while (t->busy)
		pthread_cond_wait(&t->cv, &t->mu);
	t->fn = fn;
	t->arg = arg;
	t->busy = 1;
	pthread_cond_broadcast(&t->cv);
	while (t->busy)
		pthread_cond_wait(&t->cv, &t->mu);
	pthread_mutex_unlock(&t->mu);
}

void vm_thread_stop(struct vm_thread *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&t->mu);
	t->quit = 1;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->mu);
	pthread_join(t->th, NULL);
	pthread_cond_destroy(&t->cv);
	pthread_mutex_destroy(&t->mu);
	free(t);
}
