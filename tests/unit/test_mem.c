/* The page store and UPM merging: one copy per content, no merge of a changed page, none across
 * domains, writes private. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "machine.h"

#include "share/share.h"

#define PAGE EMBER_PAGE_SIZE
#define BASE 0x400000ULL

static void fill(uint8_t *p, int c)
{
	memset(p, c, PAGE);
}

static void one_copy_per_content(void **state)
{
	(void)state;
	struct share_store *st = share_store_get("test-one");
	assert_non_null(st);
	uint8_t a[PAGE], b[PAGE];
	fill(a, 'a');
	fill(b, 'b');
	uint64_t o1, o2, o3;
	assert_int_equal(share_store_intern(st, a, &o1), 0);
	assert_int_equal(share_store_intern(st, a, &o2), 0);
	assert_int_equal(share_store_intern(st, b, &o3), 0);
	assert_int_equal(o1, o2);
	assert_int_not_equal(o1, o3);
	assert_memory_equal(share_store_page(st, o1), a, PAGE);
	struct share_store_stats s;
	share_store_stats(st, &s);
	assert_int_equal(s.pages, 2);
	assert_int_equal(s.refs, 3);
	/* a page nobody holds is gone, and its slot serves new content */
	share_store_release(st, o3);
	share_store_stats(st, &s);
	assert_int_equal(s.pages, 1);
	uint8_t c[PAGE];
	fill(c, 'c');
	uint64_t o4;
	assert_int_equal(share_store_intern(st, c, &o4), 0);
	assert_int_equal(o4, o3);
	assert_memory_equal(share_store_page(st, o4), c, PAGE);
	assert_memory_equal(share_store_page(st, o1), a, PAGE);
	share_store_release(st, o1);
	share_store_release(st, o2);
	share_store_release(st, o4);
	share_store_put(st);
}

/* hashed, then changed before the merge: not merged with the page of the old content */
static void changed_page_not_merged(void **state)
{
	(void)state;
	struct share_store *st = share_store_get("test-race");
	uint8_t p[PAGE];
	fill(p, 'p');
	uint64_t off, got;
	assert_int_equal(share_store_intern(st, p, &off), 0);
	uint64_t h = share_page_hash(p);
	p[100] = 'x'; /* a write racing the merge */
	assert_int_equal(share_store_match(st, h, p, &got), -ENOENT);
	p[100] = 'p';
	assert_int_equal(share_store_match(st, h, p, &got), 0);
	assert_int_equal(got, off);
	share_store_release(st, off);
	share_store_release(st, got);
	share_store_put(st);
}

/* two domains: two stores, two files, never one page, even for equal contents */
static void domains_never_share(void **state)
{
	(void)state;
	struct share_store *a = share_store_get("tenant-a"), *b = share_store_get("tenant-b");
	struct share_store *a2 = share_store_get("tenant-a");
	assert_ptr_not_equal(a, b);
	assert_ptr_equal(a, a2);
	uint8_t p[PAGE];
	fill(p, 'q');
	uint64_t oa, ob;
	assert_int_equal(share_store_intern(a, p, &oa), 0);
	assert_int_equal(share_store_intern(b, p, &ob), 0);
	struct stat sa, sb;
	assert_int_equal(fstat(share_store_fd(a), &sa), 0);
	assert_int_equal(fstat(share_store_fd(b), &sb), 0);
	assert_int_not_equal(sa.st_ino, sb.st_ino);
	assert_int_equal(share_store_match(b, share_page_hash(p), p, &ob), 0);
	share_store_release(b, ob);
	share_store_release(a, oa);
	share_store_release(b, ob);
	share_store_put(a2);
	share_store_put(a);
	share_store_put(b);
}

/* two machines with equal pages merge them into one store page; a write after stays private
 * to the writer; the page outlives the first machine */
static void merge_then_write(void **state)
{
	(void)state;
	struct share_store *st = share_store_get("test-merge");
	struct share_refs ra = {.st = st}, rb = {.st = st};
	struct vm *a = test_machine(), *b = test_machine();
	uint8_t p[4 * PAGE];
	for (int i = 0; i < 4; i++)
		fill(p + i * PAGE, 'k' + i);
	assert_int_equal(vm_copy_to(a, BASE, p, sizeof(p)), 0);
	assert_int_equal(vm_copy_to(b, BASE, p, sizeof(p)), 0);
	assert_int_equal(share_merge(&ra, a, BASE, sizeof(p)), 0);
	assert_int_equal(share_merge(&rb, b, BASE, sizeof(p)), 0);
	struct share_store_stats s;
	share_store_stats(st, &s);
	int kvm = vm_backend_of(a) == VM_BACKEND_KVM;
	if (kvm) {
		assert_int_equal(s.pages, 4); /* one copy for both machines */
		assert_int_equal(s.refs, 8);
		assert_int_equal(s.merged, 8);
		uint64_t shared, priv;
		uint8_t seen[4 * PAGE]; /* present once read */
		assert_int_equal(vm_copy_from(a, seen, BASE, sizeof(seen)), 0);
		assert_memory_equal(seen, p, sizeof(p));
		assert_int_equal(vm_memory(a, &shared, &priv), 0);
		assert_int_equal(shared, 4 * PAGE);
	} else {
		assert_int_equal(s.refs, 0); /* ptrace: nothing mapped, nothing held */
	}
	uint8_t z[PAGE], got[PAGE];
	fill(z, 'z');
	assert_int_equal(vm_copy_to(a, BASE + PAGE, z, PAGE), 0);
	assert_int_equal(vm_copy_from(b, got, BASE + PAGE, PAGE), 0);
	assert_memory_equal(got, p + PAGE, PAGE);
	if (kvm)
		assert_memory_equal(share_store_page(st, ra.offs[1]), p + PAGE, PAGE);
	vm_destroy(a);
	share_refs_release(&ra);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(vm_copy_from(b, got, BASE + i * PAGE, PAGE), 0);
		assert_memory_equal(got, p + i * PAGE, PAGE);
	}
	vm_destroy(b);
	share_refs_release(&rb);
	share_store_stats(st, &s);
	assert_int_equal(s.pages, 0);
	share_store_put(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(one_copy_per_content),
	    cmocka_unit_test(changed_page_not_merged),
	    cmocka_unit_test(domains_never_share),
	    cmocka_unit_test(merge_then_write),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
