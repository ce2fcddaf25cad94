/* Isolation through the public API: permissions taken away, pages mapped by the last invocation. */
/* Permissions taken away take effect at once, and a page one invocation mapped is gone (or at
 * least empty) in the next, on the backend in EMBER_BACKEND; so are pages it wrote in a large
 * mapping of the snapshot. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember/ember.h"

#define ROUNDS 20

static struct ember_function *load(const char *syscalls)
{
	const char *backend = getenv("EMBER_BACKEND"), *dir = getenv("EMBER_GUEST_DIR");
	char path[4096], err[256] = "";
	struct ember_config cfg = {0};
	struct ember_function *fn = NULL;
	snprintf(path, sizeof(path), "%s/isolation.musl", dir && *dir ? dir : "build/guest");
	cfg.image = path;
	cfg.backend = backend && *backend ? backend : "auto";
	cfg.pool_size = 1; /* one virtine: every invocation follows the last one in it */
	cfg.syscalls = syscalls;
	const char *share = getenv("EMBER_SHARING"); /* tests/run.sh runs it in each mode */
	cfg.sharing = share && *share ? share : NULL;
	if (ember_load(&cfg, &fn, err, sizeof(err)))
		fail_msg("ember_load(%s, %s): %s", path, syscalls, err);
	return fn;
}

/* invokes req; its outcome must be a page fault (crash, 139) after printing `before` */
static void expect_fault(struct ember_function *fn, const char *req, const char *before)
{
	struct ember_result res;
	ember_invoke(fn, req, strlen(req), &res);
	if (res.outcome != EMBER_CRASH || res.exit_code != 139 ||
	    !strstr(res.message, "page fault") || res.out_len != strlen(before) ||
	    memcmp(res.out, before, res.out_len) != 0)
		fail_msg(
		    "'%s': outcome %d exit %d (%s), output '%.*s': want a page fault after '%s'",
		    req, (int)res.outcome, res.exit_code, res.message, (int)res.out_len,
		    res.out ? (const char *)res.out : "", before);
	ember_result_free(&res);
}

static void expect_ok(struct ember_function *fn, const char *req, const char *out)
{
	struct ember_result res;
	ember_invoke(fn, req, strlen(req), &res);
	if (res.outcome != EMBER_OK || res.status != 0 || res.out_len != strlen(out) ||
	    memcmp(res.out, out, res.out_len) != 0)
		fail_msg("'%s': outcome %d exit %d (%s), output '%.*s', want '%s'", req,
			 (int)res.outcome, res.exit_code, res.message, (int)res.out_len,
			 res.out ? (const char *)res.out : "", out);
	ember_result_free(&res);
}

/* req faults in every invocation of one virtine, in the given syscall mode */
static void faults_every_time(const char *mode, const char *req, const char *before)
{
	struct ember_function *fn = load(mode);
	for (int i = 0; i < ROUNDS / 4; i++)
		expect_fault(fn, req, before);
	ember_unload(fn);
}

/* a write after mprotect(PROT_READ) faults, every time, after a write that mapped it writable */
static void write_after_mprotect(void **state)
{
	(void)state;
	faults_every_time("trap", "ro", "read-only 1\n");
	faults_every_time("guest", "ro", "read-only 1\n");
}

/* a read after munmap faults (with every call exiting; the in-guest runtime's pool keeps freed
 * memory readable within the invocation, see docs/run.md) */
static void read_after_munmap(void **state)
{
	(void)state;
	faults_every_time("trap", "unmap", "unmapped\n");
}

/* a page mapped and written by one invocation is gone in the next one in the same virtine */
static void mapping_gone_in_next_invocation(void **state)
{
	(void)state;
	struct ember_function *fn = load("trap");
	for (int i = 0; i < ROUNDS; i++) {
		expect_ok(fn, "map", "mapped 1\n");
		expect_fault(fn, "peek", "peek\n");
	}
	ember_unload(fn);
	/* guest mode: the address lies in the runtime's pool, mapped since the snapshot; what
	 * the last invocation wrote there must be gone */
	fn = load("guest");
	for (int i = 0; i < ROUNDS; i++) {
		struct ember_result res;
		expect_ok(fn, "map", "mapped 1\n");
		ember_invoke(fn, "peek", 4, &res);
		const char *zero =
		    "peek\nsurvived peek after another invocation mapped the page: 0\n";
		if (!(res.outcome == EMBER_CRASH && res.exit_code == 139) &&
		    !(res.outcome == EMBER_OK && res.status == 4 && res.out_len == strlen(zero) &&
		      memcmp(res.out, zero, res.out_len) == 0))
			fail_msg("guest mode 'peek': outcome %d exit %d (%s), output '%.*s'",
				 (int)res.outcome, res.exit_code, res.message, (int)res.out_len,
				 res.out ? (const char *)res.out : "");
		ember_result_free(&res);
	}
	ember_unload(fn);
}

/* pages one invocation wrote in a large mapping the snapshot holds, none of whose pages it has
 * (whole 2 MiB page directories of it never used before), read zero in the next one */
static void big_mapping_emptied(void **state)
{
	(void)state;
	static const char *const modes[] = {"trap", "guest"};
	for (size_t m = 0; m < 2; m++) {
		struct ember_function *fn = load(modes[m]);
		for (int i = 0; i < ROUNDS; i++) {
			expect_ok(fn, "bigmap", "bigmap\n");
			expect_ok(fn, "bigpeek", "bigpeek 0\n");
		}
		ember_unload(fn);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(write_after_mprotect),
	    cmocka_unit_test(read_after_munmap),
	    cmocka_unit_test(mapping_gone_in_next_invocation),
	    cmocka_unit_test(big_mapping_emptied),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
