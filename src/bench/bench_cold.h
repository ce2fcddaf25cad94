/* The helpers of `ember bench cold`: disk bandwidth, working-set files, clean-up, its series and
 * output. */
#ifndef EMBER_CLI_BENCH_COLD_H
#define EMBER_CLI_BENCH_COLD_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "cli/cli.h"

/* sequential O_DIRECT read bandwidth of the disk holding dir, in MB/s (a 256 MiB file written,
 * synced, dropped from the page cache, read in 4 MiB chunks, removed); < 0 on failure */
double cold_disk_mb_s(const char *dir);
/* the page addresses of the working-set file of the one snapshot under state, sorted; -1 when
 * there is none */
int bench_ws_pages(const char *state, uint64_t **pages, size_t *n);
/* |A ∩ B| / |A ∪ B| of two sorted page sets (1 when both are empty) */
double cold_jaccard(const uint64_t *a, size_t na, const uint64_t *b, size_t nb);
/* drops every file of the state folder from the page cache (written back first) */
void cold_drop_cache(const char *state);
/* removes path and everything under it */
void cold_rm_rf(const char *path);

/* one function's figures */
struct cold_row {
	double lazy_p50_ms, reap_p50_ms, speedup, faults_lazy, faults_reap, ws_pages;
	double record_overhead, prefetch_mb_s, warm_p50_ms, ws_common;
	double lazy_resp_ms, reap_resp_ms; /* p50 to the response (the table and kvm/ptrace only) */
	/* the request's own start, a clean shell ready before it: p50s of getting the shell,
	 * the restore and the run (ember_result's wait + setup + run), from the snapshot in
	 * memory into a fresh virtine (restore), from disk lazily and with REAP */
	double restore_p50_ms, lazy_start_ms, reap_start_ms, reap_over_restore;
	double ws_mib, read_mb_s; /* the working set; the rate of its reads alone */
	/* REAP's mean breakdown in µs (ember_result's), and lazy's time serving faults */
	double p_shell, p_snapshot, p_open, p_first, p_read, p_install, p_run, p_fault, p_waits;
	double p_mis; /* REAP on KVM: pages outside the working set the run touched (mean) */
	/* reap_p50_ms / restore_p50_ms: a start from disk, load and all, over one from memory */
	double cold_over_restore;
	/* the REAP starts' loads (ember_info.load), means in µs, and how the last one got its
	 * image and files */
	double l_total, l_image, l_sites, l_interp, l_bundle, l_state, l_plan;
	const char *image_from, *bundle_from;
	double lazy_fault_us;
};

/* the series that need no disk: starts restored from the snapshot in memory into a fresh virtine
 * (ember_trim before each), p50 in ms; -1 when one failed or did not restore */
struct ember_function;
struct ember_result;
int cold_restore_p50(struct ember_function *fn, const void *req, size_t len, int iters, double *ms,
		     double *p50);
/* waits (a bounded poll) until a clean shell of fn's own kind (memory, backend, vCPUs) is ready */
void cold_wait_shell(const struct ember_function *fn);
/* adds one REAP (or lazy) start's breakdown to row's means over iters starts, with its load's
 * (fn: its function, not unloaded yet) */
void cold_add_parts(struct cold_row *row, const struct ember_result *res, int reap, int iters,
		    struct ember_function *fn);
/* the third table: the load, where its time went, cold_over_restore */
void cold_print_load(const char *const *names, const struct cold_row *rows, size_t n);
/* the breakdown table (restore next to the cold starts, where their time went) */
void cold_print_parts(const char *const *names, double disk, const struct cold_row *rows, size_t n);
/* the breakdown's JSON fields into o, and the load's */
void cold_json_parts(json_t *o, const struct cold_row *r, double disk);
void cold_json_load(json_t *o, const struct cold_row *r);
/* today's {"disk_mb_s", "results", "mean_speedup"} of one backend */
json_t *cold_json(const char *const *names, double disk, const struct cold_row *rows, size_t n,
		  double mean);
void cold_print_table(const char *const *names, const char *backend, int iters, double disk,
		      const struct cold_row *rows, size_t n, double mean);

/* one run of the bench: its backend, starts per series and folders */
struct cold_ctx {
	const char *backend;
	int iters;
	char build[4096], src[4200], tmp[4096];
};

/* one function: how to load it, its requests and expected output */
struct cold_fn {
	const char *name;
	struct cli_program p;
	char files[4400]; /* the files the build made for it (functions/NAME/files.py), or "" */
	uint8_t *small, *large, *want; /* want: small.out, or NULL */
	size_t small_len, large_len, want_len;
};

/* the series (bench_cold_run.c), each -1 when a start failed (said on stderr): a snapshot made
 * in a fresh state folder, then one recording REAP start (to its return in *ms); N cold starts in
 * mode (lazy or reap; ms: 3 * N samples, p50s to the return, to the response, the request's own
 * start; faults: their mean; row: the working set, the prefetch rate, the breakdown); N warm
 * invocations after a warm-up (ms); N restores from the snapshot in memory (p50 in *p50) */
int cold_record(const struct cold_ctx *x, const struct cold_fn *f, const char *state, int large,
		double *ms);
int cold_series(const struct cold_ctx *x, const struct cold_fn *f, const char *state,
		const char *mode, double *ms, double p50[3], double *faults, struct cold_row *row);
int cold_warm_series(const struct cold_ctx *x, const struct cold_fn *f, double *ms);
int cold_restore_series(const struct cold_ctx *x, const struct cold_fn *f, double *ms, double *p50);

#endif
