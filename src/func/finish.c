/* The work a cold start leaves after its run: done on a parked thread once the invocation has
 * returned, with cold_lock held, so that the request does not wait for it (the next one does). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cold/cold_land.h"
#include "func/func.h"

/* the work handed to it (fn->finish_next) */
static void *finish_main(void *arg)
{
	struct ember_function *fn = arg;
	pthread_mutex_lock(&fn->cold_lock); /* the invocation's is given back first */
	struct func_finish *f = fn->finish_next;
	fn->finish_next = NULL;
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

/* the last work's thread let go: it left cold_lock already (its work ended: finishing is 0,
 * which every cold start waits for), so this waits for nothing that needs the lock */
static void wait_finisher(struct ember_function *fn)
{
	if (!fn->has_finisher)
		return;
	base_park_wait(&fn->finisher);
	fn->has_finisher = 0;
}

void func_finish_later(struct func_finish *f)
{
	struct ember_function *fn = f->fn;
	fn->finishing = 1;
	wait_finisher(fn);
	fn->finish_next = f;
	/* a thread parked ahead (start_ahead): none made on the request's path */
	fn->finisher = (struct base_job){.run = finish_main, .arg = fn};
	if (base_park_start(&fn->finisher) == 0) {
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
	wait_finisher(fn);
}

void ember_settle(struct ember_function *fn)
{
	pthread_mutex_lock(&fn->cold_lock);
	func_finish_wait(fn);
	pthread_mutex_unlock(&fn->cold_lock);
}
