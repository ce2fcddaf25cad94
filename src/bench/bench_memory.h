/* ember bench memory's parts. */
#ifndef EMBER_CLI_BENCH_MEMORY_H
#define EMBER_CLI_BENCH_MEMORY_H

#include <jansson.h>

#include "ember/ember.h"

#define MAX_N	   8
#define BUDGET_KIB (20ULL << 20) /* 20 GiB */

struct mem_opts {
	const char *backend;
	char build[4096];
	unsigned n[MAX_N];
	int nn, max;
	long long map_count;  /* --max-map-count: vm.max_map_count for the search, put back after */
	int processes;	      /* --processes: the search split over this many processes */
	long long budget_kib; /* a child's share of the 20 GiB (0: all of it) */
	int max_only;	      /* --max-only F: only the search, for function F - 1 (0: all) */
	/* the rows' loads keep their files in a state folder of their own, as ember serve's
	 * do (a runtime's packed library then stays on disk, in the page cache); "": none */
	char state[64];
};

/* what ember bench memory's command line sets */
struct mem_args {
	struct mem_opts o;
	int json;
	int child; /* --max-child F: one share of a split search (bench_memmax.c), -1: none */
};
/* bench_memory_cmd.c: argv into a by its option table; -1 to run, else the exit status */
int bench_mem_parse(int argc, char **argv, struct mem_args *a);

struct bench_mem_fn {
	const char *name;
	const char *runtime; /* NULL: build/functions/NAME */
	unsigned max_n;	     /* the largest N measured (0: any): a runtime's private copies */
};
extern const struct bench_mem_fn bench_mem_fns[];
#define NMAX_FNS 2 /* the largest-N search: hello and hello-js, the first two */

/* a field of a /proc file in kB ("Pss:", "MemAvailable:"), or -1 */
long long bench_proc_kib(const char *path, const char *field);
long long bench_pss_kib(void);
/* the process's mappings (/proc/self/maps) and open descriptors, or -1 */
long long bench_maps(void);
long long bench_fds(void);
/* one row's figures per instance: PSS and kernel KiB, host mappings, descriptors */
struct mem_row {
	double pss, kern, maps, fds;
	double slot_kib; /* guest memory under KVM's memory slots, per ready virtine */
};
/* the host's used memory, KVM's own structures outside any process's PSS included */
long long bench_used_kib(void);
int bench_mem_load(const struct mem_opts *o, int f, const char *mode, unsigned pool, unsigned max,
		   struct ember_function **fn);
/* bench_memmax.c: the largest N of upm virtines of function f within the budget, and what
 * stopped it; split over o->processes spawned processes */
unsigned bench_max_warm(const struct mem_opts *o, int f, const char **why);
unsigned bench_max_warm_split(const struct mem_opts *o, int f, const char **why);

/* the reset rows (bench_reset.c): printed unless json; returned as a JSON array */
json_t *bench_resets(const char *build, int json, int with_ptrace);

#endif
