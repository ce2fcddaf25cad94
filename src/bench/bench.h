/* Benchmark helpers: sample sets, percentiles, the options, and the table or JSON they print as. */
#ifndef EMBER_CLI_BENCH_H
#define EMBER_CLI_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "cli/opt.h"

struct bench_row {
	const char *name;
	double p50_us, p99_us;
	double exits; /* per invocation; < 0 when it does not apply */
	double extra; /* a row-specific figure (e.g. the reset's share), < 0 if none */
	const char *extra_name;
	int native; /* a native peer: the same on every backend, measured once */
};

/* sorts the samples (microseconds) and returns the q-quantile, q in [0, 1] */
double bench_quantile(double *us, size_t n, double q);
double bench_now_us(void);
/* the directory holding the ember binary, for finding the built guests and functions */
const char *bench_build_dir(void);
/* runs path as a native process: spawn, the request on a pipe, read its output, wait; returns
 * the microseconds that took, or -1 */
double bench_spawn(const char *path, const void *req, size_t len);
/* bench_spawn keeping the start of the output: at most cap - 1 bytes of its stdout in out,
 * NUL-terminated (the rest is read and dropped). The child inherits the calling thread's CPU
 * affinity. */
double bench_spawn_out(const char *path, const void *req, size_t len, char *out, size_t cap);
/* the same with args after the program's name (NULL-terminated, at most 14; NULL: none) */
double bench_spawn_argv(const char *path, const char *const *args, const void *req, size_t len,
			char *out, size_t cap);
/* the same with the file code open on fd 3 (EMBER_CODE_FD), where a runtime reads its source */
double bench_spawn_code(const char *path, const char *const *args, const char *code,
			const void *req, size_t len, char *out, size_t cap);

/* n samples of the exit floor on backend: a guest that exits at once, entered again (the
 * build folder dir holds guest/exitfloor.musl); -1 on failure, said on stderr */
int bench_exit_floor(const char *dir, const char *backend, double *us, int n);

/* the options every benchmark takes */
struct bench_opts {
	int json;
	int iters;	     /* preset by the caller: its default */
	const char *backend; /* --backend, else $EMBER_BACKEND, else both (ptrace without KVM) */
	const char *backends[2]; /* what to measure, in this order: one, or kvm then ptrace */
	int nbackends;
	const char *syscalls;  /* --syscalls (where a benchmark uses it) */
	const char *functions; /* --functions (where a benchmark uses it) */
	const char *only;      /* --only NAME,NAME (where a benchmark uses it): those rows alone */
};
/* what every benchmark's --help says of --backend */
#define BENCH_HELP_BACKEND                                                                         \
	"--backend both, the default when /dev/kvm opens, measures every row on KVM and then on\n" \
	"ptrace in this one run; without /dev/kvm it measures ptrace alone and a line says why.\n" \
	"kvm, ptrace or auto measure one backend. $EMBER_BACKEND presets the choice.\n"

/* the options every benchmark's table includes (OPT_GROUP): --json, --backend */
extern const struct opt bench_common_opts[];
/* --iterations N, from 1 to max (a number), into bench_opts.iters */
#define BENCH_OPT_ITERS(max, help)                                                                 \
	OPT_INT("iterations", 0, struct bench_opts, iters, "N", 1, max,                            \
		"--iterations needs a count from 1 to " #max, help)

/* a benchmark's command: its name ("bench cold"), --help's text before the options, its table */
#define BENCH_CMD(n, h, t)                                                                         \
	{                                                                                          \
		.name = n, .head = h, .opts = t, .col = 24,                                        \
		.no_args = "no arguments beside the options"                                       \
	}

/* Parses argv by c's table (bench_common_opts and the benchmark's own, landing in o); returns -1
 * when the benchmark should run, or the exit status to end with (help printed, or a bad option).
 * Then bench_backends. */
int bench_parse(const struct opt_cmd *c, int argc, char **argv, struct bench_opts *o);
/* what o->backend asks for, in o->backends: both (NULL too) needs a /dev/kvm that opens, else
 * ptrace alone, said in one line. -1, or CLI_EXIT_EMBER for a backend it does not know (said) */
int bench_backends(struct bench_opts *o);

/* a number, or null when it is not finite (JSON has no NaN) */
json_t *bench_json_num(double v);
/* one backend's rows as {"results": [...]}, each with its ratio to the row named floor_name */
json_t *bench_rows_json(const struct bench_row *rows, size_t n, const char *floor_name);
/* one backend's rows as a table, or as bench_rows_json */
void bench_print(const struct bench_row *rows, size_t n, int json, const char *floor_name);
/* the line that opens the output of both backends: what was measured on one, then the other */
void bench_both_line(const char *each);
/* KVM's rows next to ptrace's (the same rows in the same order) in one table; native rows once */
void bench_print_both(const struct bench_row *kvm, const struct bench_row *ptrace, size_t n,
		      const char *floor_name);

/* one figure of a KVM-over-ptrace summary: the double at off in a row */
struct bench_ratio {
	const char *name;
	size_t off;
};
/* The summary of n rows, kvm's and ptrace's each an array of rows stride bytes apart: one
 * column per figure (kvm / ptrace), and a last row with each column's median. */
void bench_ratio_print(const char *const *names, size_t n, const void *kvm, const void *ptrace,
		       size_t stride, const struct bench_ratio *cols, size_t ncols);
/* the same as [{"name": ..., figure: kvm / ptrace, ...}, ..., {"name": "median", ...}] */
json_t *bench_ratio_json(const char *const *names, size_t n, const void *kvm, const void *ptrace,
			 size_t stride, const struct bench_ratio *cols, size_t ncols);
/* {"backends": {"kvm": kvm, "ptrace": ptrace}, "kvm_over_ptrace": ratios}, printed; takes all */
void bench_print_backends(json_t *kvm, json_t *ptrace, json_t *ratios);

/* Raw samples, for `ember bench all`: with a sink set (a JSON object), every benchmark that
 * calls bench_keep adds its samples (microseconds, in the order taken) under key; without one,
 * nothing happens. */
void bench_keep_to(json_t *sink);
void bench_keep(const char *key, const double *us, size_t n);

int cli_bench_latency(int argc, char **argv);
int cli_bench_suite(int argc, char **argv);
int cli_bench_cold(int argc, char **argv);
int cli_bench_memory(int argc, char **argv);
int cli_bench_programs(int argc, char **argv);
int cli_bench_conformance(int argc, char **argv);
int cli_bench_all(int argc, char **argv);

#endif
