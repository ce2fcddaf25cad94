/* A bundle's file mapped into guest memory (vm_map_file): one copy for every machine, a write
 * private to the writer, zero memory once dropped; ptrace refuses (it copies instead). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "machine.h"

#include "bundle/bnd.h"

#define PAGE  EMBER_PAGE_SIZE
#define BASE  0x400000ULL
#define PAGES 8

/* a tree with a small file before an eight-page one, which then starts on a page of its own */
static struct bnd *tree(uint8_t *want)
{
	char err[200];
	struct bnd_builder *bb = bnd_builder_new();
	assert_non_null(bb);
	for (size_t i = 0; i < PAGES * PAGE; i++)
		want[i] = (uint8_t)(i * 7 + i / PAGE);
	assert_int_equal(bnd_add(bb, "a/small", 'f', 0644, "tiny", 4, err, sizeof(err)), 0);
	assert_int_equal(bnd_add(bb, "a/big", 'f', 0644, want, PAGES * PAGE, err, sizeof(err)), 0);
	struct bnd *b = bnd_pack(bb, err, sizeof(err));
	assert_non_null(b);
	return b;
}

static uint64_t offset_of(const struct bnd *b, const char *path)
{
	uint32_t n;
	assert_int_equal(bnd_lookup(b, 0, path, 1, &n, NULL), 0);
	return b->fd_off + b->data_at + b->nodes[n].data_off;
}

static void shared_then_private(void **state)
{
	(void)state;
	static uint8_t want[PAGES * PAGE], got[PAGES * PAGE];
	struct bnd *b = tree(want);
	uint64_t off = offset_of(b, "/a/big");
	assert_int_equal(off % PAGE, 0);
	struct vm *m[2] = {test_machine(), test_machine()};
	if (vm_backend_of(m[0]) != VM_BACKEND_KVM) {
		assert_int_equal(vm_map_file(m[0], BASE, PAGES * PAGE, b->fd, off), -EOPNOTSUPP);
		goto out;
	}
	for (int i = 0; i < 2; i++) {
		uint64_t shared, priv;
		assert_int_equal(vm_map_file(m[i], BASE, PAGES * PAGE, b->fd, off), 0);
		assert_int_equal(vm_copy_from(m[i], got, BASE, sizeof(got)), 0);
		assert_memory_equal(got, want, sizeof(got));
		assert_int_equal(vm_memory(m[i], &shared, &priv), 0);
		assert_int_equal(shared, PAGES * PAGE); /* the bundle's pages, not a copy */
	}
	/* a write makes the writer a private page; the other machine and the bundle keep theirs */
	uint8_t z[PAGE];
	memset(z, 'z', sizeof(z));
	assert_int_equal(vm_copy_to(m[0], BASE + PAGE, z, PAGE), 0);
	uint64_t shared, priv;
	assert_int_equal(vm_memory(m[0], &shared, &priv), 0);
	assert_int_equal(shared, (PAGES - 1) * PAGE);
	assert_int_equal(vm_copy_from(m[1], got, BASE, sizeof(got)), 0);
	assert_memory_equal(got, want, sizeof(got));
	assert_memory_equal(b->mem + off - b->fd_off + PAGE, want + PAGE, PAGE);
	/* dropped: zero, holding nothing of the file */
	assert_int_equal(vm_drop_files(m[0], 0, UINT64_MAX), 0);
	assert_int_equal(vm_copy_from(m[0], got, BASE, sizeof(got)), 0);
	static const uint8_t zero[PAGES * PAGE];
	assert_memory_equal(got, zero, sizeof(got));
	assert_int_equal(vm_memory(m[0], &shared, &priv), 0);
	assert_int_equal(shared, 0);
out:
	vm_destroy(m[0]);
	vm_destroy(m[1]);
	bnd_free(b);
}

/* the packed block is read-only for this process too, and its files' pages end in zeros */
static void block_sealed(void **state)
{
	(void)state;
	static uint8_t want[PAGES * PAGE];
	struct bnd *b = tree(want);
	uint8_t one = 1;
	assert_int_equal(pwrite(b->fd, &one, 1, 0), -1);
	assert_int_equal(errno, EPERM);
	uint64_t small = offset_of(b, "/a/small");
	assert_memory_equal(b->mem + small - b->fd_off, "tiny", 4);
	bnd_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(shared_then_private),
	    cmocka_unit_test(block_sealed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
