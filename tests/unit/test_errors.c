/* ember_load's kinds of failure: each decided where it happens. A bad image, a bad configuration,
 * a failed initialisation, an unwritable or full state folder, too many open files, no memory
 * (RLIMIT_AS); and a first start on disk told apart from a rebuild. Guests from
 * EMBER_GUEST_DIR (default build/guest), runtimes from EMBER_RUNTIME_DIR (default
 * build/runtimes), the backend from EMBER_BACKEND (default auto). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ember/ember.h"
#include "pool/pool.h"

static char tmpdir[] = "/tmp/ember-test-errors-XXXXXX";

static void guest_path(char *path, size_t n, const char *name)
{
	const char *dir = getenv("EMBER_GUEST_DIR");
	snprintf(path, n, "%s/%s", dir && *dir ? dir : "build/guest", name);
}

static const char *backend(void)
{
	const char *b = getenv("EMBER_BACKEND");
	return b && *b ? b : "auto";
}

static struct ember_config config(const char *image)
{
	struct ember_config cfg = {0};
	cfg.image = image;
	cfg.backend = backend();
	return cfg;
}

/* ember_load must fail with want; its reason must contain text (when not NULL) */
static void expect_kind(const struct ember_config *cfg, int want, const char *text)
{
	char err[512] = "";
	struct ember_function *fn = NULL;
	int rc = ember_load(cfg, &fn, err, sizeof(err));
	if (rc == 0)
		ember_unload(fn);
	if (rc != want)
		fail_msg("%s: ember_load gave %d (%s), wanted %d (%s): %s", cfg->image, rc,
			 ember_error_name(rc), want, ember_error_name(want), err);
	if (text && !strstr(err, text))
		fail_msg("%s: the reason '%s' does not say '%s'", cfg->image, err, text);
}

static struct ember_function *load_ok(const struct ember_config *cfg)
{
	char err[512] = "";
	struct ember_function *fn = NULL;
	int rc = ember_load(cfg, &fn, err, sizeof(err));
	if (rc)
		fail_msg("%s: ember_load: %s: %s", cfg->image, ember_error_name(rc), err);
	return fn;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void test_names(void **state)
{
	(void)state;
	static const int kinds[] = {EMBER_ERR,	      EMBER_ERR_NOKVM, EMBER_ERR_IMAGE,
				    EMBER_ERR_CONFIG, EMBER_ERR_INIT,  EMBER_ERR_NOMEM,
				    EMBER_ERR_IO};
	static const char *const names[] = {"error", "nokvm", "image", "config",
					    "init",  "nomem", "io"};
	assert_int_equal(EMBER_ERR, -1); /* the old values stay */
	assert_int_equal(EMBER_ERR_NOKVM, -2);
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		assert_true(kinds[i] < 0);
		assert_string_equal(ember_error_name(kinds[i]), names[i]);
		for (size_t j = 0; j < i; j++)
			assert_int_not_equal(kinds[i], kinds[j]);
	}
	assert_string_equal(ember_error_name(0), "ok");
	assert_string_equal(ember_error_name(-99), "unknown");
}

static void test_bad_image(void **state)
{
	(void)state;
	char text[4200], missing[4200], int80[4200];
	snprintf(text, sizeof(text), "%s/text", tmpdir);
	snprintf(missing, sizeof(missing), "%s/missing", tmpdir);
	write_file(text, "#!/bin/sh\necho not an ELF file\n");
	guest_path(int80, sizeof(int80), "bad_int80.musl");
	struct ember_config cfg = config(text);
	expect_kind(&cfg, EMBER_ERR_IMAGE, "ELF");
	cfg.image = missing;
	expect_kind(&cfg, EMBER_ERR_IMAGE, "No such file");
	cfg.image = tmpdir; /* a folder */
	expect_kind(&cfg, EMBER_ERR_IMAGE, "regular file");
	cfg.image = int80; /* loads: int $0x80 is refused only when run (test_run.sh) */
	ember_unload(load_ok(&cfg));
}

static void test_bad_config(void **state)
{
	(void)state;
	char hello[4200];
	guest_path(hello, sizeof(hello), "hello.musl");
	struct ember_config cfg = config(hello);
	cfg.backend = "qemu";
	expect_kind(&cfg, EMBER_ERR_CONFIG, "backend");
	cfg = config(hello);
	cfg.mem_bytes = 4ULL << 20; /* below the minimum, which the message names */
	expect_kind(&cfg, EMBER_ERR_CONFIG, "8 MiB");
	cfg.mem_bytes = EMBER_MEM_MIN + (1ULL << 20); /* not a multiple of 2 MiB */
	expect_kind(&cfg, EMBER_ERR_CONFIG, "multiple of 2 MiB");
	cfg.mem_bytes = EMBER_MEM_MAX * 2;
	expect_kind(&cfg, EMBER_ERR_CONFIG, "64 GiB");
	cfg = config(hello);
	cfg.syscalls = "kernel";
	expect_kind(&cfg, EMBER_ERR_CONFIG, "syscalls");
	cfg = config(hello);
	cfg.restore = "eager";
	expect_kind(&cfg, EMBER_ERR_CONFIG, "restore");
	cfg = config(hello);
	cfg.cold = 1; /* without a state folder */
	expect_kind(&cfg, EMBER_ERR_CONFIG, "state folder");
	cfg = config(NULL);
	expect_kind(&cfg, EMBER_ERR_CONFIG, "no image");
	/* the minimum itself works */
	cfg = config(hello);
	cfg.mem_bytes = EMBER_MEM_MIN;
	ember_unload(load_ok(&cfg));
}

static void test_init_fails(void **state)
{
	(void)state;
	char crash[4200], slow[4200], exit0[4200];
	guest_path(crash, sizeof(crash), "crash_null.musl");
	guest_path(slow, sizeof(slow), "slowinit.musl");
	guest_path(exit0, sizeof(exit0), "exitcode.musl");
	/* strict: a crash before the snapshot point fails the load, with the crash's reason */
	struct ember_config cfg = config(crash);
	cfg.strict_init = 1;
	expect_kind(&cfg, EMBER_ERR_INIT, "page fault");
	/* not strict: the crash is the first invocation's result, as for a process */
	cfg.strict_init = 0;
	struct ember_function *fn = load_ok(&cfg);
	struct ember_result res;
	ember_invoke(fn, "", 0, &res);
	assert_int_equal(res.outcome, EMBER_CRASH);
	ember_result_free(&res);
	ember_unload(fn);
	/* an initialisation past the timeout */
	cfg = config(slow);
	cfg.strict_init = 1;
	cfg.timeout_s = 0.05;
	expect_kind(&cfg, EMBER_ERR_INIT, "timed out");
	/* a clean exit 0 during init is no failure, strict or not */
	cfg = config(exit0);
	cfg.strict_init = 1;
	ember_unload(load_ok(&cfg));
}

static void test_runtime_init_fails(void **state)
{
	(void)state;
	const char *dir = getenv("EMBER_RUNTIME_DIR");
	char js[4200];
	snprintf(js, sizeof(js), "%s/js", dir && *dir ? dir : "build/runtimes");
	static const char src[] = "throw new Error('broken at load');\n";
	const char *argv[] = {js, "handler.js", NULL};
	struct ember_config cfg = config(js);
	cfg.argv = argv;
	cfg.code = src;
	cfg.code_len = sizeof(src) - 1;
	expect_kind(&cfg, EMBER_ERR_INIT, "broken at load");
}

/* ember_load under a lowered soft limit of resource (restored after): the load must fail with
 * want, and its reason must contain text */
static void expect_kind_limited(const struct ember_config *cfg, int resource, rlim_t soft, int want,
				const char *text)
{
	struct rlimit old, lim;
	assert_int_equal(getrlimit(resource, &old), 0);
	lim = old;
	lim.rlim_cur = soft;
	assert_int_equal(setrlimit(resource, &lim), 0);
	char err[512] = "";
	struct ember_function *fn = NULL;
	int rc = ember_load(cfg, &fn, err, sizeof(err));
	assert_int_equal(setrlimit(resource, &old), 0);
	if (rc == 0)
		ember_unload(fn);
	if (rc != want || !strstr(err, text))
		fail_msg("%s under a limit of %llu (resource %d): %s (%s), wanted %s and '%s'",
			 cfg->image, (unsigned long long)soft, resource, ember_error_name(rc), err,
			 ember_error_name(want), text);
}

/* no entry of dir starts with ".tmp" or contains ".tmp-": a failed write left nothing */
static void assert_no_temporaries(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d)))
		if (strstr(de->d_name, ".tmp"))
			fail_msg("%s/%s was left behind", dir, de->d_name);
	closedir(d);
}

static void test_state_folder_io(void **state)
{
	(void)state;
	char hello[4200], file[4200], snaps[4300];
	guest_path(hello, sizeof(hello), "hello.musl");
	/* a state "folder" that is a regular file: it cannot hold snapshots/ */
	snprintf(file, sizeof(file), "%s/state-file", tmpdir);
	write_file(file, "not a folder\n");
	struct ember_config cfg = config(hello);
	cfg.state_dir = file;
	expect_kind(&cfg, EMBER_ERR_IO, "state folder");

	/* files limited to 64 KiB (as root too, unlike permissions): the snapshot's memory file
	 * cannot be written, and its temporary folder is removed */
	snprintf(file, sizeof(file), "%s/state-small", tmpdir);
	snprintf(snaps, sizeof(snaps), "%s/snapshots", file);
	cfg.state_dir = file;
	signal(SIGXFSZ, SIG_IGN); /* the write fails with EFBIG instead of killing us */
	expect_kind_limited(&cfg, RLIMIT_FSIZE, 64 << 10, EMBER_ERR_IO, "File too large");
	assert_no_temporaries(snaps);
	/* the same folder works once the limit is gone */
	ember_unload(load_ok(&cfg));
}

/* the lowest free file descriptor: everything below it is open */
static int lowest_free_fd(void)
{
	int fd = dup(0);
	assert_true(fd >= 0);
	close(fd);
	return fd;
}

static void test_too_many_files(void **state)
{
	(void)state;
	char hello[4200];
	guest_path(hello, sizeof(hello), "hello.musl");
	struct ember_config cfg = config(hello);
	/* room for no file at all: the image cannot be opened; then room for one (the image is
	 * read and closed, guest memory takes the slot): the machine cannot be made, and that is
	 * no missing KVM either */
	for (int room = 0; room < 2; room++)
		expect_kind_limited(&cfg, RLIMIT_NOFILE, (rlim_t)(lowest_free_fd() + room),
				    EMBER_ERR_IO, "Too many open files");
}

static void test_no_memory(void **state)
{
	(void)state;
	char hello[4200];
	guest_path(hello, sizeof(hello), "hello.musl");
	struct ember_config cfg = config(hello);
	cfg.mem_bytes = 4ULL << 30; /* more address space than the limit leaves */
	/* the address space in use now, plus 512 MiB */
	FILE *f = fopen("/proc/self/status", "r");
	assert_non_null(f);
	char line[256];
	unsigned long long vm_kb = 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmSize: %llu kB", &vm_kb) == 1)
			break;
	fclose(f);
	assert_true(vm_kb > 0);
	expect_kind_limited(&cfg, RLIMIT_AS, (rlim_t)(vm_kb * 1024 + (512ULL << 20)),
			    EMBER_ERR_NOMEM, "memory");
	ember_unload(load_ok(&cfg)); /* and without the limit, it loads */
}

/* a first start finds no snapshot on disk, which is no rebuild; a damaged one is rebuilt */
static void test_first_start_is_no_rebuild(void **state)
{
	(void)state;
	char hello[4200], dir[4200], path[4300];
	guest_path(hello, sizeof(hello), "hello.musl");
	snprintf(dir, sizeof(dir), "%s/state-rebuild", tmpdir);
	struct ember_config cfg = config(hello);
	cfg.state_dir = dir;
	struct ember_info info;
	struct ember_function *fn = load_ok(&cfg);
	ember_info(fn, &info);
	assert_false(info.from_disk);
	assert_null(info.rebuilt);
	assert_non_null(info.snapshot_path);
	snprintf(path, sizeof(path), "%s/state", info.snapshot_path);
	ember_unload(fn);
	fn = load_ok(&cfg);
	ember_info(fn, &info);
	assert_true(info.from_disk);
	assert_null(info.rebuilt);
	ember_unload(fn);
	write_file(path, "damaged");
	fn = load_ok(&cfg);
	ember_info(fn, &info);
	assert_false(info.from_disk);
	assert_non_null(info.rebuilt);
	assert_non_null(strstr(info.rebuilt, "refused"));
	ember_unload(fn);
}

static int setup(void **state)
{
	(void)state;
	pool_shell_target(0); /* no machines made in the background while limits are low */
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_bad_image),
	    cmocka_unit_test(test_bad_config),
	    cmocka_unit_test(test_init_fails),
	    cmocka_unit_test(test_runtime_init_fails),
	    cmocka_unit_test(test_state_folder_io),
	    cmocka_unit_test(test_too_many_files),
	    cmocka_unit_test(test_no_memory),
	    cmocka_unit_test(test_first_start_is_no_rebuild),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
