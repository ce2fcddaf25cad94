/* The tables and JSON the benchmarks print as: one backend's rows, KVM next to ptrace. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "cli/cli.h"

static double floor_of(const struct bench_row *rows, size_t n, const char *floor_name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(rows[i].name, floor_name))
			return rows[i].p50_us;
	return NAN;
}

json_t *bench_rows_json(const struct bench_row *rows, size_t n, const char *floor_name)
{
	double floor = floor_of(rows, n, floor_name);
	json_t *res = json_array();
	for (size_t i = 0; i < n; i++) {
		json_t *r =
		    json_pack("{s:s,s:f,s:f,s:f}", "name", rows[i].name, "p50_us", rows[i].p50_us,
			      "p99_us", rows[i].p99_us, "ratio_to_floor", rows[i].p50_us / floor);
		json_object_set_new(r, "exits_per_invocation",
				    rows[i].exits >= 0 ? json_real(rows[i].exits) : json_null());
		if (rows[i].extra >= 0)
			json_object_set_new(r, rows[i].extra_name, json_real(rows[i].extra));
		json_array_append_new(res, r);
	}
	return json_pack("{s:o}", "results", res);
}

void bench_print(const struct bench_row *rows, size_t n, int json, const char *floor_name)
{
	if (json) {
		cli_print_json(stdout, bench_rows_json(rows, n, floor_name));
		return;
	}
	double floor = floor_of(rows, n, floor_name);
	printf("%-26s %12s %12s %10s %12s  %s\n", "name", "p50_us", "p99_us", "exits/inv",
	       "x floor", "note");
	for (size_t i = 0; i < n; i++) {
		char exits[32] = "-", note[64] = "";
		if (rows[i].exits >= 0)
			snprintf(exits, sizeof(exits), "%.1f", rows[i].exits);
		if (rows[i].extra >= 0)
			snprintf(note, sizeof(note), "%s %.1f", rows[i].extra_name, rows[i].extra);
		printf("%-26s %12.1f %12.1f %10s %12.2f  %s\n", rows[i].name, rows[i].p50_us,
		       rows[i].p99_us, exits, rows[i].p50_us / floor, note);
	}
}

/* "a/b" of two figures, or "-" when they do not apply (< 0) */
static void pair(char *buf, size_t len, const char *fmt, double a, double b)
{
	if (a < 0 || b < 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, fmt, a, b);
}

void bench_both_line(const char *each)
{
	printf("backends kvm and ptrace in one run: each %s on kvm, then on ptrace\n", each);
}

void bench_print_both(const struct bench_row *kvm, const struct bench_row *ptrace, size_t n,
		      const char *floor_name)
{
	double fk = floor_of(kvm, n, floor_name), fp = floor_of(ptrace, n, floor_name);
	const char *extra = ""; /* the last column: the rows' own figure (one kind in a table) */
	for (size_t i = 0; i < n && !*extra; i++)
		if (kvm[i].extra >= 0)
			extra = kvm[i].extra_name;
	printf("%-23s %9s %9s %10s %10s %10s %9s %13s  %s k/p\n", "name", "kvm_p50", "kvm_p99",
	       "ptrace_p50", "ptrace_p99", "kvm/ptrace", "exits k/p", "x floor k/p", extra);
	for (size_t i = 0; i < n; i++) {
		const struct bench_row *k = &kvm[i], *p = &ptrace[i];
		char exits[32], xf[40], note[40] = "", pp50[16] = "", pp99[16] = "", ratio[16] = "";
		if (k->native && (i == 0 || !kvm[i - 1].native))
			printf("%-23s %9s %9s\n", "native peers (once)", "p50", "p99");
		if (!k->native) {
			snprintf(pp50, sizeof(pp50), "%.1f", p->p50_us);
			snprintf(pp99, sizeof(pp99), "%.1f", p->p99_us);
			snprintf(ratio, sizeof(ratio), "%.2f", k->p50_us / p->p50_us);
		}
		pair(exits, sizeof(exits), "%.1f/%.1f", k->exits, p->exits);
		snprintf(xf, sizeof(xf), "%.2f/%.2f", k->p50_us / fk, p->p50_us / fp);
		if (k->extra >= 0 && p->extra >= 0)
			snprintf(note, sizeof(note), "  %.1f/%.1f", k->extra, p->extra);
		printf("%-23s %9.1f %9.1f %10s %10s %10s %9s %13s%s\n", k->name, k->p50_us,
		       k->p99_us, pp50, pp99, ratio, exits, xf, note);
	}
}

/* kvm / ptrace of figure c in row i */
static double ratio_at(const void *kvm, const void *ptrace, size_t stride, size_t i,
		       const struct bench_ratio *c)
{
	const char *k = (const char *)kvm + i * stride + c->off;
	const char *p = (const char *)ptrace + i * stride + c->off;
	return *(const double *)k / *(const double *)p;
}

/* the median of figure c over the rows where it is a finite ratio */
static double ratio_median(const void *kvm, const void *ptrace, size_t stride, size_t n,
			   const struct bench_ratio *c)
{
	double *r = malloc((n ? n : 1) * sizeof(double)), med = NAN;
	size_t m = 0;
	for (size_t i = 0; r && i < n; i++)
		if (isfinite(r[m] = ratio_at(kvm, ptrace, stride, i, c)))
			m++;
	if (r && m)
		med = bench_quantile(r, m, 0.5);
	free(r);
	return med;
}

/* row i's figure c, or with i == n their median */
static double cell(const void *kvm, const void *ptrace, size_t stride, size_t n, size_t i,
		   const struct bench_ratio *c)
{
	return i < n ? ratio_at(kvm, ptrace, stride, i, c)
		     : ratio_median(kvm, ptrace, stride, n, c);
}

void bench_ratio_print(const char *const *names, size_t n, const void *kvm, const void *ptrace,
		       size_t stride, const struct bench_ratio *cols, size_t ncols)
{
	printf("%-13s", "kvm/ptrace");
	for (size_t c = 0; c < ncols; c++)
		printf(" %10s", cols[c].name);
	for (size_t i = 0; i <= n; i++) {
		printf("\n%-13s", i < n ? names[i] : "median");
		for (size_t c = 0; c < ncols; c++)
			printf(" %10.2f", cell(kvm, ptrace, stride, n, i, &cols[c]));
	}
	printf("\n");
}

json_t *bench_json_num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

json_t *bench_ratio_json(const char *const *names, size_t n, const void *kvm, const void *ptrace,
			 size_t stride, const struct bench_ratio *cols, size_t ncols)
{
	json_t *res = json_array();
	for (size_t i = 0; i <= n; i++) {
		json_t *r = json_pack("{s:s}", "name", i < n ? names[i] : "median");
		for (size_t c = 0; c < ncols; c++)
			json_object_set_new(
			    r, cols[c].name,
			    bench_json_num(cell(kvm, ptrace, stride, n, i, &cols[c])));
		json_array_append_new(res, r);
	}
	return res;
}

void bench_print_backends(json_t *kvm, json_t *ptrace, json_t *ratios)
{
	cli_print_json(stdout, json_pack("{s:{s:o,s:o},s:o}", "backends", "kvm", kvm, "ptrace",
					 ptrace, "kvm_over_ptrace", ratios));
}
