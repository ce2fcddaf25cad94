/* The helpers of `ember bench cold`: disk bandwidth, working-set files, clean-up, its output. */
#ifndef EMBER_CLI_BENCH_COLD_H
#define EMBER_CLI_BENCH_COLD_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* sequential O_DIRECT read bandwidth of the disk holding dir, in MB/s (a 256 MiB file written,
 * synced, dropped from the page cache, read in 4 MiB chunks, removed); < 0 on failure */
double cold_disk_mb_s(const char *dir);
/* the page addresses of the working-set file of the one snapshot under state, sorted; -1 when
 * there is none */
int cold_ws_pages(const char *state, uint64_t **pages, size_t *n);
/* |A ∩ B| / |A ∪ B| of two sorted page sets (1 when both are empty) */
double cold_jaccard(const uint64_t *a, size_t na, const uint64_t *b, size_t nb);
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
	double lazy_fault_us;
};

/* the series that need no disk: starts restored from the snapshot in memory into a fresh virtine
 * (ember_trim before each), p50 in ms; -1 when one failed or did not restore */
struct ember_function;
struct ember_result;
int cold_restore_p50(struct ember_function *fn, const void *req, size_t len, int iters, double *ms,
		     double *p50);
/* waits (a bounded poll) until a clean shell of the default configuration for backend is ready */
void cold_wait_shell(const char *backend);
/* adds one REAP (or lazy) start's breakdown to row's means over iters starts */
void cold_add_parts(struct cold_row *row, const struct ember_result *res, int reap, int iters);
/* the breakdown table (restore next to the cold starts, where their time went) */
void cold_print_parts(const char *const *names, double disk, const struct cold_row *rows, size_t n);
/* the breakdown's JSON fields into o */
void cold_json_parts(json_t *o, const struct cold_row *r, double disk);
/* today's {"disk_mb_s", "results", "mean_speedup"} of one backend */
json_t *cold_json(const char *const *names, double disk, const struct cold_row *rows, size_t n,
		  double mean);
void cold_print_table(const char *const *names, const char *backend, int iters, double disk,
		      const struct cold_row *rows, size_t n, double mean);

#endif
