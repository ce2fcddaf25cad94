/* Raw benchmark samples: a growable set per row, its median, p99 and count, as JSON and CDF data.
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_samples.h"

void bench_set_init(struct bench_set *s, const char *name, const char *backend)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	snprintf(s->backend, sizeof(s->backend), "%s", backend);
}

int bench_set_add(struct bench_set *s, double us)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		double *p = realloc(s->us, cap * sizeof(double));
		if (!p)
			return -1;
		s->us = p;
		s->cap = cap;
	}
	s->us[s->n++] = us;
	return 0;
}

void bench_set_fail(struct bench_set *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->reason, sizeof(s->reason), fmt, ap);
	va_end(ap);
	if (!s->reason[0])
		snprintf(s->reason, sizeof(s->reason), "failed");
}

void bench_set_free(struct bench_set *s)
{
	free(s->us);
	s->us = NULL;
	s->n = s->cap = 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double bench_sorted_quantile(const double *sorted, size_t n, double q)
{
	if (n == 0)
		return NAN;
	size_t i = (size_t)(q * (double)(n - 1) + 0.5);
	return sorted[i < n ? i : n - 1];
}

/* a sorted copy of the samples, or NULL */
static double *sorted_copy(const struct bench_set *s)
{
	double *c = s->n ? malloc(s->n * sizeof(double)) : NULL;
	if (!c)
		return NULL;
	memcpy(c, s->us, s->n * sizeof(double));
	qsort(c, s->n, sizeof(double), cmp_double);
	return c;
}

int bench_set_stats(const struct bench_set *s, struct bench_stats *st)
{
	*st = (struct bench_stats){0, NAN, NAN, NAN, NAN, NAN};
	double *c = s->reason[0] ? NULL : sorted_copy(s);
	if (!c)
		return -1;
	double sum = 0;
	for (size_t i = 0; i < s->n; i++)
		sum += c[i];
	*st = (struct bench_stats){s->n,
				   bench_sorted_quantile(c, s->n, 0.5),
				   bench_sorted_quantile(c, s->n, 0.99),
				   c[0],
				   c[s->n - 1],
				   sum / (double)s->n};
	free(c);
	return 0;
}

static json_t *num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

json_t *bench_set_json(const struct bench_set *s)
{
	json_t *o = json_pack("{s:s,s:s}", "name", s->name, "backend", s->backend);
	struct bench_stats st;
	if (bench_set_stats(s, &st)) {
		json_object_set_new(o, "n", json_integer(0));
		json_object_set_new(o, "reason",
				    json_string(s->reason[0] ? s->reason : "no samples"));
		return o;
	}
	json_t *raw = json_array();
	for (size_t i = 0; i < s->n; i++)
		json_array_append_new(raw, num(s->us[i]));
	json_object_set_new(o, "n", json_integer((json_int_t)st.n));
	json_object_set_new(o, "p50_us", num(st.p50));
	json_object_set_new(o, "p99_us", num(st.p99));
	json_object_set_new(o, "min_us", num(st.min));
	json_object_set_new(o, "max_us", num(st.max));
	json_object_set_new(o, "mean_us", num(st.mean));
	json_object_set_new(o, "samples_us", raw);
	return o;
}

int bench_set_cdf(const struct bench_set *s, FILE *f)
{
	double *c = s->reason[0] ? NULL : sorted_copy(s);
	if (!c)
		return -1;
	fprintf(f, "%.3f %.6f\n", c[0], 0.0); /* the rise at the first sample, drawn as a step */
	for (size_t i = 0; i < s->n; i++)
		fprintf(f, "%.3f %.6f\n", c[i], (double)(i + 1) / (double)s->n);
	free(c);
	return 0;
}
