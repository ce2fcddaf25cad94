/* Unit tests for a function's history ring (metrics_history.c): per-second counts, the bound in
 * memory under 10,000 invocations, percentiles from the buckets, and the JSON's columns. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "metrics/metrics_history.h"

#define T0 1800000000 /* a Unix second */

static struct ember_syscall_count calls[2] = {
    {.nr = 0, .name = "read", .served = 3, .in_guest = 2},
    {.nr = 1, .name = "write", .served = 1, .denied = 1},
};

static void ran(struct srv_history *h, int64_t sec, unsigned code, double secs,
		enum ember_start start)
{
	struct ember_result res = {.exits = 2, .start = start, .syscalls = calls, .nsyscalls = 2};
	hist_record(h, sec, code, secs, &res);
}

static json_int_t at(json_t *j, const char *col, size_t i)
{
	return json_integer_value(
	    json_array_get(json_object_get(json_object_get(j, "series"), col), i));
}

static double real_at(json_t *j, const char *col, size_t i)
{
	return json_real_value(
	    json_array_get(json_object_get(json_object_get(j, "series"), col), i));
}

static size_t length(json_t *j, const char *col)
{
	return json_array_size(json_object_get(json_object_get(j, "series"), col));
}

static void test_bounded_under_10000(void **state)
{
	(void)state;
	struct srv_history h;
	hist_init(&h);
	size_t empty = hist_bytes(&h);
	ran(&h, T0, 200, 1e-4, EMBER_START_WARM);
	size_t one = hist_bytes(&h);
	assert_true(one > empty);
	assert_true(one <= empty + HIST_SECONDS * 512); /* a slot is a few hundred bytes */
	/* 10,000 invocations, one a second: the ring keeps the last HIST_SECONDS of them */
	for (int i = 1; i < 10000; i++)
		ran(&h, T0 + i, 200, 1e-4, EMBER_START_WARM);
	assert_int_equal(hist_bytes(&h), one);
	json_t *j = hist_json(&h, T0 + 9999, HIST_SECONDS);
	assert_non_null(j);
	assert_int_equal(length(j, "t"), HIST_SECONDS);
	assert_int_equal(length(j, "invocations"), HIST_SECONDS);
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(j, "window"), "invocations")),
	    HIST_SECONDS);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "total"), "ran")),
			 10000);
	assert_int_equal(at(j, "t", 0), T0 + 9999 - HIST_SECONDS + 1);
	json_decref(j);
	/* 10,000 more in one second: one slot counts them all */
	for (int i = 0; i < 10000; i++)
		ran(&h, T0 + 20000, 200, 1e-4, EMBER_START_WARM);
	assert_int_equal(hist_bytes(&h), one);
	j = hist_json(&h, T0 + 20000, 10);
	assert_int_equal(length(j, "invocations"), 10);
	assert_int_equal(at(j, "invocations", 9), 10000);
	assert_int_equal(at(j, "invocations", 8), 0); /* an old lap of the ring is not shown */
	json_decref(j);
	hist_destroy(&h);
}

static void test_counts_by_second(void **state)
{
	(void)state;
	struct srv_history h;
	hist_init(&h);
	ran(&h, T0, 200, 1e-4, EMBER_START_WARM);
	ran(&h, T0, 200, 2e-3, EMBER_START_RESTORE);
	ran(&h, T0 + 1, 502, 1e-3, EMBER_START_COLD);
	ran(&h, T0 + 2, 200, 0.5, EMBER_START_INIT);
	hist_record(&h, T0 + 2, 429, 1e-5, NULL); /* refused: never ran */
	json_t *j = hist_json(&h, T0 + 3, 4);
	size_t n = length(j, "t");
	assert_int_equal(n, 4);
	const json_int_t inv[] = {2, 1, 2, 0}, ran_[] = {2, 1, 1, 0}, err[] = {0, 1, 0, 0},
			 ref[] = {0, 0, 1, 0};
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(at(j, "t", i), T0 + (json_int_t)i);
		assert_int_equal(at(j, "invocations", i), inv[i]);
		assert_int_equal(at(j, "ran", i), ran_[i]);
		assert_int_equal(at(j, "errors", i), err[i]);
		assert_int_equal(at(j, "refused", i), ref[i]);
		assert_int_equal(at(j, "exits", i), 2 * ran_[i]);
		assert_int_equal(at(j, "syscalls", i), 5 * ran_[i]); /* served and denied */
		assert_int_equal(at(j, "syscallsInGuest", i), 2 * ran_[i]);
	}
	assert_int_equal(at(j, "warm", 0), 1);
	assert_int_equal(at(j, "restore", 0), 1);
	assert_int_equal(at(j, "cold", 1), 1);
	assert_int_equal(at(j, "init", 2), 1);
	/* the slowest of a second bounds its percentiles */
	assert_true(real_at(j, "p99", 0) <= 2e-3 + 1e-9);
	assert_true(real_at(j, "max", 2) > 0.49);
	assert_true(json_is_null(json_array_get(
	    json_object_get(json_object_get(j, "series"), "p50"), 3))); /* no call: no figure */
	json_decref(j);
	hist_destroy(&h);
}

static void test_percentiles(void **state)
{
	(void)state;
	struct srv_history h;
	hist_init(&h);
	for (int i = 0; i < 98; i++)
		ran(&h, T0, 200, 100e-6, EMBER_START_WARM);
	for (int i = 0; i < 2; i++)
		ran(&h, T0, 200, 100e-3, EMBER_START_WARM);
	json_t *j = hist_json(&h, T0, 1);
	json_t *w = json_object_get(j, "window");
	double p50 = json_real_value(json_object_get(w, "p50"));
	double p99 = json_real_value(json_object_get(w, "p99"));
	/* within the half-octave bucket of each: at most 41 % off */
	assert_true(p50 > 100e-6 / 1.42 && p50 < 100e-6 * 1.42);
	assert_true(p99 > 100e-3 / 1.42 && p99 < 100e-3 * 1.42);
	json_decref(j);
	hist_destroy(&h);
	uint64_t none[HIST_BUCKETS] = {0};
	assert_true(hist_quantile(none, 0, 0.5) < 0);
}

static void test_old_second_ignored(void **state)
{
	(void)state;
	struct srv_history h;
	hist_init(&h);
	ran(&h, T0 + HIST_SECONDS, 200, 1e-4, EMBER_START_WARM);
	ran(&h, T0, 200, 1e-4, EMBER_START_WARM); /* the same slot, a lap earlier */
	json_t *j = hist_json(&h, T0 + HIST_SECONDS, 1);
	assert_int_equal(at(j, "invocations", 0), 1);
	json_decref(j);
	hist_destroy(&h);
}

static void test_empty(void **state)
{
	(void)state;
	struct srv_history h;
	hist_init(&h);
	json_t *j = hist_json(&h, T0, 5);
	assert_int_equal(length(j, "invocations"), 5);
	assert_int_equal(at(j, "invocations", 4), 0);
	assert_true(json_is_null(json_object_get(json_object_get(j, "window"), "p50")));
	json_decref(j);
	j = hist_json(&h, T0, 0);
	assert_int_equal(length(j, "t"), 0);
	json_decref(j);
	assert_true(hist_now() > T0 - 100000000); /* Unix time, not the boot's */
	hist_destroy(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bounded_under_10000),
	    cmocka_unit_test(test_counts_by_second),
	    cmocka_unit_test(test_percentiles),
	    cmocka_unit_test(test_old_second_ignored),
	    cmocka_unit_test(test_empty),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
