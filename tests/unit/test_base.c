/* The base layer (src/base): write-all over short writes, whole-file reads and their limit,
 * atomic replace (the old file stays when the new one cannot be written), little-endian fields,
 * the monotonic clock and deadlines. Size parsing (base_parse_size): test_spec.c. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base.h"

#define BIG (1 << 20) /* more than a pipe holds: the writer is made to write in parts */

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/ember-test-base-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

static void path_in(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", dir, name);
}

/* a child reads the pipe in small pieces while the parent writes 1 MiB: every write is short */
static void write_all_survives_short_writes(void **state)
{
	(void)state;
	uint8_t *buf = malloc(BIG), *got = NULL;
	assert_non_null(buf);
	for (size_t i = 0; i < BIG; i++)
		buf[i] = (uint8_t)(i * 7 + 3);
	int p[2], back[2];
	assert_int_equal(pipe(p), 0);
	assert_int_equal(pipe(back), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) { /* reads it all (base_read_fd, to the end), sends it back */
		close(p[1]);
		close(back[0]);
		size_t len = 0;
		if (base_read_fd(p[0], 2 * BIG, &got, &len) || len != BIG)
			_exit(1);
		_exit(base_write_all(back[1], got, len) ? 2 : 0);
	}
	close(p[0]);
	close(back[1]);
	assert_int_equal(base_write_all(p[1], buf, BIG), 0);
	close(p[1]);
	size_t len = 0;
	assert_int_equal(base_read_fd(back[0], 2 * BIG, &got, &len), 0);
	close(back[0]);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(len, BIG);
	assert_memory_equal(got, buf, BIG);
	assert_int_equal(got[len], 0); /* a NUL after the data */
	free(got);
	free(buf);
}

static void write_all_reports_a_closed_reader(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe(p), 0);
	close(p[0]);
	signal(SIGPIPE, SIG_IGN);
	assert_int_equal(base_write_all(p[1], "x", 1), -EPIPE);
	close(p[1]);
}

static void pwrite_all_writes_at_its_offset(void **state)
{
	(void)state;
	char path[128];
	path_in(path, sizeof(path), "sparse");
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(base_pwrite_all(fd, "abc", 3, 8192), 0);
	assert_int_equal(base_pwrite_all(fd, "abc", 3, -1), -EINVAL);
	close(fd);
	uint8_t *got;
	size_t len;
	assert_int_equal(base_read_file(path, 1 << 20, &got, &len), 0);
	assert_int_equal(len, 8195);
	assert_int_equal(got[0], 0);
	assert_memory_equal(got + 8192, "abc", 3);
	free(got);
}

static void read_file_keeps_to_its_limit(void **state)
{
	(void)state;
	char path[128];
	path_in(path, sizeof(path), "ten");
	assert_int_equal(base_replace(path, "0123456789", 10, 0644), 0);
	uint8_t *got = NULL;
	size_t len = 0;
	assert_int_equal(base_read_file(path, 10, &got, &len), 0);
	assert_int_equal(len, 10);
	assert_string_equal((char *)got, "0123456789");
	free(got);
	assert_int_equal(base_read_file(path, 9, &got, &len), -EFBIG);
	path_in(path, sizeof(path), "none");
	assert_int_equal(base_read_file(path, 10, &got, &len), -ENOENT);
	path_in(path, sizeof(path), "empty");
	assert_int_equal(base_replace(path, "", 0, 0600), 0);
	assert_int_equal(base_read_file(path, 0, &got, &len), 0);
	assert_int_equal(len, 0);
	free(got);
}

static void replace_swaps_the_whole_file(void **state)
{
	(void)state;
	char path[128];
	path_in(path, sizeof(path), "secret");
	assert_int_equal(base_replace(path, "old", 3, 0600), 0);
	assert_int_equal(base_replace(path, "newer", 5, 0640), 0);
	uint8_t *got;
	size_t len;
	assert_int_equal(base_read_file(path, 100, &got, &len), 0);
	assert_string_equal((char *)got, "newer");
	free(got);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0640);
}

/* a replace that cannot be made (a folder it may not write into: EACCES; a folder of the
 * file's name: the rename refused; no folder at all: ENOENT) returns the error, leaves the old
 * file as it was and no temporary file beside it */
static void replace_failure_leaves_the_old_file(void **state)
{
	(void)state;
	char sub[128], path[192], file[256];
	path_in(sub, sizeof(sub), "ro");
	assert_int_equal(mkdir(sub, 0755), 0);
	snprintf(path, sizeof(path), "%s/f", sub);
	assert_int_equal(base_replace(path, "old", 3, 0644), 0);
	if (geteuid() != 0) { /* root writes into a read-only folder anyway */
		assert_int_equal(chmod(sub, 0555), 0);
		assert_int_equal(base_replace(path, "new", 3, 0644), -EACCES);
		assert_int_equal(chmod(sub, 0755), 0);
	}
	/* the rename refused: a folder of the file's name */
	char d[200];
	snprintf(d, sizeof(d), "%s/d", sub);
	assert_int_equal(mkdir(d, 0755), 0);
	snprintf(file, sizeof(file), "%s/x", d);
	assert_int_equal(base_replace(file, "x", 1, 0644), 0);
	assert_true(base_replace(d, "new", 3, 0644) < 0); /* EISDIR */
	uint8_t *got;
	size_t len;
	assert_int_equal(base_read_file(path, 100, &got, &len), 0);
	assert_string_equal((char *)got, "old");
	free(got);
	/* neither left a temporary beside the files */
	DIR *dd = opendir(sub);
	struct dirent *e;
	while ((e = readdir(dd)))
		assert_null(strstr(e->d_name, BASE_TMP));
	closedir(dd);
	assert_int_equal(base_replace("/nonexistent-ember/f", "x", 1, 0644), -ENOENT);
	snprintf(file, sizeof(file), "%s/f/under-a-file", sub); /* root too: ENOTDIR */
	assert_int_equal(base_replace(file, "x", 1, 0644), -ENOTDIR);
}

static void clock_moves_forward(void **state)
{
	(void)state;
	uint64_t t0 = base_now_ns();
	struct timespec ts = {0, 2000000};
	nanosleep(&ts, NULL);
	assert_true(base_now_ns() > t0);
	assert_true(base_us_since(t0) >= 2000);
}

/* a wait on a condition from base_cond_init ends at base_deadline, not before */
static void deadline_ends_a_wait(void **state)
{
	(void)state;
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t cv;
	base_cond_init(&cv);
	uint64_t t0 = base_now_ns();
	struct timespec ts;
	base_deadline(&ts, 0.05);
	pthread_mutex_lock(&mu);
	int rc = 0;
	while (rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&cv, &mu, &ts);
	pthread_mutex_unlock(&mu);
	assert_true(base_us_since(t0) >= 50000);
	assert_true(base_us_since(t0) < 5000000);
	base_deadline(&ts, 1.999999999); /* the nanoseconds carry into the seconds */
	assert_true(ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000L);
	pthread_cond_destroy(&cv);
}

static void little_endian_fields(void **state)
{
	(void)state;
	uint8_t b[9] = {0};
	base_put_le(b, 0x0102030405060708ULL, 8);
	const uint8_t want[8] = {8, 7, 6, 5, 4, 3, 2, 1};
	assert_memory_equal(b, want, 8);
	assert_int_equal(b[8], 0); /* nothing past its width */
	assert_int_equal(base_get_le(b, 8), 0x0102030405060708ULL);
	assert_int_equal(base_get_le(b, 4), 0x05060708);
	base_put_le(b, 0xaabbccddeeULL, 4); /* the low four bytes */
	assert_int_equal(base_get_le(b, 4), 0xbbccddee);
	assert_int_equal(b[4], 4);
	assert_int_equal(base_get_le(b, 0), 0);
}

static void round_up_to_alignment(void **state)
{
	(void)state;
	assert_int_equal(BASE_ROUND_UP(0, 4096), 0);
	assert_int_equal(BASE_ROUND_UP(1, 4096), 4096);
	assert_int_equal(BASE_ROUND_UP(4096, 4096), 4096);
	assert_int_equal(BASE_ROUND_UP((2ULL << 20) + 1, 2ULL << 20), 4ULL << 20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(write_all_survives_short_writes),
	    cmocka_unit_test(write_all_reports_a_closed_reader),
	    cmocka_unit_test(pwrite_all_writes_at_its_offset),
	    cmocka_unit_test(read_file_keeps_to_its_limit),
	    cmocka_unit_test(replace_swaps_the_whole_file),
	    cmocka_unit_test(replace_failure_leaves_the_old_file),
	    cmocka_unit_test(clock_moves_forward),
	    cmocka_unit_test(deadline_ends_a_wait),
	    cmocka_unit_test(little_endian_fields),
	    cmocka_unit_test(round_up_to_alignment),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
