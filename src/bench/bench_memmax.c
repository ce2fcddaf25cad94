/* ember bench memory: the largest N of warm virtines that fits, in one process or split over
 * several. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench_memory.h"

#define MAX_WARM  20000 /* the most the search makes */
#define WARM_STEP 250
/* the search stops while the host still has this much free: every process of a split search
 * adds a step at once, and the host's other work must go on (an OOM kill would be the host's) */
#define MEM_FLOOR_KIB (2LL << 20)

/* memory the host can still give: free pages and the inactive page cache (not shmem's, which
 * guest memory is). Not MemAvailable: it counts reclaimable slab, and each VM pins ~66 KiB of
 * KVM's debugfs inodes and dentries there (measured: the kernel killed a search at MemAvailable
 * 3.8 GB); nor the active page cache, which the host's running programs use */
static long long free_kib(void)
{
	static const char *const f[] = {"MemFree:", "Inactive(file):"};
	long long sum = 0;
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		long long v = bench_proc_kib("/proc/meminfo", f[i]);
		if (v < 0)
			return -1;
		sum += v;
	}
	return sum;
}

/* what stopped the search: the kernel limit nearest to being reached */
static const char *limit_hit(void)
{
	long long maps = bench_maps(), max_maps = bench_proc_kib("/proc/sys/vm/max_map_count", "");
	if (max_maps > 0 && maps > max_maps - 64)
		return "vm.max_map_count";
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && (rlim_t)bench_fds() > rl.rlim_cur - 16)
		return "RLIMIT_NOFILE";
	long long avail = free_kib();
	if (avail >= 0 && avail < MEM_FLOOR_KIB + (1LL << 20))
		return "memory";
	return "virtine creation failed";
}

/* upm virtines of function f made in steps until one fails, 20 GiB of PSS is used or the host
 * has MEM_FLOOR_KIB left. A share of a split search (o->budget_kib set) says its count on
 * stdout and holds its virtines until stdin ends, so that the shares' counts are held at once:
 * a share that stopped must not free memory the others go on to take. */
unsigned bench_max_warm(const struct mem_opts *o, int f, const char **why)
{
	struct ember_function *fn;
	long long budget = o->budget_kib ? o->budget_kib : (long long)BUDGET_KIB;
	*why = "20 GiB";
	if (bench_mem_load(o, f, "upm", 1, MAX_WARM, &fn))
		return *why = "load failed", 0;
	long long p0 = bench_pss_kib();
	unsigned have = 0;
	while (have < MAX_WARM) {
		int got = ember_warm(fn, have + WARM_STEP);
		struct ember_info info;
		ember_info(fn, &info);
		unsigned now = info.ready;
		if (got < 0 || now < have + WARM_STEP) {
			*why = limit_hit();
			have = now;
			break;
		}
		have = now;
		if (bench_pss_kib() - p0 > budget)
			break;
		/* the host's memory, KVM's own structures included, shared by every process of
		 * a split search */
		long long avail = free_kib();
		if (avail >= 0 && avail < MEM_FLOOR_KIB) {
			*why = "memory";
			break;
		}
		fprintf(stderr, "ember bench memory: %s: %u warm\n", bench_mem_fns[f].name, have);
	}
	if (have >= MAX_WARM)
		*why = "the search's own bound";
	if (o->budget_kib) {
		char c;
		printf("%u %s\n", have, *why);
		fflush(stdout);
		while (read(0, &c, 1) > 0)
			;
	}
	ember_unload(fn);
	return have;
}

/* the search for function f split over o->processes processes, each an `ember bench memory
 * --max-child F` of its own (its own descriptor limit, its own page store), run at once; the
 * counts summed once every one has said its count (each holds its virtines until then: its
 * stdin, a pipe, is closed after the last count is read), the limit that stopped the first one
 * named */
unsigned bench_max_warm_split(const struct mem_opts *o, int f, const char **why)
{
	static char limit[64];
	pid_t pids[16];
	FILE *out[16];
	int hold[16]; /* each share's stdin: closed when every share has said its count */
	int n = o->processes;
	char fs[8], budget[32];
	snprintf(fs, sizeof(fs), "%d", f);
	snprintf(budget, sizeof(budget), "%lld", (long long)BUDGET_KIB / n);
	for (int i = 0; i < n; i++) {
		int fd[2], in[2];
		if (pipe(fd))
			return *why = "no pipe", 0;
		if (pipe2(in, O_CLOEXEC)) {
			close(fd[0]), close(fd[1]);
			return *why = "no pipe", 0;
		}
		hold[i] = in[1];
		char *argv[] = {"ember",
				"bench",
				"memory",
				"--max-child",
				fs,
				"--budget-kib",
				budget,
				o->backend ? "--backend" : NULL,
				(char *)o->backend,
				NULL};
		posix_spawn_file_actions_t fa;
		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
		posix_spawn_file_actions_adddup2(&fa, in[0], 0);
		posix_spawn_file_actions_addclose(&fa, fd[0]);
		extern char **environ;
		if (posix_spawn(&pids[i], "/proc/self/exe", &fa, NULL, argv, environ))
			pids[i] = -1;
		posix_spawn_file_actions_destroy(&fa);
		close(fd[1]);
		close(in[0]);
		out[i] = fdopen(fd[0], "r");
	}
	unsigned total = 0;
	*why = "?";
	for (int i = 0; i < n; i++) {
		unsigned got = 0;
		char lim[64] = "";
		if (out[i] && fscanf(out[i], "%u %63[^\n]", &got, lim) >= 1) {
			total += got;
			if (i == 0)
				snprintf(limit, sizeof(limit), "%s", lim), *why = limit;
		}
	}
	for (int i = 0; i < n; i++) { /* every share held its count at once: they may go */
		close(hold[i]);
		if (out[i])
			fclose(out[i]);
		if (pids[i] > 0)
			waitpid(pids[i], NULL, 0);
	}
	return total;
}
