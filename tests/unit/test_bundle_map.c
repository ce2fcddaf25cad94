/* A bundle's file mapped into guest memory (vm_map_file): one copy for every machine, a write
 * private to the writer, zero memory once dropped; ptrace refuses (it copies instead). The same
 * file in the trees of two functions of one sharing domain: one copy in its page store (the same
 * physical pages), not shared across domains. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "machine.h"

#include "bundle/bnd.h"
#include "share/share.h"
#include "sys/sys.h"

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

#define LIB 16 /* pages of the shared file: 64 KiB */

/* a function's tree: its own handler (name and text differ) and the same 64 KiB library file */
static struct bnd *tree_with(const char *own, const uint8_t *lib)
{
	char err[200];
	struct bnd_builder *bb = bnd_builder_new();
	assert_non_null(bb);
	assert_int_equal(bnd_add(bb, own, 'f', 0644, own, strlen(own), err, sizeof(err)), 0);
	assert_int_equal(bnd_add(bb, "lib/big.py", 'f', 0644, lib, LIB * PAGE, err, sizeof(err)),
			 0);
	struct bnd *b = bnd_pack(bb, err, sizeof(err));
	assert_non_null(b);
	return b;
}

/* the physical frames of guest pages [BASE, BASE + LIB pages) of m (root reads them) */
static void frames(struct vm *m, uint64_t *pfn)
{
	uint8_t *h = vm_guest(m, BASE, LIB * PAGE);
	assert_non_null(h);
	int pm = open("/proc/self/pagemap", O_RDONLY);
	assert_true(pm >= 0);
	uint64_t e[LIB];
	assert_int_equal(pread(pm, e, sizeof(e), (off_t)((uintptr_t)h / PAGE * 8)), sizeof(e));
	close(pm);
	for (int i = 0; i < LIB; i++) {
		assert_true(e[i] >> 63); /* present */
		pfn[i] = e[i] & ((1ULL << 55) - 1);
		assert_true(pfn[i] != 0); /* 0: no right to see them */
	}
}

/* where b's library file is in its data */
static uint64_t lib_at(const struct bnd *b)
{
	uint32_t n;
	assert_int_equal(bnd_lookup(b, 0, "/lib/big.py", 1, &n, NULL), 0);
	return b->nodes[n].data_off;
}

/* b's library file mapped at BASE of a new machine, its pages read (so present): the machine */
static struct vm *mapped(const struct bnd *b, const uint8_t *lib, uint64_t *pfn)
{
	static uint8_t got[LIB * PAGE];
	struct vm *m = test_machine();
	assert_int_equal(sys_fs_map_pages(m, b, BASE, LIB * PAGE, lib_at(b)), 0);
	assert_int_equal(vm_copy_from(m, got, BASE, sizeof(got)), 0);
	assert_memory_equal(got, lib, sizeof(got));
	frames(m, pfn);
	return m;
}

static int same_frames(const uint64_t *a, const uint64_t *b)
{
	int same = 0;
	for (int i = 0; i < LIB; i++)
		same += a[i] == b[i];
	return same;
}

static void stats_are(struct share_store *st, uint64_t pages, uint64_t refs)
{
	struct share_store_stats s;
	share_store_stats(st, &s);
	assert_int_equal(s.pages, pages);
	assert_int_equal(s.refs, refs);
}

static void across_functions(void **state)
{
	(void)state;
	static uint8_t lib[LIB * PAGE], got[PAGE];
	for (size_t i = 0; i < sizeof(lib); i++)
		lib[i] = (uint8_t)(i * 13 + i / PAGE + 1);
	struct bnd *b[3] = {tree_with("a/handler.py", lib), tree_with("b/other/main.py", lib),
			    tree_with("c.py", lib)};
	uint64_t pfn[4][LIB];
	struct vm *probe = test_machine();
	int kvm = vm_backend_of(probe) == VM_BACKEND_KVM;
	vm_destroy(probe);
	if (!kvm) { /* ptrace: nothing maps, each copies (sys_fs_map_fill) */
		struct vm *m = test_machine();
		assert_int_equal(sys_fs_map_pages(m, b[0], BASE, LIB * PAGE, lib_at(b[0])),
				 -EOPNOTSUPP);
		vm_destroy(m);
		goto out;
	}
	/* without the store each function's block is its own copy: the check below can fail */
	struct vm *m0 = mapped(b[0], lib, pfn[0]), *m1 = mapped(b[1], lib, pfn[1]);
	assert_int_equal(same_frames(pfn[0], pfn[1]), 0);
	vm_destroy(m0);
	vm_destroy(m1);

	/* one domain: the file's 16 pages held once (the handlers are below a page: not held) */
	struct share_store *one = share_store_get("test-files-one"),
			   *two = share_store_get("test-files-two");
	struct share_refs r[3] = {{0}};
	assert_int_equal(share_bnd_share(one, b[0], &r[0]), 0);
	assert_int_equal(share_bnd_share(one, b[1], &r[1]), 0);
	stats_are(one, LIB, 2 * LIB);
	assert_int_equal(share_bnd_share(two, b[2], &r[2]), 0);
	stats_are(two, LIB, LIB);
	struct vm *m[3];
	for (int i = 0; i < 3; i++)
		m[i] = mapped(b[i], lib, pfn[i]);
	assert_int_equal(same_frames(pfn[0], pfn[1]), LIB); /* the same physical pages */
	assert_int_equal(same_frames(pfn[0], pfn[2]), 0);   /* another domain: its own */
	uint64_t shared, priv;
	assert_int_equal(vm_memory(m[1], &shared, &priv), 0);
	assert_int_equal(shared, LIB * PAGE);

	/* a write is the writer's: the other function and the store keep the file's bytes */
	memset(got, 'w', sizeof(got));
	assert_int_equal(vm_copy_to(m[0], BASE + 3 * PAGE, got, PAGE), 0);
	frames(m[0], pfn[3]);
	assert_int_equal(same_frames(pfn[3], pfn[1]), LIB - 1);
	assert_int_equal(vm_copy_from(m[1], got, BASE + 3 * PAGE, PAGE), 0);
	assert_memory_equal(got, lib + 3 * PAGE, PAGE);
	assert_memory_equal(share_store_page(one, b[0]->shared_off[lib_at(b[0]) / PAGE + 3]),
			    lib + 3 * PAGE, PAGE);
	/* dropped (the next invocation's reset): the file again, from the store */
	assert_int_equal(vm_drop_files(m[0], 0, UINT64_MAX), 0);
	assert_int_equal(sys_fs_map_pages(m[0], b[0], BASE, LIB * PAGE, lib_at(b[0])), 0);
	assert_int_equal(vm_copy_from(m[0], got, BASE + 3 * PAGE, PAGE), 0);
	assert_memory_equal(got, lib + 3 * PAGE, PAGE);

	/* unloaded: each function's references go, the last one's with the pages */
	for (int i = 0; i < 3; i++)
		vm_destroy(m[i]);
	share_bnd_unshare(b[0], &r[0]);
	assert_null(b[0]->shared_off);
	stats_are(one, LIB, LIB);
	share_bnd_unshare(b[1], &r[1]);
	stats_are(one, 0, 0);
	share_bnd_unshare(b[2], &r[2]);
	stats_are(two, 0, 0);
	share_store_put(one);
	share_store_put(two);
out:
	for (int i = 0; i < 3; i++)
		bnd_free(b[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(shared_then_private),
	    cmocka_unit_test(block_sealed),
	    cmocka_unit_test(across_functions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
