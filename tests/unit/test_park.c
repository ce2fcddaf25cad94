/* Parked threads (base_park.c): a job runs on a thread made ahead, that thread runs the next job
 * too, a wait returns only once its job has ended, and more jobs at once than there are parked
 * threads each still run, at the same time. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <string.h>

#include "base/base.h"

#define MANY 12 /* more than base_park.c's parked threads */

struct gate {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int open, running, ran;
	pthread_t self;
};

static struct gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0};

/* counts itself running, then waits for the gate: every job of a batch is running at once
 * before any ends */
static void *gated(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&g.mu);
	g.running++;
	pthread_cond_broadcast(&g.cv);
	while (!g.open)
		pthread_cond_wait(&g.cv, &g.mu);
	g.ran++;
	g.self = pthread_self();
	pthread_mutex_unlock(&g.mu);
	return NULL;
}

static void reset(int open)
{
	pthread_mutex_lock(&g.mu);
	g.open = open;
	g.running = g.ran = 0;
	pthread_mutex_unlock(&g.mu);
}

static void open_gate(void)
{
	pthread_mutex_lock(&g.mu);
	g.open = 1;
	pthread_cond_broadcast(&g.cv);
	pthread_mutex_unlock(&g.mu);
}

static void wait_running(int n)
{
	pthread_mutex_lock(&g.mu);
	while (g.running < n)
		pthread_cond_wait(&g.cv, &g.mu);
	pthread_mutex_unlock(&g.mu);
}

static void one_job_on_a_parked_thread_then_another_on_the_same(void **state)
{
	(void)state;
	base_park_prepare(1);
	reset(1);
	struct base_job j = {.run = gated};
	assert_int_equal(base_park_start(&j), 0);
	assert_true(j.parked);
	base_park_wait(&j);
	assert_true(j.done);
	assert_int_equal(g.ran, 1);
	pthread_t first = g.self;
	assert_false(pthread_equal(first, pthread_self()));
	/* the thread is parked again: the next job, alone, runs on a thread that ran one already */
	struct base_job k = {.run = gated};
	assert_int_equal(base_park_start(&k), 0);
	base_park_wait(&k);
	assert_int_equal(g.ran, 2);
	assert_true(k.parked);
	assert_true(pthread_equal(g.self, first));
}

static void a_wait_returns_only_after_its_job(void **state)
{
	(void)state;
	reset(0);
	struct base_job j = {.run = gated};
	assert_int_equal(base_park_start(&j), 0);
	wait_running(1);
	pthread_mutex_lock(&g.mu);
	assert_int_equal(g.ran, 0); /* running, held at the gate: not done */
	assert_false(j.done);
	pthread_mutex_unlock(&g.mu);
	open_gate();
	base_park_wait(&j);
	assert_int_equal(g.ran, 1);
}

static void more_jobs_than_parked_threads_all_run_at_once(void **state)
{
	(void)state;
	reset(0);
	struct base_job j[MANY];
	int own = 0;
	for (int i = 0; i < MANY; i++) {
		j[i] = (struct base_job){.run = gated};
		assert_int_equal(base_park_start(&j[i]), 0);
		own += !j[i].parked;
	}
	assert_true(own > 0); /* past the parked ones: threads of their own */
	wait_running(MANY);   /* all at once: none waits for another to end */
	open_gate();
	for (int i = 0; i < MANY; i++)
		base_park_wait(&j[i]);
	assert_int_equal(g.ran, MANY);
	/* and the parked ones are free again */
	reset(1);
	struct base_job k = {.run = gated};
	assert_int_equal(base_park_start(&k), 0);
	assert_true(k.parked);
	base_park_wait(&k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(one_job_on_a_parked_thread_then_another_on_the_same),
	    cmocka_unit_test(a_wait_returns_only_after_its_job),
	    cmocka_unit_test(more_jobs_than_parked_threads_all_run_at_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
