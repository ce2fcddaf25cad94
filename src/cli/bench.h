/* Benchmark helpers: sample sets, percentiles, and the table or JSON they print as. */
#ifndef EMBER_CLI_BENCH_H
#define EMBER_CLI_BENCH_H

#include <stddef.h>
#include <stdint.h>

struct bench_row {
	const char *name;
	double p50_us, p99_us;
	double exits; /* per invocation; < 0 when it does not apply */
	double extra; /* a row-specific figure (e.g. the reset's median), < 0 if none */
	const char *extra_name;
};

/* sorts the samples (microseconds) and returns the q-quantile, q in [0, 1] */
double bench_quantile(double *us, size_t n, double q);
double bench_now_us(void);
/* the directory holding the ember binary, for finding the built guests and functions */
const char *bench_build_dir(void);
void bench_print(const struct bench_row *rows, size_t n, int json, const char *floor_name);
/* runs path as a native process: spawn, the request on a pipe, read its output, wait; returns
 * the microseconds that took, or -1 */
double bench_spawn(const char *path, const void *req, size_t len);

/* the options every benchmark takes */
struct bench_opts {
	int json;
	int iters;	       /* preset by the caller: its default */
	const char *backend;   /* --backend, else $EMBER_BACKEND, else kvm */
	const char *syscalls;  /* --syscalls (where a benchmark uses it) */
	const char *functions; /* --functions (where a benchmark uses it) */
};

/* Parses --json, --iterations, --backend and --help, and with extras --syscalls and
 * --functions; returns -1 when the benchmark should run, or the exit status to end with (help
 * printed, or a bad option). */
int bench_parse(int argc, char **argv, struct bench_opts *o, int max_iters, int extras,
		const char *help);

int cli_bench_latency(int argc, char **argv);
int cli_bench_suite(int argc, char **argv);
int cli_bench_cold(int argc, char **argv);

#endif
