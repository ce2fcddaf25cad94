/* The warm-capacity policy (src/pool/demand.c): the target follows the recent peak with
 * headroom, within its floor and cap, and falls after one to two windows without demand; and
 * the memory budget (src/pool/budget.c) without functions: never exceeded, a spare refused at
 * once, a request waiting for memory given back. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <time.h>

#include "pool/demand.h"
#include "ember/ember.h"
#include "pool/budget.h"
#include "vm/vm.h"

#define S 1000000000ULL /* one second in ns */

static void starts_at_the_floor(void **state)
{
	(void)state;
	struct demand d;
	demand_init(&d, 2, 64, 10 * S, 0);
	assert_int_equal(demand_target(&d, 0), 2);
	assert_int_equal(demand_target(&d, 1), 2);
}

static void follows_the_peak_with_headroom(void **state)
{
	(void)state;
	struct demand d;
	demand_init(&d, 2, 64, 10 * S, 0);
	demand_seen(&d, 8);
	assert_int_equal(demand_target(&d, 0), 8 + demand_headroom(8));
	assert_true(demand_headroom(8) >= 1);
	demand_seen(&d, 32);
	assert_int_equal(demand_target(&d, 0), 32 + demand_headroom(32));
	demand_seen(&d, 4); /* a lower peak changes nothing */
	assert_int_equal(demand_target(&d, 0), 32 + demand_headroom(32));
}

static void always_one_spare_within_the_cap(void **state)
{
	(void)state;
	struct demand d;
	demand_init(&d, 2, 10, 10 * S, 0);
	/* in use above the peak seen so far: still one spare beyond it */
	assert_true(demand_target(&d, 5) >= 6);
	demand_seen(&d, 40);
	assert_int_equal(demand_target(&d, 40), 10); /* never past the cap */
	assert_int_equal(demand_target(&d, 10), 10);
}

static void floor_never_above_cap(void **state)
{
	(void)state;
	struct demand d;
	demand_init(&d, 8, 4, 0, 0);
	assert_int_equal(demand_target(&d, 0), 4);
}

static void shrinks_after_the_window(void **state)
{
	(void)state;
	struct demand d;
	uint64_t next;
	demand_init(&d, 2, 64, 10 * S, 0);
	demand_seen(&d, 16);
	assert_int_equal(demand_tick(&d, 0, 5 * S, &next), 0);
	assert_int_equal(next, 10 * S);
	unsigned high = demand_target(&d, 0);
	assert_int_equal(high, 16 + demand_headroom(16));
	/* the next window: the last one's peak still counts */
	assert_int_equal(demand_tick(&d, 1, 10 * S, &next), 1);
	assert_int_equal(next, 20 * S);
	assert_int_equal(demand_target(&d, 1), high);
	/* a second window without it: back to what is used now */
	assert_int_equal(demand_tick(&d, 1, 20 * S, &next), 1);
	assert_int_equal(demand_target(&d, 1), 2);
}

static void a_long_silence_forgets_at_once(void **state)
{
	(void)state;
	struct demand d;
	uint64_t next;
	demand_init(&d, 1, 64, 10 * S, 0);
	demand_seen(&d, 16);
	/* no tick for more than two windows: the old peak is gone at the first one */
	assert_int_equal(demand_tick(&d, 0, 25 * S, &next), 1);
	assert_int_equal(demand_target(&d, 0), 1);
}

static void no_window_never_shrinks(void **state)
{
	(void)state;
	struct demand d;
	uint64_t next = 1;
	demand_init(&d, 2, 64, 0, 0);
	demand_seen(&d, 16);
	assert_int_equal(demand_tick(&d, 0, 1000 * S, &next), 0);
	assert_int_equal(next, 0);
	assert_int_equal(demand_target(&d, 0), 16 + demand_headroom(16));
}

static void budget_never_exceeded(void **state)
{
	(void)state;
	struct ember_budget *b = ember_budget_new(100);
	struct ember_budget_usage u;
	assert_non_null(b);
	assert_int_equal(budget_take(b, 60, 0), 0);
	assert_int_equal(budget_take(b, 60, 0), -1); /* a spare: refused at once */
	assert_int_equal(budget_take(b, 40, 0), 0);
	ember_budget_usage(b, &u);
	assert_int_equal(u.used, 100);
	assert_int_equal(u.peak, 100);
	assert_int_equal(u.refused, 1);
	/* a request with a deadline and nothing to give it: waits, then gives up */
	assert_int_equal(budget_take(b, 1, base_now_ns() + 20 * 1000 * 1000), -1);
	budget_give(b, 60);
	assert_int_equal(budget_take(b, 60, 0), 0);
	ember_budget_usage(b, &u);
	assert_true(u.peak <= u.limit);
	assert_int_equal(u.waits, 1);
	budget_give(b, 100);
	ember_budget_free(b);
}

static void *give_later(void *p)
{
	struct timespec ts = {0, 20 * 1000 * 1000};
	nanosleep(&ts, NULL);
	budget_give(p, 50);
	return NULL;
}

static void budget_wait_for_memory(void **state)
{
	(void)state;
	struct ember_budget *b = ember_budget_new(100);
	assert_int_equal(budget_take(b, 100, 0), 0);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, give_later, b), 0);
	/* memory given back while it waits: it gets it, well before its deadline */
	assert_int_equal(budget_take(b, 50, base_now_ns() + 10ULL * 1000 * 1000 * 1000), 0);
	pthread_join(th, NULL);
	struct ember_budget_usage u;
	ember_budget_usage(b, &u);
	assert_int_equal(u.used, 100);
	assert_int_equal(u.peak, 100);
	budget_give(b, 100);
	ember_budget_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(starts_at_the_floor),
	    cmocka_unit_test(follows_the_peak_with_headroom),
	    cmocka_unit_test(always_one_spare_within_the_cap),
	    cmocka_unit_test(floor_never_above_cap),
	    cmocka_unit_test(shrinks_after_the_window),
	    cmocka_unit_test(a_long_silence_forgets_at_once),
	    cmocka_unit_test(no_window_never_shrinks),
	    cmocka_unit_test(budget_never_exceeded),
	    cmocka_unit_test(budget_wait_for_memory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
