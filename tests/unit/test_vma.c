/* The guest's memory map (src/sys/sys_vma.c) without a machine: mapping merges and splits,
 * unmapping cuts, mprotect refuses holes and leaves the map as it was, the gap search stays
 * between the heap and mmap_hi, and the written ranges always cover what was noted. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "sys/sys.h"

#define P  0x1000ULL
#define RW (PROT_READ | PROT_WRITE)
#define RO PROT_READ

static int setup(void **state)
{
	struct sys_state *st = calloc(1, sizeof(*st));
	if (!st)
		return -1;
	st->brk_cur = 0x100000;
	st->proc.mmap_hi = 0x1000000;
	*state = st;
	return 0;
}

static int teardown(void **state)
{
	struct sys_state *st = *state;
	free(st->vmas);
	free(st);
	return 0;
}

/* the map is exactly the n ranges given as start, end, prot triples */
static void expect_map(const struct sys_state *st, size_t n, const uint64_t *want)
{
	if (st->nvma != n) {
		for (size_t i = 0; i < st->nvma; i++)
			print_message("  %#lx-%#lx %d\n", (unsigned long)st->vmas[i].start,
				      (unsigned long)st->vmas[i].end, st->vmas[i].prot);
		fail_msg("%zu ranges, expected %zu", st->nvma, n);
	}
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(st->vmas[i].start, want[3 * i]);
		assert_int_equal(st->vmas[i].end, want[3 * i + 1]);
		assert_int_equal(st->vmas[i].prot, (int)want[3 * i + 2]);
	}
}

static void map_merges_neighbours_of_one_prot(void **state)
{
	struct sys_state *st = *state;
	assert_int_equal(sys_vma_map(st, 2 * P, 3 * P, RW), 0);
	assert_int_equal(sys_vma_map(st, 4 * P, 5 * P, RW), 0);
	expect_map(st, 2, (uint64_t[]){2 * P, 3 * P, RW, 4 * P, 5 * P, RW});
	assert_int_equal(sys_vma_map(st, 3 * P, 4 * P, RW), 0); /* fills the hole: one range */
	expect_map(st, 1, (uint64_t[]){2 * P, 5 * P, RW});
	assert_int_equal(sys_vma_map(st, 5 * P, 6 * P, RO), 0); /* adjacent, other prot: kept */
	expect_map(st, 2, (uint64_t[]){2 * P, 5 * P, RW, 5 * P, 6 * P, RO});
}

static void map_over_the_middle_splits(void **state)
{
	struct sys_state *st = *state;
	assert_int_equal(sys_vma_map(st, 0, 10 * P, RW), 0);
	assert_int_equal(sys_vma_map(st, 4 * P, 6 * P, RO), 0);
	expect_map(st, 3, (uint64_t[]){0, 4 * P, RW, 4 * P, 6 * P, RO, 6 * P, 10 * P, RW});
	assert_int_equal(sys_vma_map(st, 4 * P, 6 * P, RW), 0); /* and back: one again */
	expect_map(st, 1, (uint64_t[]){0, 10 * P, RW});
}

static void unmap_cuts_and_removes(void **state)
{
	struct sys_state *st = *state;
	assert_int_equal(sys_vma_map(st, 0, 10 * P, RW), 0);
	assert_int_equal(sys_vma_unmap(st, 4 * P, 5 * P), 0); /* a hole in the middle */
	expect_map(st, 2, (uint64_t[]){0, 4 * P, RW, 5 * P, 10 * P, RW});
	assert_int_equal(sys_vma_map(st, 12 * P, 14 * P, RO), 0);
	assert_int_equal(sys_vma_unmap(st, 2 * P, 13 * P), 0); /* across three: cuts two ends */
	expect_map(st, 2, (uint64_t[]){0, 2 * P, RW, 13 * P, 14 * P, RO});
	assert_int_equal(sys_vma_unmap(st, 20 * P, 30 * P), 0); /* nothing there: no change */
	expect_map(st, 2, (uint64_t[]){0, 2 * P, RW, 13 * P, 14 * P, RO});
	assert_int_equal(sys_vma_unmap(st, 0, 100 * P), 0);
	assert_int_equal(st->nvma, 0);
}

static void find_is_half_open(void **state)
{
	struct sys_state *st = *state;
	assert_int_equal(sys_vma_map(st, 2 * P, 4 * P, RW), 0);
	assert_null(sys_vma_find(st, 2 * P - 1));
	assert_non_null(sys_vma_find(st, 2 * P));
	assert_non_null(sys_vma_find(st, 4 * P - 1));
	assert_null(sys_vma_find(st, 4 * P));
	assert_null(sys_vma_find(st, UINT64_MAX));
	assert_true(sys_vma_free_range(st, 0, 2 * P));
	assert_false(sys_vma_free_range(st, 0, 2 * P + 1));
	assert_false(sys_vma_free_range(st, 3 * P, 3 * P + 1));
	assert_true(sys_vma_free_range(st, 4 * P, 8 * P));
}

static void protect_refuses_a_hole_and_changes_nothing(void **state)
{
	struct sys_state *st = *state;
	assert_int_equal(sys_vma_map(st, 0, 2 * P, RW), 0);
	assert_int_equal(sys_vma_map(st, 3 * P, 5 * P, RW), 0);
	assert_int_equal(sys_vma_protect(st, P, 4 * P, RO), -ENOMEM);	    /* [2P, 3P) is a hole */
	assert_int_equal(sys_vma_protect(st, 4 * P, 6 * P, RO), -ENOMEM);   /* runs off the end */
	assert_int_equal(sys_vma_protect(st, 10 * P, 11 * P, RO), -ENOMEM); /* nothing mapped */
	expect_map(st, 2, (uint64_t[]){0, 2 * P, RW, 3 * P, 5 * P, RW});
	assert_int_equal(sys_vma_protect(st, 3 * P, 4 * P, RO), 0);
	expect_map(st, 3, (uint64_t[]){0, 2 * P, RW, 3 * P, 4 * P, RO, 4 * P, 5 * P, RW});
}

static void many_ranges_grow_the_table(void **state)
{
	struct sys_state *st = *state;
	for (uint64_t i = 0; i < 200; i++) /* every other page: nothing merges */
		assert_int_equal(sys_vma_map(st, 2 * i * P, (2 * i + 1) * P, RW), 0);
	assert_int_equal(st->nvma, 200);
	for (size_t i = 1; i < st->nvma; i++)
		assert_true(st->vmas[i - 1].end < st->vmas[i].start);
	for (uint64_t i = 0; i < 200; i++) /* the holes filled: one range */
		assert_int_equal(sys_vma_map(st, (2 * i + 1) * P, (2 * i + 2) * P, RW), 0);
	expect_map(st, 1, (uint64_t[]){0, 400 * P, RW});
}

static void gap_is_the_highest_below_mmap_hi(void **state)
{
	struct sys_state *st = *state;
	const uint64_t hi = st->proc.mmap_hi;
	assert_int_equal(sys_vma_find_gap(st, 4 * P), hi - 4 * P); /* an empty map: at the top */
	assert_int_equal(sys_vma_map(st, hi - 2 * P, hi + 8 * P, RW), 0); /* straddles the top */
	assert_int_equal(sys_vma_find_gap(st, 4 * P), hi - 6 * P);
	assert_int_equal(sys_vma_map(st, hi - 10 * P, hi - 6 * P, RW), 0); /* leaves 4 pages */
	assert_int_equal(sys_vma_find_gap(st, 4 * P), hi - 6 * P);	   /* exactly fits */
	assert_int_equal(sys_vma_find_gap(st, 5 * P), hi - 15 * P);	   /* below the next */
}

static void gap_never_reaches_into_the_heap(void **state)
{
	struct sys_state *st = *state;
	/* the heap keeps a page to grow into: the floor is the break rounded up, plus a page */
	const uint64_t floor = st->brk_cur + P, room = st->proc.mmap_hi - floor;
	assert_int_equal(sys_vma_find_gap(st, room), floor);
	assert_int_equal(sys_vma_find_gap(st, room + P), 0);
	assert_int_equal(sys_vma_find_gap(st, UINT64_MAX), 0);
	assert_int_equal(sys_vma_map(st, floor + P, floor + 2 * P, RW), 0);
	assert_int_equal(sys_vma_find_gap(st, room - 2 * P), floor + 2 * P);
	assert_int_equal(sys_vma_find_gap(st, room - P), 0); /* only the page below is left */
	st->brk_cur = st->proc.mmap_hi + P;		     /* a break above the area: no gap */
	assert_int_equal(sys_vma_find_gap(st, P), 0);
}

static void written_ranges_widen_and_fold(void **state)
{
	struct sys_state *st = *state;
	const size_t cap = sizeof(st->wr) / sizeof(st->wr[0]);
	sys_note_writable(st, 10 * P, 12 * P);
	sys_note_writable(st, 12 * P, 13 * P); /* adjacent: widens */
	sys_note_writable(st, 9 * P, 11 * P);  /* overlapping: widens */
	assert_int_equal(st->nwr, 1);
	assert_int_equal(st->wr[0].start, 9 * P);
	assert_int_equal(st->wr[0].end, 13 * P);
	for (uint64_t i = 0; i < cap + 3; i++) /* more disjoint ranges than there is room for */
		sys_note_writable(st, (100 + 4 * i) * P, (101 + 4 * i) * P);
	assert_true(st->nwr >= 1 && st->nwr <= cap);
	/* whatever was folded, every noted page is still covered */
	uint64_t noted[] = {9 * P, 12 * P, 100 * P, (100 + 4 * (cap + 2)) * P};
	for (size_t k = 0; k < sizeof(noted) / sizeof(noted[0]); k++) {
		int covered = 0;
		for (size_t i = 0; i < st->nwr; i++)
			covered |= st->wr[i].start <= noted[k] && noted[k] < st->wr[i].end;
		if (!covered)
			fail_msg("page %#lx was noted written and is covered by no range",
				 (unsigned long)noted[k]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(map_merges_neighbours_of_one_prot, setup, teardown),
	    cmocka_unit_test_setup_teardown(map_over_the_middle_splits, setup, teardown),
	    cmocka_unit_test_setup_teardown(unmap_cuts_and_removes, setup, teardown),
	    cmocka_unit_test_setup_teardown(find_is_half_open, setup, teardown),
	    cmocka_unit_test_setup_teardown(protect_refuses_a_hole_and_changes_nothing, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(many_ranges_grow_the_table, setup, teardown),
	    cmocka_unit_test_setup_teardown(gap_is_the_highest_below_mmap_hi, setup, teardown),
	    cmocka_unit_test_setup_teardown(gap_never_reaches_into_the_heap, setup, teardown),
	    cmocka_unit_test_setup_teardown(written_ranges_widen_and_fold, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
