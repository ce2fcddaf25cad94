/* ember serve's log writer (src/cli/serve_log.c) with stderr on a file: every line arrives, whole,
 * in the order each thread logged it, past the buffer's size too (the callers then wait); a
 * stop writes everything left, and later lines go straight out. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/serve_log.h"

#define THREADS 4
#define LINES	6000 /* 4 x 6000 lines of ~100 bytes: over 2 MiB, eight times the buffer */

static char path[64];
static int saved_stderr = -1;

static int to_file(void **state)
{
	(void)state;
	strcpy(path, "/tmp/ember-test-serve-log-XXXXXX");
	int fd = mkstemp(path);
	if (fd < 0)
		return -1;
	saved_stderr = dup(STDERR_FILENO);
	dup2(fd, STDERR_FILENO);
	close(fd);
	return 0;
}

static int back(void **state)
{
	(void)state;
	dup2(saved_stderr, STDERR_FILENO);
	close(saved_stderr);
	unlink(path);
	return 0;
}

static char *read_all(size_t *len)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	rewind(f);
	char *buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = 0;
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void *logger(void *arg)
{
	long t = (long)arg;
	for (int i = 0; i < LINES; i++)
		serve_log("info", "thread %ld line %06d %s", t, i,
			  "padding padding padding padding padding padding padding padding");
	return NULL;
}

/* every thread's lines, once each and in its order, then the warning if last */
static void check_file(int last_words)
{
	size_t len;
	char *buf = read_all(&len);
	int next[THREADS] = {0}, lines = 0;
	for (char *l = buf, *nl; (nl = strchr(l, '\n')); l = nl + 1) {
		*nl = 0;
		long t;
		int i;
		if (last_words && !strcmp(l, "ember serve: warning: last words")) {
			lines++;
			assert_true(nl + 1 == buf + len); /* logged last, written last */
			continue;
		}
		if (sscanf(l, "ember serve: thread %ld line %d padding", &t, &i) != 2 || t < 0 ||
		    t >= THREADS)
			fail_msg("a line cut or mixed: '%.80s'", l);
		if (i != next[t])
			fail_msg("thread %ld: line %d after %d", t, i, next[t] - 1);
		next[t]++;
		lines++;
	}
	for (int t = 0; t < THREADS; t++)
		assert_int_equal(next[t], LINES);
	assert_int_equal(lines, THREADS * LINES + last_words);
	free(buf);
}

/* an empty file, the writer started, THREADS threads logging LINES lines each; with
 * stop_first, the writer is stopped while they do */
static void flood(int stop_first)
{
	assert_int_equal(ftruncate(STDERR_FILENO, 0), 0);
	serve_log_start();
	pthread_t th[THREADS];
	for (long t = 0; t < THREADS; t++)
		assert_int_equal(pthread_create(&th[t], NULL, logger, (void *)t), 0);
	if (stop_first)
		serve_log_stop();
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
}

static void in_order_and_whole(void **state)
{
	(void)state;
	flood(0);
	serve_log("warning", "last words");
	serve_log_stop();
	check_file(1);
}

/* a stop while four threads flood: nothing lost or repeated, each thread's lines in order
 * (those after the stop go straight out, after everything the writer held) */
static void stop_while_logging(void **state)
{
	(void)state;
	flood(1);
	check_file(0);
}

/* a warning or an error is written before the call returns, with every line before it; after
 * the stop lines are written on the caller's thread */
static void warning_at_once(void **state)
{
	(void)state;
	assert_int_equal(ftruncate(STDERR_FILENO, 0), 0);
	serve_log_start();
	serve_log("info", "before");
	serve_log("error", "now");
	size_t len;
	char *buf = read_all(&len);
	assert_string_equal(buf, "ember serve: before\nember serve: error: now\n");
	free(buf);
	serve_log_stop();
	serve_log("info", "after");
	buf = read_all(&len);
	assert_string_equal(buf,
			    "ember serve: before\nember serve: error: now\nember serve: after\n");
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(in_order_and_whole, to_file, back),
	    cmocka_unit_test_setup_teardown(stop_while_logging, to_file, back),
	    cmocka_unit_test_setup_teardown(warning_at_once, to_file, back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
