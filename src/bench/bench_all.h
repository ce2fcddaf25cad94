/* `ember bench all`: its parts (latency with the peers, suite, cold, HTTP), their JSON and plots.
 */
#ifndef EMBER_CLI_BENCH_ALL_H
#define EMBER_CLI_BENCH_ALL_H

#include <stdio.h>

#include <jansson.h>

#include "bench/bench.h"

struct all_ctx {
	char out[4096];	  /* --out DIR */
	char build[4096]; /* the build folder */
	char tmp[4096];	  /* scratch, removed at the end */
	char vmlinux[4200];
	const char *backends[2];
	int nbackends;
	int iters; /* latency samples per fast row */
	int suite_iters, cold_iters;
	double http_secs;  /* seconds per HTTP point */
	const char *concs; /* HTTP concurrency levels, "1 4 16" */
	int peer_timeout_ms;
	const char *peers; /* --peers: a comma list, or NULL for all */
	int quick;
	char load0[64];	 /* /proc/loadavg's three figures when the run started */
	json_t *summary; /* per part: what summary.md says, {"rows": [...], "goals": [...]} */
};

/* /proc/loadavg's three load averages, "1.00 0.50 0.25" */
void all_loadavg(char *out, size_t len);
/* DIR/summary.md: the machine, the method, every part's rows, the goals */
void all_summary_md(struct all_ctx *c, double secs);
/* 1 when name is one of the comma list's words, or list is NULL */
int all_in_list(const char *list, const char *name);
/* progress on stderr: "bench all: PART: ..." */
void all_progress(const char *part, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* writes o to DIR/name (indented); takes o; -1 on failure, said on stderr */
int all_write_json(const struct all_ctx *c, const char *name, json_t *o);
/* DIR/name opened for writing, or NULL (said on stderr) */
FILE *all_open(const struct all_ctx *c, const char *name);
/* runs gnuplot on DIR/name.gp (which writes DIR/name.png); -1 when it failed or is missing */
int all_gnuplot(const struct all_ctx *c, const char *name);

/* the parts: each writes DIR/PART.json and its plots, adds its rows to c->summary; -1 when it
 * could not run at all */
int all_latency(struct all_ctx *c);
int all_suite(struct all_ctx *c);
int all_cold(struct all_ctx *c);
int all_http(struct all_ctx *c);
int all_memory(struct all_ctx *c);

/* runs a benchmark command (cli_bench_suite ...) with its stdout captured and parsed as the JSON
 * it prints, and the raw samples it keeps into samples; NULL on failure */
json_t *all_capture(const struct all_ctx *c, int (*fn)(int, char **), char **argv, json_t *samples);

#endif
