/* `ember bench programs`: what its files share: the run's settings, a row and its figures. */
#ifndef EMBER_CLI_BENCH_PROGRAMS_H
#define EMBER_CLI_BENCH_PROGRAMS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "ember/ember.h"

/* the run's settings, the same for every row and backend */
struct prog_run {
	int iters;	      /* rounds per row: each takes one sample of every figure in turn */
	long threads_k;	      /* thread_create_join: creates and joins per invocation */
	long long work;	      /* parallel_cpus2: rounds of work per thread */
	long procs_k;	      /* fork_exec_wait, fork_wait: rounds per invocation */
	const char *syscalls; /* Ember's syscall mode; NULL: its default */
	char dir[4096];	      /* the build folder: guest/, corpus/ */
	double load[2];	      /* the 1-minute load average at the start and at the end, or NAN */
};

/* what a row's goal compares */
enum prog_goal {
	GOAL_NONE,
	GOAL_RATIO_LE, /* ratio <= value */
	GOAL_RATIO_GE, /* ratio >= value */
	GOAL_EXITS_EQ, /* exits per invocation == value, in guest mode (trap mode exits per call) */
};

#define PROG_EXTRAS 6

struct prog_result;

/* one row of the benchmark */
struct prog_row {
	const char *name;
	/* fills out (its figures, or skipped/failed); out arrives with the names and NANs set */
	void (*measure)(const struct prog_run *r, const struct prog_row *row, const char *backend,
			struct prog_result *out);
	const char *image; /* the program, under the build folder (or an absolute path) */
	uint64_t mem;	   /* guest memory; 0: Ember's default */
	/* NULL: ratio, p50_us / native_p50_us; else the ratio's name (its meaning in ratio_is) */
	const char *ratio_name;
	const char *ratio_is;
	enum prog_goal goal;
	double goal_v;
	/* prog_warm's: the arguments after the program's name (NULL: none), the request and what
	 * its output must hold (NULL: "Ember" and "Hello, Ember!") */
	const char *const *args;
	const char *request, *expect;
};

/* one row on one backend: its figures (NAN where they do not apply), or why there are none */
struct prog_result {
	const struct prog_row *row;
	const char *backend;
	const char *syscalls; /* the mode Ember ran the row in, from ember_info; NULL: none */
	char skipped[EMBER_ERR_MAX + 64]; /* refused by Ember as configured: not measured, why */
	char failed[EMBER_ERR_MAX + 64];  /* could not be measured: why (the run exits 125) */
	double p50_us, p99_us;		  /* Ember's figure */
	double native_p50_us, native_p99_us;
	double ratio; /* p50_us / native_p50_us, or what the row's ratio_name says it is */
	double exits; /* per invocation */
	struct {
		const char *name;
		double v;
	} extra[PROG_EXTRAS]; /* the row's own figures: JSON fields, the table's notes */
	int nextra;
};

/* the rows' measures: bench_programs_warm.c, bench_programs_threads.c,
 * bench_programs_procs.c (fork_exec_wait and fork_wait: the row's request is forkbench's mode) */
void prog_floor(const struct prog_run *r, const struct prog_row *row, const char *backend,
		struct prog_result *out);
void prog_warm(const struct prog_run *r, const struct prog_row *row, const char *backend,
	       struct prog_result *out);
/* bench_programs_runtimes.c: image is a handler's source under the repository, args[0] its
 * runtime; the native peer is the runtime's program started with the same loader and source */
void prog_runtime(const struct prog_run *r, const struct prog_row *row, const char *backend,
		  struct prog_result *out);
void prog_threads(const struct prog_run *r, const struct prog_row *row, const char *backend,
		  struct prog_result *out);
void prog_parallel(const struct prog_run *r, const struct prog_row *row, const char *backend,
		   struct prog_result *out);
void prog_procs(const struct prog_run *r, const struct prog_row *row, const char *backend,
		struct prog_result *out);

/* where row's program is: under the build folder, or its absolute path */
void prog_path(const struct prog_run *r, const struct prog_row *row, char *path, size_t len);
/* row's function loaded on backend with cpus vCPUs; 0, or the EMBER_ERR_* kind with why in out
 * (skipped for a configuration Ember refuses, EMBER_ERR_CONFIG; failed otherwise) */
int prog_load(const struct prog_run *r, const struct prog_row *row, const char *backend,
	      unsigned cpus, struct ember_function **fn, struct prog_result *out);
/* one invocation as its caller sees it: wall time (the reset included), and Ember's account */
struct prog_sample {
	double us, exits;
	double run_us, reset_us; /* ember_result's: running it, putting the virtine back */
};
/* one warm invocation with req into s, the start of its stdout in buf; -1 when it did not exit
 * 0, with why in out->failed */
int prog_invoke(struct ember_function *fn, const char *req, struct prog_sample *s, char *buf,
		size_t cap, struct prog_result *out);
/* an extra figure of out */
void prog_extra(struct prog_result *out, const char *name, double v);

/* whether out meets its row's goal: 1, 0, or -1 when it does not apply (skipped, failed, no
 * goal, an exits goal outside guest mode); its text in buf ("ratio <= 0.1") */
int prog_goal_met(const struct prog_result *out, char *buf, size_t len);
/* every result as {"iterations", ..., "results": [...]} (bench_programs_print.c) */
json_t *prog_json(const struct prog_run *r, const struct prog_result *res, size_t n);
/* the same as a table, then each row's own figures */
void prog_table(const struct prog_result *res, size_t n);

#endif
