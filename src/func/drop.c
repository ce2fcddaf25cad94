/* The virtines of a function that keeps none ready (ember_config.no_ready), destroyed after their
 * run on a thread of their own: off the request's path, as a kept one's reset is not on it. */
#include <stdlib.h>

#include "func/func.h"

/* virtines waiting at most: past them the caller destroys its own (invocations that end faster
 * than one thread destroys them wait as before, rather than hold ever more guest memory) */
#define DROPS_MAX 16

static void *drop_main(void *arg)
{
	struct func_drops *d = arg;
	pthread_setname_np(pthread_self(), "ember-drop");
	pthread_mutex_lock(&d->mu);
	for (;;) {
		while (!d->n && !d->stop)
			pthread_cond_wait(&d->cv, &d->mu);
		if (!d->n)
			break; /* stopped, nothing left */
		struct virtine *v = d->v[--d->n];
		pthread_mutex_unlock(&d->mu);
		virtine_destroy(v); /* its memory back to the budget, whose waiters it wakes */
		pthread_mutex_lock(&d->mu);
	}
	pthread_mutex_unlock(&d->mu);
	return NULL;
}

/* with d->mu held */
static void start(struct func_drops *d)
{
	if (!d->started && !d->stop && !pthread_create(&d->thread, NULL, drop_main, d))
		d->started = 1;
}

void func_drops_start(struct func_drops *d)
{
	pthread_mutex_lock(&d->mu);
	start(d);
	pthread_mutex_unlock(&d->mu);
}

void func_drop(struct ember_function *fn, struct virtine *v)
{
	struct func_drops *d = &fn->drops;
	pthread_mutex_lock(&d->mu);
	start(d); /* when the load could not */
	if (d->started && d->n == d->cap && d->cap < DROPS_MAX) {
		size_t cap = d->cap ? 2 * d->cap : DROPS_MAX / 2;
		struct virtine **grown = realloc(d->v, cap * sizeof(*grown));
		if (grown) {
			d->v = grown;
			d->cap = cap;
		}
	}
	int queued = d->started && d->n < d->cap;
	if (queued) {
		d->v[d->n++] = v;
		pthread_cond_signal(&d->cv);
	}
	pthread_mutex_unlock(&d->mu);
	if (!queued)
		virtine_destroy(v); /* no thread, no memory for it, or too many waiting: now */
}

void func_drops_init(struct func_drops *d)
{
	pthread_mutex_init(&d->mu, NULL);
	base_cond_init(&d->cv);
}

void func_drops_fini(struct func_drops *d)
{
	pthread_mutex_lock(&d->mu);
	d->stop = 1;
	pthread_cond_signal(&d->cv);
	pthread_mutex_unlock(&d->mu);
	if (d->started)
		pthread_join(d->thread, NULL); /* it destroys what is left first */
	d->started = 0;
	free(d->v);
	d->v = NULL;
	pthread_mutex_destroy(&d->mu);
	pthread_cond_destroy(&d->cv);
}
