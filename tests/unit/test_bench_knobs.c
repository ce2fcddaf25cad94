/* Unit tests of the benchmark's host settings guard: put back at release and after a SIGKILL. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "bench/bench_knobs.h"

static char dir[64], a[96], b[96];

static void put(const char *path, const char *v)
{
	assert_int_equal(bench_knob_write(path, v), 0);
}

static int is(const char *path, const char *v)
{
	char got[64] = "";
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(got, sizeof(got), f))
		got[0] = 0;
	fclose(f);
	return !strcmp(got, v);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/ember-knobs-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(a, sizeof(a), "%s/run", dir);
	snprintf(b, sizeof(b), "%s/pages", dir);
	FILE *f = fopen(a, "w"), *g = fopen(b, "w");
	if (!f || !g)
		return -1;
	fputs("0\n", f), fputs("100\n", g);
	fclose(f), fclose(g);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(a), unlink(b), rmdir(dir);
	return 0;
}

static void back_at_release(void **state)
{
	(void)state;
	const char *const paths[] = {a, b};
	struct bench_knobs k;
	assert_int_equal(bench_knobs_hold(&k, paths, 2), 0);
	put(a, "1"), put(b, "20000");
	assert_true(is(a, "1") && is(b, "20000")); /* nothing put back while held */
	bench_knobs_release(&k);
	assert_true(is(a, "0") && is(b, "100"));
	bench_knobs_release(&k); /* twice is harmless */
}

static void back_after_sigkill(void **state)
{
	(void)state;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		const char *const paths[] = {a, b};
		struct bench_knobs k;
		if (bench_knobs_hold(&k, paths, 2) || bench_knob_write(a, "1") ||
		    bench_knob_write(b, "20000"))
			_exit(1);
		raise(SIGKILL); /* no handler runs: only the guard can put them back */
		_exit(2);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	/* the guard (in its own session, reparented) sees the pipe close: a condition, ~5 s bound
	 */
	struct timespec tick = {0, 1000000};
	int i = 0;
	while (!(is(a, "0") && is(b, "100")) && i++ < 5000)
		nanosleep(&tick, NULL);
	assert_true(is(a, "0") && is(b, "100"));
}

static void refusals(void **state)
{
	(void)state;
	struct bench_knobs k;
	const char *const missing[] = {"/nonexistent/ember/knob"};
	assert_int_equal(bench_knobs_hold(&k, missing, 1), -1);
	const char *const many[] = {a, b, a, b, a};
	assert_int_equal(bench_knobs_hold(&k, many, 5), -1);
	char longp[200];
	memset(longp, 'x', sizeof(longp) - 1), longp[sizeof(longp) - 1] = 0;
	const char *const too_long[] = {longp};
	assert_int_equal(bench_knobs_hold(&k, too_long, 1), -1);
	assert_int_equal(bench_knob_write("/nonexistent/ember/knob", "1"), -1);
	assert_true(is(a, "0\n") && is(b, "100\n")); /* refused holds changed nothing */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(refusals, setup, teardown),
	    cmocka_unit_test_setup_teardown(back_at_release, setup, teardown),
	    cmocka_unit_test_setup_teardown(back_after_sigkill, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
