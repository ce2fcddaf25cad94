/* The work a cold start leaves after its run: done on a thread of its own once the invocation has
 * returned, with cold_lock held, so that the request does not wait for it (the next one does). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "func/func.h"

static void *finish_main(void *arg)
{
	struct func_finish *f = arg;
	struct ember_function *fn = f->fn;
	pthread_mutex_lock(&fn->cold_lock); /* the invocation's is given back first */
	f->work(f);
	fn->finishing = 0;
	pthread_cond_broadcast(&fn->cold_done);
	pthread_mutex_unlock(&fn->cold_lock);
	free(f);
	return NULL;
}

void func_finish_later(struct func_finish *f)
{
	struct ember_function *fn = f->fn;
	func_finish_join(fn); /* a load has one cold start: none is left, but never two threads */
	fn->finishing = 1;
	if (pthread_create(&fn->finisher, NULL, finish_main, f) == 0) {
		fn->has_finisher = 1;
		return;
	}
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
	pthread_join(fn->finisher, NULL);
	fn->has_finisher = 0;
}

void ember_settle(struct ember_function *fn)
{
	pthread_mutex_lock(&fn->cold_lock);
	func_finish_wait(fn);
	pthread_mutex_unlock(&fn->cold_lock);
}
