/* Raw benchmark samples: a growable set per row, its median, p99 and count, as JSON and CDF data.
 */
#ifndef EMBER_CLI_BENCH_SAMPLES_H
#define EMBER_CLI_BENCH_SAMPLES_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

/* one row's samples in microseconds, in the order taken; or why the row has none */
struct bench_set {
	char name[64];	  /* e.g. "ember_warm_hello" */
	char backend[16]; /* "kvm", "ptrace", or "native" for a peer */
	char reason[256]; /* non-empty: the row could not run, and why */
	double *us;
	size_t n, cap;
};

void bench_set_init(struct bench_set *s, const char *name, const char *backend);
/* appends one sample; -1 when out of memory */
int bench_set_add(struct bench_set *s, double us);
/* marks the row as not run (printf-style reason); its samples are kept but not reported */
void bench_set_fail(struct bench_set *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void bench_set_free(struct bench_set *s);

/* the summary of a set: quantiles of a sorted copy (the samples keep their order) */
struct bench_stats {
	size_t n;
	double p50, p99, min, max, mean;
};
/* fills st; returns -1 (st->n = 0, figures NaN) when the set is empty or has failed */
int bench_set_stats(const struct bench_set *s, struct bench_stats *st);
/* the q-quantile of n sorted values by nearest rank on (n-1)q, rounded; NaN when n == 0 */
double bench_sorted_quantile(const double *sorted, size_t n, double q);

/* {"name", "backend", "n", "p50_us", "p99_us", "min_us", "max_us", "mean_us", "samples_us":
 * [...]} or, for a failed row, {"name", "backend", "n": 0, "reason"} */
json_t *bench_set_json(const struct bench_set *s);
/* the set's empirical CDF: "US FRACTION" lines, sorted: the first sample at 0, then one line
 * per sample; nothing when failed */
int bench_set_cdf(const struct bench_set *s, FILE *f);

#endif
