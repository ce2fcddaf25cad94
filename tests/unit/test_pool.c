/* Pools through the public API: concurrent invocations are correct and separate, a virtine is
 * reset after a crash or a timeout, each invocation sees its own metadata on fd 4, and a function
 * that keeps no ready virtine (no_ready) restores one per invocation and gives all of them back.
 * Guests from EMBER_GUEST_DIR (default build/guest), the backend from EMBER_BACKEND (default
 * auto). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ember/ember.h"

#define NTHREADS 8
#define NCALLS	 10
#define POOL	 2

static void guest_path(char *path, size_t n, const char *name)
{
	const char *dir = getenv("EMBER_GUEST_DIR");
	snprintf(path, n, "%s/%s", dir && *dir ? dir : "build/guest", name);
}

static struct ember_function *load(const char *name, unsigned pool_size, double timeout_s)
{
	const char *backend = getenv("EMBER_BACKEND");
	char path[4096], err[256] = "";
	struct ember_config cfg = {0};
	struct ember_function *fn = NULL;

	guest_path(path, sizeof(path), name);
	cfg.image = path;
	cfg.backend = backend && *backend ? backend : "auto";
	cfg.pool_size = pool_size;
	cfg.timeout_s = timeout_s;
	int rc = ember_load(&cfg, &fn, err, sizeof(err));
	if (rc != 0)
		fail_msg("ember_load(%s, backend %s): %d: %s", path, cfg.backend, rc, err);
	return fn;
}

/* the request of call i of thread t: distinct, of varied length (up to ~12 KiB) */
static size_t make_request(char *buf, size_t cap, int t, int i)
{
	int n = snprintf(buf, cap, "thread %d call %d:", t, i);
	size_t len = (size_t)n + (size_t)((t * NCALLS + i) * 157 % 12000);

	assert_true(len < cap);
	for (size_t k = (size_t)n; k < len; k++)
		buf[k] = (char)('a' + (k + (size_t)t) % 26);
	return len;
}

struct job {
	struct ember_function *fn;
	int thread;
	int echo; /* 1: the output must be the request; 0: it must be "1\n" */
	int failures;
	int restored; /* invocations that restored their own virtine (X-Ember-Start: restore) */
	char why[512];
};

static void *worker(void *arg)
{
	struct job *job = arg;
	static char reqs[NTHREADS][16384];
	char *req = reqs[job->thread];

	for (int i = 0; i < NCALLS; i++) {
		struct ember_result res;
		size_t len = make_request(req, sizeof(reqs[0]), job->thread, i);
		const void *want = job->echo ? (const void *)req : "1\n";
		size_t want_len = job->echo ? len : 2;

		ember_invoke(job->fn, req, len, &res);
		job->restored += res.start == EMBER_START_RESTORE;
		if (res.outcome != EMBER_OK || res.status != 0 || res.out_len != want_len ||
		    memcmp(res.out, want, want_len) != 0) {
			if (!job->failures++)
				snprintf(job->why, sizeof(job->why),
					 "thread %d call %d: outcome %d status %d, %zu bytes out "
					 "(want %zu): %.*s | %s",
					 job->thread, i, (int)res.outcome, res.status, res.out_len,
					 want_len, (int)(res.out_len < 40 ? res.out_len : 40),
					 res.out ? (const char *)res.out : "", res.message);
		}
		ember_result_free(&res);
	}
	return NULL;
}

static void run_threads(const char *guest, int echo)
{
	struct ember_function *fn = load(guest, POOL, 0);
	struct job jobs[NTHREADS];
	pthread_t tids[NTHREADS];
	int failures = 0;

	for (int t = 0; t < NTHREADS; t++) {
		jobs[t] = (struct job){.fn = fn, .thread = t, .echo = echo};
		assert_int_equal(pthread_create(&tids[t], NULL, worker, &jobs[t]), 0);
	}
	for (int t = 0; t < NTHREADS; t++) {
		assert_int_equal(pthread_join(tids[t], NULL), 0);
		if (jobs[t].failures)
			print_message("%s: %d failures; first: %s\n", guest, jobs[t].failures,
				      jobs[t].why);
		failures += jobs[t].failures;
	}
	struct ember_info info;
	ember_info(fn, &info);
	ember_unload(fn);
	assert_int_equal(failures, 0);
	assert_true(info.snapshot);
}

/* every invocation of counter starts from the snapshot: its global counter prints 1 */
static void test_counter_threads(void **state)
{
	(void)state;
	run_threads("counter.musl", 0);
}

/* every thread gets its own request back, never another's */
static void test_echo_threads(void **state)
{
	(void)state;
	run_threads("echoreq.musl", 1);
}

static void expect(struct ember_function *fn, const char *req, enum ember_outcome outcome,
		   int exit_code, const char *out)
{
	struct ember_result res;

	ember_invoke(fn, req, strlen(req), &res);
	if (res.outcome != outcome || res.exit_code != exit_code)
		fail_msg("request '%s': outcome %d exit %d (%s), want outcome %d exit %d", req,
			 (int)res.outcome, res.exit_code, res.message, (int)outcome, exit_code);
	if (out && (res.out_len != strlen(out) || memcmp(res.out, out, res.out_len) != 0))
		fail_msg("request '%s': output '%.*s', want '%s'", req, (int)res.out_len,
			 res.out ? (const char *)res.out : "", out);
	ember_result_free(&res);
}

/* one pooled virtine: after a crash and after a timeout, the next request starts clean */
static void test_reset_after_crash_and_timeout(void **state)
{
	(void)state;
	struct ember_function *fn = load("crashy.musl", 1, 1.0);

	expect(fn, "hello", EMBER_OK, 0, "fine 1\n");
	expect(fn, "crash", EMBER_CRASH, 139, NULL);
	expect(fn, "hello", EMBER_OK, 0, "fine 1\n");
	expect(fn, "loop", EMBER_TIMEOUT, 124, NULL);
	expect(fn, "hello", EMBER_OK, 0, "fine 1\n");
	expect(fn, "crash", EMBER_CRASH, 139, NULL);
	expect(fn, "crash", EMBER_CRASH, 139, NULL);
	expect(fn, "hello", EMBER_OK, 0, "fine 1\n");
	ember_unload(fn);
}

/* meta (NULL: ember_invoke) on fd 4 is what the meta guest writes back */
static void expect_meta(struct ember_function *fn, const char *meta, const char *want)
{
	struct ember_result res;

	if (meta)
		ember_invoke_meta(fn, "x", 1, meta, strlen(meta), &res);
	else
		ember_invoke(fn, "x", 1, &res);
	if (res.outcome != EMBER_OK || res.status != 0)
		fail_msg("meta '%s': outcome %d exit %d (%s)", meta ? meta : "(none)",
			 (int)res.outcome, res.exit_code, res.message);
	if (res.out_len != strlen(want) || memcmp(res.out, want, res.out_len) != 0)
		fail_msg("meta '%s': output '%.*s', want '%s'", meta ? meta : "(none)",
			 (int)res.out_len, res.out ? (const char *)res.out : "", want);
	ember_result_free(&res);
}

static void metadata_rounds(struct ember_function *fn)
{
	expect_meta(fn, "Http_Method=POST\nHttp_X_Test=1\n", "Http_Method=POST\nHttp_X_Test=1\n");
	expect_meta(fn, NULL, ""); /* fd 4 open and empty: nothing of the last request is left */
	expect_meta(fn, "", "");
	expect_meta(fn, "A=b\n", "A=b\n");
	expect_meta(fn, "A=b\n", "A=b\n");
}

/* ember_invoke_meta: from the snapshot (pool of 1: the same virtine, reset between calls), and
 * without a snapshot (every invocation loads the image) */
static void test_metadata(void **state)
{
	(void)state;
	struct ember_function *fn = load("meta.musl", 1, 0);
	metadata_rounds(fn);
	ember_unload(fn);

	const char *backend = getenv("EMBER_BACKEND");
	char path[4096], err[256] = "";
	struct ember_config cfg = {0};
	guest_path(path, sizeof(path), "meta.musl");
	cfg.image = path;
	cfg.backend = backend && *backend ? backend : "auto";
	cfg.no_snapshot = 1;
	if (ember_load(&cfg, &fn, err, sizeof(err)))
		fail_msg("ember_load(%s, no snapshot): %s", path, err);
	metadata_rounds(fn);
	ember_unload(fn);
}

#define NR_MEM (16ULL << 20) /* a virtine's guest memory: 3 of them fill the budget */

/* the budget's bytes held, once they are down to want (the drops are after the response), or
 * what they still are after 10 s */
static uint64_t budget_used(struct ember_budget *b, uint64_t want)
{
	struct ember_budget_usage u;
	const struct timespec tick = {0, 1000 * 1000};
	for (int i = 0; i < 10000; i++) {
		ember_budget_usage(b, &u);
		if (u.used == want)
			break;
		nanosleep(&tick, NULL);
	}
	return u.used;
}

/* no_ready under 8 threads sharing a budget of 3 virtines: every invocation restores a virtine
 * of its own from the snapshot (counter prints 1: nothing of another run is seen, none is kept
 * and run again without a reset), none is ready after, the budget is never exceeded (the
 * invocations wait for the memory of the virtines dropped), and every byte comes back without
 * an unload; an unload right after a round gives back what is still being dropped */
static void test_no_ready(void **state)
{
	(void)state;
	const char *backend = getenv("EMBER_BACKEND");
	char path[4096], err[256] = "";
	struct ember_budget *b = ember_budget_new(3 * NR_MEM);
	assert_non_null(b);
	guest_path(path, sizeof(path), "counter.musl");
	struct ember_config cfg = {.image = path,
				   .backend = backend && *backend ? backend : "auto",
				   .mem_bytes = NR_MEM,
				   .pool_size = POOL, /* not used */
				   .pool_max = 8,
				   .no_ready = 1,
				   .budget = b};
	struct ember_function *fn = NULL;
	if (ember_load(&cfg, &fn, err, sizeof(err)))
		fail_msg("ember_load(%s, no_ready): %s", path, err);
	struct ember_info info;
	ember_info(fn, &info);
	assert_int_equal(info.ready, 0);
	assert_int_equal(info.target, 0);
	assert_int_equal(budget_used(b, 0), 0); /* init's virtine not kept */
	for (int round = 0; round < 2; round++) {
		struct job jobs[NTHREADS];
		pthread_t tids[NTHREADS];
		int failures = 0, restored = 0;
		for (int t = 0; t < NTHREADS; t++) {
			jobs[t] = (struct job){.fn = fn, .thread = t};
			assert_int_equal(pthread_create(&tids[t], NULL, worker, &jobs[t]), 0);
		}
		for (int t = 0; t < NTHREADS; t++) {
			assert_int_equal(pthread_join(tids[t], NULL), 0);
			if (jobs[t].failures)
				print_message("no_ready: %d failures; first: %s\n",
					      jobs[t].failures, jobs[t].why);
			failures += jobs[t].failures;
			restored += jobs[t].restored;
		}
		assert_int_equal(failures, 0);
		assert_int_equal(restored, NTHREADS * NCALLS);
		if (round)
			break; /* unloaded with its last drops perhaps still waiting */
		ember_info(fn, &info);
		assert_int_equal(info.ready, 0);
		assert_int_equal(info.in_use, 0);
		assert_int_equal(info.restores, NTHREADS * NCALLS);
		assert_int_equal(ember_warm(fn, 2), 0); /* none is made on demand either */
		assert_int_equal(budget_used(b, 0), 0);
	}
	ember_unload(fn);
	struct ember_budget_usage u;
	ember_budget_usage(b, &u);
	assert_int_equal(u.used, 0);
	assert_true(u.peak <= 3 * NR_MEM);
	assert_true(u.peak >= 2 * NR_MEM); /* they ran side by side */
	ember_budget_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_counter_threads),
	    cmocka_unit_test(test_echo_threads),
	    cmocka_unit_test(test_reset_after_crash_and_timeout),
	    cmocka_unit_test(test_metadata),
	    cmocka_unit_test(test_no_ready),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
