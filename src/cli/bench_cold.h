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
};
/* today's {"disk_mb_s", "results", "mean_speedup"} of one backend */
json_t *cold_json(const char *const *names, double disk, const struct cold_row *rows, size_t n,
		  double mean);
void cold_print_table(const char *const *names, const char *backend, int iters, double disk,
		      const struct cold_row *rows, size_t n, double mean);

#endif
