/* Deadlines across invocations on one thread, on the backend in EMBER_BACKEND: a timeout is never
 * early and never missed, whatever deadline the thread's timer was left with by the invocation
 * before (on KVM it stays armed between runs, its signal blocked outside them); a sleep the host
 * serves for the program is cut short by it too. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ember/ember.h"
#include "vm/vm_impl.h"

static struct ember_function *load_image(const char *image, double timeout_s)
{
	const char *backend = getenv("EMBER_BACKEND"), *dir = getenv("EMBER_GUEST_DIR");
	char path[4096], err[256] = "";
	struct ember_config cfg = {0};
	struct ember_function *fn = NULL;
	snprintf(path, sizeof(path), "%s/%s", dir && *dir ? dir : "build/guest", image);
	cfg.image = path;
	cfg.backend = backend && *backend ? backend : "auto";
	cfg.timeout_s = timeout_s;
	if (ember_load(&cfg, &fn, err, sizeof(err)))
		fail_msg("ember_load(%s): %s", path, err);
	return fn;
}

static struct ember_function *load(double timeout_s)
{
	return load_image("crashy.musl", timeout_s);
}

/* one invocation; its outcome must be want, and a timeout must not come before the deadline */
static uint64_t invoke(struct ember_function *fn, const char *req, enum ember_outcome want,
		       double timeout_s)
{
	struct ember_result res;
	ember_invoke(fn, req, strlen(req), &res);
	if (res.outcome != want)
		fail_msg("'%s' (timeout %.2f s): outcome %d (%s), want %d", req, timeout_s,
			 (int)res.outcome, res.message, (int)want);
	if (want == EMBER_TIMEOUT && res.run_us < (uint64_t)(timeout_s * 1e6))
		fail_msg("'%s': timed out after %llu us, before its %.2f s", req,
			 (unsigned long long)res.run_us, timeout_s);
	uint64_t us = res.run_us;
	ember_result_free(&res);
	return us;
}

/* a short deadline left behind, then a long one: the early expiry must not end the run */
static void short_then_long(void **state)
{
	(void)state;
	struct ember_function *quick = load(0.05), *patient = load(0.5);
	for (int i = 0; i < 8; i++)
		invoke(quick, "hi", EMBER_OK, 0.05);
	invoke(patient, "loop", EMBER_TIMEOUT, 0.5);
	invoke(patient, "hi", EMBER_OK, 0.5);
	ember_unload(patient);
	ember_unload(quick);
}

/* a long deadline left behind, then a short one: the timer must be brought forward (a missed
 * one would end the run only at the long deadline, 60 s on) */
static void long_then_short(void **state)
{
	(void)state;
	struct ember_function *patient = load(60), *quick = load(0.05);
	invoke(patient, "hi", EMBER_OK, 60);
	uint64_t us = invoke(quick, "loop", EMBER_TIMEOUT, 0.05);
	if (us > 30 * 1000000ULL)
		fail_msg("a 0.05 s timeout ended the run only after %llu us",
			 (unsigned long long)us);
	for (int i = 0; i < 4; i++) {
		invoke(patient, "hi", EMBER_OK, 60);
		invoke(quick, "loop", EMBER_TIMEOUT, 0.05);
	}
	ember_unload(quick);
	ember_unload(patient);
}

static int timer_pending(void)
{
	sigset_t set;
	return sigpending(&set) == 0 && sigismember(&set, vm_timer_signal()) == 1;
}

/* KVM: the timer left armed fires between invocations, and its signal waits, blocked, instead
 * of interrupting whatever the thread does; the next run takes it, and times nothing out */
static void fires_between_runs(void **state)
{
	(void)state;
	const char *backend = getenv("EMBER_BACKEND");
	/* 2 s: far more than an invocation takes, so the checks right after one are not a race */
	struct ember_function *quick = load(2);
	invoke(quick, "hi", EMBER_OK, 2);
	if (backend && !strcmp(backend, "ptrace")) {
		/* the run is on the machine's own thread there, which disarms the timer after it */
		assert_false(timer_pending());
		ember_unload(quick);
		return;
	}
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do { /* the timer's expiry, 2 s after the run began: a condition, bounded */
		sched_yield();
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (!timer_pending() && now.tv_sec - t0.tv_sec < 20);
	if (!timer_pending())
		fail_msg("the timer left armed did not fire within 20 s");
	invoke(quick, "hi", EMBER_OK, 2);
	assert_false(timer_pending());
	invoke(quick, "loop", EMBER_TIMEOUT, 2);
	ember_unload(quick);
}

/* a sleep on the host (nap's nanosleep, served by the host) ends at the deadline, not when
 * the sleep would: also after a deadline left behind that comes earlier or later */
static void sleep_cut_short(void **state)
{
	(void)state;
	struct ember_function *nap = load_image("nap.musl", 0.3), *quick = load(0.05),
			      *patient = load(60);
	for (int round = 0; round < 3; round++) {
		if (round == 1)
			invoke(quick, "hi", EMBER_OK, 0.05); /* leaves an earlier expiry */
		if (round == 2)
			invoke(patient, "hi", EMBER_OK, 60); /* leaves a later one */
		uint64_t us = invoke(nap, "30000 x", EMBER_TIMEOUT, 0.3);
		if (us > 20 * 1000000ULL)
			fail_msg("round %d: a 0.3 s timeout ended a 30 s sleep after %llu us",
				 round, (unsigned long long)us);
	}
	invoke(nap, "20 x", EMBER_OK, 0.3); /* a sleep within its time still sleeps whole */
	/* "sleep infinity" (LONG_MAX seconds) sleeps until the deadline, not 0 s */
	invoke(nap, "forever", EMBER_TIMEOUT, 0.3);
	/* a clock Linux will not sleep on is refused as Linux refuses it, deadline or not */
	struct ember_result res;
	ember_invoke(nap, "raw", 3, &res);
	char want[32];
	snprintf(want, sizeof(want), "raw %d\n", EOPNOTSUPP);
	if (res.outcome != EMBER_OK || res.out_len != strlen(want) ||
	    memcmp(res.out, want, res.out_len))
		fail_msg("CLOCK_MONOTONIC_RAW sleep: outcome %d, output '%.*s', want '%s'",
			 (int)res.outcome, (int)res.out_len, res.out ? (const char *)res.out : "",
			 want);
	ember_result_free(&res);
	ember_unload(patient);
	ember_unload(quick);
	ember_unload(nap);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(short_then_long),
	    cmocka_unit_test(long_then_short),
	    cmocka_unit_test(fires_between_runs),
	    cmocka_unit_test(sleep_cut_short),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
