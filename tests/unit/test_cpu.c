/* Unit tests for the costly-function score (srv_cpu.c): which run of invocations makes a
 * function costly, and cheap again. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "server/srv_cpu.h"

#define LIMIT 20000 /* µs: the default costlyAfter */

/* the score after n invocations that each took took_us, from score */
static uint64_t after(uint64_t score, unsigned n, uint64_t took_us, int failed)
{
	while (n--)
		score = cpu_score(score, took_us, failed, LIMIT);
	return score;
}

static void test_cheap_stay(void **state)
{
	(void)state;
	/* a warm hello, ~0.3 ms, any number of times; a cold start of 15 ms among them */
	uint64_t s = after(0, 1000, 300, 0);
	assert_true(s <= LIMIT);
	assert_true(cpu_score(s, 15000, 0, LIMIT) <= LIMIT);
	/* steady at 19 ms: close to the limit, never past it */
	assert_true(after(0, 1000, 19000, 0) <= LIMIT);
}

static void test_costly_move(void **state)
{
	(void)state;
	/* one spin to a 250 ms timeout, one call of 1.4 s (membomb) */
	assert_true(cpu_score(0, 250000, 1, LIMIT) > LIMIT);
	assert_true(cpu_score(0, 1400000, 0, LIMIT) > LIMIT);
	/* steady at 30 ms each: after a few */
	assert_true(after(0, 8, 30000, 0) > LIMIT);
}

static void test_failures(void **state)
{
	(void)state;
	/* one quick crash of a cheap function is forgiven, two in a row are not */
	uint64_t s = after(0, 100, 300, 0);
	assert_true(cpu_score(s, 500, 1, LIMIT) <= LIMIT);
	assert_true(after(s, 2, 500, 1) > LIMIT);
	/* crash after crash, however quick: stays */
	assert_true(after(0, 1000, 100, 1) > LIMIT);
	/* an occasional crash among cheap calls (1 in 10): stays normal */
	s = 0;
	for (int i = 0; i < 1000; i++)
		s = cpu_score(s, 300, i % 10 == 9, LIMIT);
	assert_true(s <= LIMIT);
}

static void test_way_back(void **state)
{
	(void)state;
	/* after a long spin, cheap calls bring it back within a bounded number */
	uint64_t s = cpu_score(0, 3000000, 1, LIMIT);
	unsigned n = 0;
	while (s > LIMIT && n < 100)
		s = cpu_score(s, 300, 0, LIMIT), n++;
	assert_true(n > 1);
	assert_true(n < 30);
}

static void test_no_overflow(void **state)
{
	(void)state;
	/* an hour-long invocation, again and again: the average stays an average */
	uint64_t hour = 3600ull * 1000000;
	uint64_t s = after(0, 200, hour, 1);
	assert_true(s <= hour);
	assert_true(s > hour / 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cheap_stay),	cmocka_unit_test(test_costly_move),
	    cmocka_unit_test(test_failures),	cmocka_unit_test(test_way_back),
	    cmocka_unit_test(test_no_overflow),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
