/* Unit tests for the workers' /metrics summed into one (srv_workers_merge.c): a series in
 * several texts added up, the gauges alike in every worker taking the largest, HELP and TYPE
 * once, and every family kept in one group when a worker has a series the others lack. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "server/srv_workers.h"

static const char w0[] = "# HELP calls_total Calls.\n"
			 "# TYPE calls_total counter\n"
			 "calls_total{function_name=\"a\",code=\"200\"} 3\n"
			 "# HELP secs A histogram.\n"
			 "# TYPE secs histogram\n"
			 "secs_bucket{le=\"0.1\"} 2\n"
			 "secs_bucket{le=\"+Inf\"} 3\n"
			 "secs_sum 0.25\n"
			 "secs_count 3\n"
			 "# HELP ember_functions Deployed.\n"
			 "# TYPE ember_functions gauge\n"
			 "ember_functions 4\n";
static const char w1[] = "# HELP calls_total Calls.\n"
			 "# TYPE calls_total counter\n"
			 "calls_total{function_name=\"a\",code=\"200\"} 4\n"
			 "calls_total{function_name=\"b\",code=\"200\"} 7\n"
			 "# HELP secs A histogram.\n"
			 "# TYPE secs histogram\n"
			 "secs_bucket{le=\"0.1\"} 1\n"
			 "secs_bucket{le=\"+Inf\"} 1\n"
			 "secs_sum 0.5\n"
			 "secs_count 1\n"
			 "# HELP ember_functions Deployed.\n"
			 "# TYPE ember_functions gauge\n"
			 "ember_functions 4\n"
			 "# HELP only_here Only in worker 1.\n"
			 "# TYPE only_here gauge\n"
			 "only_here 9\n";

static char *merged(void)
{
	char *t[2] = {strdup(w0), strdup(w1)};
	size_t len = 0;
	char *out = wk_merge_metrics(t, 2, &len);
	assert_non_null(out);
	assert_int_equal(strlen(out), len);
	free(t[0]);
	free(t[1]);
	return out;
}

static void sums_series(void **state)
{
	(void)state;
	char *m = merged();
	assert_non_null(strstr(m, "calls_total{function_name=\"a\",code=\"200\"} 7\n"));
	assert_non_null(strstr(m, "calls_total{function_name=\"b\",code=\"200\"} 7\n"));
	assert_non_null(strstr(m, "secs_bucket{le=\"+Inf\"} 4\n"));
	assert_non_null(strstr(m, "secs_sum 0.75\n"));
	assert_non_null(strstr(m, "secs_count 4\n"));
	assert_non_null(strstr(m, "\nember_functions 4\n")); /* alike in each: not 8 */
	assert_non_null(strstr(m, "\nonly_here 9\n"));
	free(m);
}

/* HELP and TYPE once each, and a family's lines together: b's series right after a's */
static void keeps_families_whole(void **state)
{
	(void)state;
	char *m = merged();
	const char *help = strstr(m, "# HELP calls_total");
	assert_non_null(help);
	assert_null(strstr(help + 1, "# HELP calls_total"));
	const char *a = strstr(m, "calls_total{function_name=\"a\"");
	const char *b = strstr(m, "calls_total{function_name=\"b\"");
	assert_non_null(a);
	assert_non_null(b);
	assert_true(b > a && b == strchr(a, '\n') + 1);
	assert_true(strstr(m, "# HELP secs") > b);
	free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(sums_series),
	    cmocka_unit_test(keeps_families_whole),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
