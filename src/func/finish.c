/* The work a cold start leaves after its run: done on a thread of its own once the invocation has
 * returned, with cold_lock held, so that the request does not wait for it (the next one does). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cold/cold_land.h"
#include "func/func.h"

/* the work handed to it (fn->finish_next), or none when the thread started ahead is let go */
static void *finish_main(void *arg)
{
	struct ember_function *fn = arg;
	pthread_mutex_lock(&fn->cold_lock); /* the invocation's is given back first */
	while (!fn->finish_next && fn->finish_waiting)
		pthread_cond_wait(&fn->finish_cv, &fn->cold_lock);
	struct func_finish *f = fn->finish_next;
	fn->finish_next = NULL;
	fn->finish_waiting = 0;
	if (f) {
		f->work(f);
		free(f);
	}
	fn->finishing = 0;
	pthread_cond_broadcast(&fn->cold_done);
	pthread_mutex_unlock(&fn->cold_lock);
	/* the next whole read's landing, after the response and with no one waiting for it */
	cold_land_make();
	return NULL;
}

static void join_thread(struct ember_function *fn)
{
	if (!fn->has_finisher)
		return;
	pthread_join(fn->finisher, NULL);
	fn->has_finisher = 0;
}

void func_finish_ahead(struct ember_function *fn)
{
	if (fn->has_finisher)
		return;
	fn->finish_waiting = 1;
	if (pthread_create(&fn->finisher, NULL, finish_main, fn) == 0)
		fn->has_finisher = 1;
	else
		fn->finish_waiting = 0; /* made when the work comes */
}

void func_finish_later(struct func_finish *f)
{
	struct ember_function *fn = f->fn;
	fn->finishing = 1;
	if (fn->finish_waiting) { /* started ahead: no thread made on the request's path */
		fn->finish_next = f;
		pthread_cond_signal(&fn->finish_cv);
		return;
	}
	/* a load has one cold start: none is left, but never two threads (finish_waiting is 0
	 * under cold_lock: any thread of this load has ended or is ending) */
	join_thread(fn);
	fn->finish_next = f;
	if (pthread_create(&fn->finisher, NULL, finish_main, fn) == 0) {
		fn->has_finisher = 1;
		return;
	}
	fn->finish_next = NULL;
	f->work(f); /* no thread: now, on the invocation's */
	fn->finishing = 0;
	free(f);
}

void func_finish_wait(struct ember_function *fn)
{
	while (fn->finishing)
		pthread_cond_wait(&fn->cold_done, &fn->cold_lock);
}

void func_finish_join(struct ember_function *fn)
{
	if (!fn->has_finisher)
		return;
	/* one started ahead that no work came to is let go; finish_waiting is read and written
	 * under cold_lock only, as the thread may be ending its work now (unload: no invocation
	 * holds cold_lock) */
	pthread_mutex_lock(&fn->cold_lock);
	fn->finish_waiting = 0;
	pthread_cond_signal(&fn->finish_cv);
	pthread_mutex_unlock(&fn->cold_lock);
	join_thread(fn);
}

void ember_settle(struct ember_function *fn)
{
	pthread_mutex_lock(&fn->cold_lock);
	func_finish_wait(fn);
	pthread_mutex_unlock(&fn->cold_lock);
}
