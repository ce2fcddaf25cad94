/* The clean-shell refiller: a configuration whose machines cannot be made costs it no CPU (it
 * backs off and sleeps), and once they can be made again it refills the cache. The thread's CPU
 * time comes from /proc/self/task/TID/schedstat, polled: never a fixed sleep. The backend from
 * EMBER_BACKEND (default: kvm when /dev/kvm opens, else ptrace). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "pool/pool.h"

#define POLL_NS	  (10ULL * 1000 * 1000)	       /* a poll every 10 ms */
#define WINDOW_NS (300ULL * 1000 * 1000)       /* idle: this long ... */
#define IDLE_CPU  (3ULL * 1000 * 1000)	       /* ... using less CPU than this (1 %) */
#define BOUND_NS  (20ULL * 1000 * 1000 * 1000) /* a condition not met by then fails */

static enum vm_backend test_backend(void)
{
	const char *b = getenv("EMBER_BACKEND");
	enum vm_backend v;
	if (b && *b && strcmp(b, "auto") && !vm_backend_parse(b, &v))
		return v;
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return VM_BACKEND_PTRACE;
	close(fd);
	return VM_BACKEND_KVM;
}

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

static void nap(void)
{
	struct timespec t = {0, (long)POLL_NS};
	nanosleep(&t, NULL);
}

/* the refiller's thread id (it names itself ember-shells), or 0 */
static int refiller_tid(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int tid = 0;
	while (d && !tid && (de = readdir(d))) {
		char path[300], comm[64] = "";
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", de->d_name);
		FILE *f = fopen(path, "r");
		if (f && fgets(comm, sizeof(comm), f) && !strcmp(comm, "ember-shells\n"))
			tid = atoi(de->d_name);
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return tid;
}

/* an open /proc/self/task/TID/schedstat (open before file limits are lowered), read again at
 * every sample: the nanoseconds the thread has run on a CPU */
static int schedstat(int tid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fail_msg("%s: %m", path);
	return fd;
}

static uint64_t cpu_ns(int fd)
{
	char buf[128];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	assert_true(n > 0);
	buf[n] = 0;
	return strtoull(buf, NULL, 10);
}

/* polls until the refiller has used less than IDLE_CPU in the last WINDOW_NS; fails when it
 * never does within BOUND_NS (a busy loop uses all of every window) */
static void expect_idle(int fd, const char *when)
{
	uint64_t start = now_ns(), t0 = start, c0 = cpu_ns(fd), worst = 0;
	for (;;) {
		nap();
		uint64_t t = now_ns(), c = cpu_ns(fd);
		if (c - c0 < IDLE_CPU && t - t0 >= WINDOW_NS)
			return;
		if (c - c0 >= IDLE_CPU) { /* busy in this window: start a new one */
			uint64_t pct = (c - c0) * 100 / (t - t0 ? t - t0 : 1);
			worst = pct > worst ? pct : worst;
			t0 = t;
			c0 = c;
		}
		if (t - start > BOUND_NS)
			fail_msg(
			    "%s: the refiller never went idle in %llu s (up to %llu %% of a CPU)",
			    when, (unsigned long long)(BOUND_NS / 1000000000),
			    (unsigned long long)worst);
	}
}

/* polls until the cache holds n shells of cfg */
static void expect_ready(const struct vm_config *cfg, unsigned n)
{
	uint64_t start = now_ns();
	while (pool_shell_ready(cfg) < n) {
		if (now_ns() - start > BOUND_NS)
			fail_msg("the cache never refilled: %u of %u shells after %llu s",
				 pool_shell_ready(cfg), n,
				 (unsigned long long)(BOUND_NS / 1000000000));
		nap();
	}
}

static int lowest_free_fd(void)
{
	int fd = dup(0);
	assert_true(fd >= 0);
	close(fd);
	return fd;
}

static void test_refiller_backs_off(void **state)
{
	(void)state;
	char err[256];
	struct vm *vm = NULL;
	pool_shell_target(2);
	/* a kind that can never be made: 6 MiB is below the minimum */
	struct vm_config bad = {6ULL << 20, test_backend(), 1};
	assert_int_equal(pool_shell(&bad, &vm, err, sizeof(err)), EMBER_ERR_CONFIG);
	int tid = 0;
	for (uint64_t t0 = now_ns(); !(tid = refiller_tid()) && now_ns() - t0 < BOUND_NS;)
		nap();
	assert_true(tid > 0);
	int fd = schedstat(tid);
	expect_idle(fd, "a kind that can never be made");

	/* a kind that cannot be made for now: no file slot for its guest memory */
	struct vm_config good = {EMBER_MEM_MIN, test_backend(), 1};
	struct rlimit old, lim;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	lim = old;
	lim.rlim_cur = (rlim_t)lowest_free_fd();
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &lim), 0);
	int rc = pool_shell(&good, &vm, err, sizeof(err));
	expect_idle(fd, "a kind that fails for now");
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	if (rc != EMBER_ERR_IO)
		fail_msg("pool_shell without a file slot: %d: %s", rc, err);
	assert_int_equal(pool_shell_ready(&good), 0);

	/* the host recovered: the next retry refills the cache, then the refiller sleeps */
	expect_ready(&good, 2);
	expect_idle(fd, "a full cache");
	assert_int_equal(pool_shell(&good, &vm, err, sizeof(err)), VM_OK);
	vm_destroy(vm);
	expect_ready(&good, 2);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_refiller_backs_off),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
