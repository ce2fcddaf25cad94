/* An image's digest hint (STATE/sites/KEY.digest) that names the wrong digest with a valid check:
 * a start from disk finds no snapshot under it, reads the site table, whose digest wins, and
 * finds the snapshot under the right one (no init); the hint is written again. Guests from
 * EMBER_GUEST_DIR (default build/guest), the backend from EMBER_BACKEND (default auto). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ember/ember.h"
#include "image/img.h"
#include "pool/pool.h"

static char tmpdir[] = "/tmp/ember-test-hint-XXXXXX";

/* the program's copy in tmpdir (an identity of its own) and the state folder */
static char prog[4200], state[4200], sites[4300];

static struct ember_function *load_ok(void)
{
	const char *b = getenv("EMBER_BACKEND");
	struct ember_config cfg = {0};
	cfg.image = prog;
	cfg.backend = b && *b ? b : "auto";
	cfg.state_dir = state;
	char err[EMBER_ERR_MAX] = "";
	struct ember_function *fn = NULL;
	int rc = ember_load(&cfg, &fn, err, sizeof(err));
	if (rc)
		fail_msg("ember_load: %s: %s", ember_error_name(rc), err);
	return fn;
}

static uint64_t prog_key(void)
{
	struct stat st;
	assert_int_equal(stat(prog, &st), 0);
	return img_file_key(&st);
}

static void test_lying_hint(void **unused)
{
	(void)unused;
	struct ember_info info;
	struct ember_function *fn = load_ok(); /* init: the snapshot, the table and the hint */
	ember_info(fn, &info);
	assert_false(info.from_disk);
	ember_unload(fn);
	fn = load_ok();
	ember_info(fn, &info);
	assert_true(info.from_disk);
	assert_string_equal(info.load.image_from, "hint");
	char snap[4200];
	snprintf(snap, sizeof(snap), "%s", info.snapshot_path);
	ember_unload(fn);

	uint64_t key = prog_key(), digest = 0, now = 0;
	assert_int_equal(img_hint_load(sites, key, &digest), 0);
	img_hint_save(sites, key, digest ^ 0x5a5a); /* checked, but another digest */
	assert_int_equal(img_hint_load(sites, key, &now), 0);
	assert_int_not_equal(now, digest);

	fn = load_ok();
	ember_info(fn, &info);
	assert_true(info.from_disk); /* the snapshot found under the table's digest */
	assert_null(info.rebuilt);
	assert_string_equal(info.snapshot_path, snap);
	assert_string_equal(info.load.image_from, "table");
	ember_unload(fn);
	assert_int_equal(img_hint_load(sites, key, &now), 0);
	assert_int_equal(now, digest); /* written again: the next load is not misled */
	fn = load_ok();
	ember_info(fn, &info);
	assert_true(info.from_disk);
	assert_string_equal(info.load.image_from, "hint");
	ember_unload(fn);
}

static int setup(void **unused)
{
	(void)unused;
	pool_shell_target(0);
	if (!mkdtemp(tmpdir))
		return -1;
	const char *dir = getenv("EMBER_GUEST_DIR");
	char cmd[9000];
	snprintf(prog, sizeof(prog), "%s/prog", tmpdir);
	snprintf(state, sizeof(state), "%s/state", tmpdir);
	snprintf(sites, sizeof(sites), "%s/sites", state);
	snprintf(cmd, sizeof(cmd), "cp '%s/hello.musl' '%s'", dir && *dir ? dir : "build/guest",
		 prog);
	return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **unused)
{
	(void)unused;
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_lying_hint),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
