/* Sharing a snapshot's one copy between machines: writes stay private, pages outlive their first
 * owner, counts match smaps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "machine.h"

#include "ember/ember.h"
#include "snap/snap.h"

#define PAGE   EMBER_PAGE_SIZE
#define BASE   0x400000ULL /* program memory, above the host's structures */
#define NPAGES 3

/* a snapshot of three pages, two of them one run, each filled with its own byte */
static void snapshot(struct snap *s)
{
	memset(s, 0, sizeof(*s));
	s->npages = NPAGES;
	s->pages = malloc(NPAGES * sizeof(*s->pages));
	s->data = malloc(NPAGES * PAGE);
	assert_non_null(s->pages);
	assert_non_null(s->data);
	const uint64_t at[NPAGES] = {BASE, BASE + PAGE, BASE + 8 * PAGE};
	for (int i = 0; i < NPAGES; i++) {
		s->pages[i] = at[i];
		memset(s->data + i * PAGE, 'a' + i, PAGE);
	}
	assert_int_equal(snap_seal(s), 0);
	assert_true(s->sealed);
}

static int is_kvm(void)
{
	const char *b = getenv("EMBER_BACKEND");
	return !b || strcmp(b, "ptrace");
}

static void expect_page(struct vm *vm, uint64_t addr, char c)
{
	uint8_t buf[PAGE], want[PAGE];
	memset(want, c, PAGE);
	assert_int_equal(vm_copy_from(vm, buf, addr, PAGE), 0);
	if (memcmp(buf, want, PAGE))
		fail_msg("page %#llx: '%c', want '%c'", (unsigned long long)addr, buf[0], c);
}

/* a write by one machine to a shared page is invisible to the other and to the snapshot */
static void write_stays_private(void **state)
{
	(void)state;
	struct snap s;
	snapshot(&s);
	struct vm *a = test_machine(), *b = test_machine();
	assert_int_equal(snap_put_memory(&s, a, 0, UINT64_MAX, SNAP_SHARE_UPM), 0);
	assert_int_equal(snap_put_memory(&s, b, 0, UINT64_MAX, SNAP_SHARE_UPM), 0);
	assert_int_equal(vm_cow_runs(a), is_kvm() ? 2 : 0); /* ptrace copies */
	uint8_t z[PAGE];
	memset(z, 'z', PAGE);
	assert_int_equal(vm_copy_to(a, BASE + PAGE, z, PAGE), 0);
	expect_page(a, BASE + PAGE, 'z');
	expect_page(b, BASE + PAGE, 'b');
	assert_int_equal(s.data[PAGE], 'b');
	/* and the other way */
	assert_int_equal(vm_copy_to(b, BASE, z, PAGE), 0);
	expect_page(a, BASE, 'a');
	/* a page given back reads as zero, not as the snapshot's page */
	assert_int_equal(vm_discard(a, BASE + 8 * PAGE, PAGE), 0);
	expect_page(a, BASE + 8 * PAGE, 0);
	expect_page(b, BASE + 8 * PAGE, 'c');
	vm_destroy(a);
	vm_destroy(b);
	snap_free(&s);
}

/* the pages outlive the snapshot and the first machine that mapped them */
static void pages_outlive_owner(void **state)
{
	(void)state;
	struct snap s;
	snapshot(&s);
	struct vm *a = test_machine(), *b = test_machine();
	assert_int_equal(snap_put_memory(&s, a, 0, UINT64_MAX, SNAP_SHARE_UPM), 0);
	assert_int_equal(snap_put_memory(&s, b, 0, UINT64_MAX, SNAP_SHARE_UPM), 0);
	vm_destroy(a);
	snap_free(&s);
	expect_page(b, BASE, 'a');
	expect_page(b, BASE + PAGE, 'b');
	expect_page(b, BASE + 8 * PAGE, 'c');
	vm_destroy(b);
}

/* Rss and Anonymous kB of the mappings inside [lo, hi) of this process */
static void smaps(uintptr_t lo, uintptr_t hi, uint64_t *rss, uint64_t *anon)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	assert_non_null(f);
	char line[512];
	int in = 0;
	*rss = *anon = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b, kb;
		if (sscanf(line, "%lx-%lx ", &a, &b) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			in = a >= lo && b <= hi;
			continue;
		}
		if (in && sscanf(line, "Rss: %lu kB", &kb) == 1)
			*rss += kb * 1024;
		if (in && sscanf(line, "Anonymous: %lu kB", &kb) == 1)
			*anon += kb * 1024;
	}
	fclose(f);
}

/* what vm_memory calls shared is what smaps shows of the snapshot's file in the machine's
 * copy-on-write runs; the copies it made are anonymous there */
static void counts_match_smaps(void **state)
{
	(void)state;
	struct snap s;
	snapshot(&s);
	struct vm *a = test_machine();
	assert_int_equal(snap_put_memory(&s, a, 0, UINT64_MAX, SNAP_SHARE_UPM), 0);
	expect_page(a, BASE, 'a');
	expect_page(a, BASE + PAGE, 'b');
	expect_page(a, BASE + 8 * PAGE, 'c');
	uint8_t z[PAGE];
	memset(z, 'z', PAGE);
	assert_int_equal(vm_copy_to(a, BASE + PAGE, z, PAGE), 0);
	uint64_t shared, priv, rss, anon;
	assert_int_equal(vm_memory(a, &shared, &priv), 0);
	if (!is_kvm()) { /* the copy model (docs/memory.md): all of it the machine's own */
		assert_int_equal(shared, 0);
		assert_true(priv >= 3 * PAGE);
		vm_destroy(a);
		snap_free(&s);
		return;
	}
	uint8_t *mem = vm_guest(a, 0, 0);
	smaps((uintptr_t)mem + BASE, (uintptr_t)mem + BASE + 9 * PAGE, &rss, &anon);
	assert_int_equal(anon, PAGE);
	assert_int_equal(shared, rss - anon);
	assert_int_equal(shared, 2 * PAGE);
	assert_true(priv >= PAGE);
	vm_destroy(a);
	snap_free(&s);
}

static struct ember_function *load_fn(const char *name, const char *domain)
{
	const char *b = getenv("B"), *backend = getenv("EMBER_BACKEND");
	char path[4096], err[256] = "";
	snprintf(path, sizeof(path), "%s/functions/%s", b && *b ? b : "build", name);
	struct ember_config cfg = {.image = path,
				   .backend = backend && *backend ? backend : "kvm",
				   .sharing = "upm",
				   .sharing_domain = domain};
	struct ember_function *fn = NULL;
	if (ember_load(&cfg, &fn, err, sizeof(err)))
		fail_msg("ember_load(%s): %s", path, err);
	return fn;
}

static uint64_t domain_bytes(struct ember_function *fn)
{
	struct ember_memory m;
	assert_int_equal(ember_memory(fn, &m), 0);
	return m.domain_bytes;
}

/* model and model2 build the same 8 MiB table: in one domain it is held once; in another
 * domain the same bytes are held again, never shared */
static void functions_share_within_a_domain_only(void **state)
{
	(void)state;
	struct ember_function *a = load_fn("model", "tenant-1");
	uint64_t one = domain_bytes(a);
	assert_true(one >= 8ULL << 20);
	struct ember_function *b = load_fn("model2", "tenant-1");
	uint64_t both = domain_bytes(b);
	assert_int_equal(domain_bytes(a), both);
	assert_true(both < one + (1ULL << 20)); /* the table once, a few pages of code more */
	struct ember_function *c = load_fn("model2", "tenant-2");
	assert_true(domain_bytes(c) >= 8ULL << 20);
	assert_int_equal(domain_bytes(a), both); /* tenant-1 unchanged */
	/* every one answers from its own view of the table */
	struct ember_function *fns[3] = {a, b, c};
	const char *want[3] = {"sum of 100 rows from 10: 9767750453208800979\n",
			       "max of 100 rows from 10: 18418358253708141447\n",
			       "max of 100 rows from 10: 18418358253708141447\n"};
	for (int i = 0; i < 3; i++) {
		struct ember_result r;
		const char *req = "start=10 rows=100";
		ember_invoke(fns[i], req, strlen(req), &r);
		if (r.outcome != EMBER_OK || r.out_len != strlen(want[i]) ||
		    memcmp(r.out, want[i], r.out_len))
			fail_msg("function %d: outcome %d (%s), '%.*s'", i, (int)r.outcome,
				 r.message, (int)r.out_len, r.out ? (const char *)r.out : "");
		ember_result_free(&r);
	}
	ember_unload(a);
	ember_unload(b);
	ember_unload(c);
}

/* a virtine that records its writes (KVM's dirty log: a large snapshot, few pages written) puts
 * back exactly what each run wrote: no run sees the last one's writes, in either reset */
static void dirty_log_resets_written_pages(void **state)
{
	(void)state;
	const char *b = getenv("B"), *backend = getenv("EMBER_BACKEND");
	char path[4096], err[256] = "";
	snprintf(path, sizeof(path), "%s/guest/dirtier.musl", b && *b ? b : "build");
	struct ember_config cfg = {.image = path, .backend = backend && *backend ? backend : "kvm"};
	struct ember_function *fn = NULL;
	if (ember_load(&cfg, &fn, err, sizeof(err)))
		fail_msg("ember_load(%s): %s", path, err);
	int logged = 0;
	for (int i = 0; i < 12; i++) {
		/* all its pages once (so that comparing the pages ever written costs more than
		 * recording the few a run writes), then few, and now and then many */
		const char *req = i == 0 ? "4096" : i % 3 == 2 ? "300" : "7";
		struct ember_result r;
		ember_invoke(fn, req, strlen(req), &r);
		char want[64];
		snprintf(want, sizeof(want), "%s written, 0 left\n", req);
		if (r.outcome != EMBER_OK || r.out_len != strlen(want) ||
		    memcmp(r.out, want, r.out_len))
			fail_msg("run %d: outcome %d (%s), '%.*s', want '%s'", i, (int)r.outcome,
				 r.message, (int)r.out_len, r.out ? (const char *)r.out : "", want);
		logged |= r.dirty_log;
		ember_result_free(&r);
	}
	struct ember_info info;
	ember_info(fn, &info);
	if (!strcmp(info.backend, "kvm"))
		assert_true(logged); /* the dirty log was used, so this tested it */
	else
		assert_false(logged);
	ember_unload(fn);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(write_stays_private),
	    cmocka_unit_test(pages_outlive_owner),
	    cmocka_unit_test(counts_match_smaps),
	    cmocka_unit_test(functions_share_within_a_domain_only),
	    cmocka_unit_test(dirty_log_resets_written_pages),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
