/* Unit tests of the benchmark sample sets: order kept, quantiles, failed rows, JSON and CDF. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bench/bench_samples.h"

static void quantiles(void **state)
{
	(void)state;
	double one[] = {7};
	assert_true(isnan(bench_sorted_quantile(one, 0, 0.5)));
	assert_true(bench_sorted_quantile(one, 1, 0.99) == 7);
	double ten[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
	assert_true(bench_sorted_quantile(ten, 10, 0) == 1);
	assert_true(bench_sorted_quantile(ten, 10, 0.5) == 6); /* rank round(4.5) = 5 */
	assert_true(bench_sorted_quantile(ten, 10, 0.99) == 10);
	assert_true(bench_sorted_quantile(ten, 10, 1) == 10);
}

static void stats_keep_order(void **state)
{
	(void)state;
	struct bench_set s;
	bench_set_init(&s, "row", "kvm");
	for (int i = 100; i >= 1; i--)
		assert_int_equal(bench_set_add(&s, i), 0);
	struct bench_stats st;
	assert_int_equal(bench_set_stats(&s, &st), 0);
	assert_int_equal(st.n, 100);
	assert_true(st.min == 1 && st.max == 100);
	assert_true(st.p50 == 51 && st.p99 == 99);
	assert_true(fabs(st.mean - 50.5) < 1e-9);
	assert_true(s.us[0] == 100 && s.us[99] == 1); /* the samples keep the order taken */
	bench_set_free(&s);
}

static void empty_and_failed(void **state)
{
	(void)state;
	struct bench_set s;
	struct bench_stats st;
	bench_set_init(&s, "peer", "native");
	assert_int_equal(bench_set_stats(&s, &st), -1);
	assert_int_equal(st.n, 0);
	bench_set_add(&s, 5);
	bench_set_fail(&s, "timed out after %d ms", 20);
	assert_int_equal(bench_set_stats(&s, &st), -1);
	json_t *o = bench_set_json(&s);
	assert_string_equal(json_string_value(json_object_get(o, "reason")),
			    "timed out after 20 ms");
	assert_int_equal(json_integer_value(json_object_get(o, "n")), 0);
	assert_null(json_object_get(o, "samples_us"));
	json_decref(o);
	bench_set_free(&s);
}

static void json_has_raw_samples(void **state)
{
	(void)state;
	struct bench_set s;
	bench_set_init(&s, "a_very_long_name_that_is_kept_whole", "ptrace");
	double v[] = {3.5, 1.25, 2};
	for (int i = 0; i < 3; i++)
		bench_set_add(&s, v[i]);
	json_t *o = bench_set_json(&s);
	json_t *raw = json_object_get(o, "samples_us");
	assert_int_equal(json_array_size(raw), 3);
	for (size_t i = 0; i < 3; i++)
		assert_true(json_real_value(json_array_get(raw, i)) == v[i]);
	assert_true(json_real_value(json_object_get(o, "p50_us")) == 2);
	assert_int_equal(json_integer_value(json_object_get(o, "n")), 3);
	assert_string_equal(json_string_value(json_object_get(o, "backend")), "ptrace");
	json_decref(o);
	char buf[256] = "";
	FILE *f = fmemopen(buf, sizeof(buf), "w");
	assert_int_equal(bench_set_cdf(&s, f), 0);
	fclose(f);
	assert_string_equal(buf,
			    "1.250 0.000000\n1.250 0.333333\n2.000 0.666667\n3.500 1.000000\n");
	bench_set_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(quantiles),
	    cmocka_unit_test(stats_keep_order),
	    cmocka_unit_test(empty_and_failed),
	    cmocka_unit_test(json_has_raw_samples),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
