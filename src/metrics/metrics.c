/* Counting for the Prometheus metrics: atomics on the request path, a lock only for new series. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics.h"

const double metrics_secs_le[NB] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
const double metrics_exits_le[NB] = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000};

struct srv_metrics *metrics_new(void)
{
	struct srv_metrics *m = calloc(1, sizeof(*m));
	if (m)
		pthread_mutex_init(&m->mu, NULL);
	return m;
}

void metrics_free(struct srv_metrics *m)
{
	if (!m)
		return;
	pthread_mutex_destroy(&m->mu);
	for (size_t i = 0; i < m->n; i++) {
		hist_destroy(&m->v[i]->hist);
		free(m->v[i]);
	}
	free(m->v);
	free(m);
}

static void observe(struct hist *h, const double *le, double v, double scale)
{
	for (int i = 0; i < NB; i++) {
		if (v <= le[i]) {
			atomic_fetch_add_explicit(&h->b[i], 1, memory_order_relaxed);
			break;
		}
	}
	atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum, (uint64_t)(v * scale), memory_order_relaxed);
}

struct srv_fn_metrics *metrics_fn(struct srv_metrics *m, const char *name)
{
	struct srv_fn_metrics *f = NULL;
	pthread_mutex_lock(&m->mu);
	for (size_t i = 0; i < m->n && !f; i++)
		if (!strcmp(m->v[i]->name, name))
			f = m->v[i];
	if (f)
		goto out;
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 16;
		struct srv_fn_metrics **v = realloc(m->v, cap * sizeof(*v));
		if (!v)
			goto out;
		m->v = v;
		m->cap = cap;
	}
	if ((f = calloc(1, sizeof(*f)))) {
		snprintf(f->name, sizeof(f->name), "%s", name);
		hist_init(&f->hist);
		m->v[m->n++] = f;
	}
out:
	pthread_mutex_unlock(&m->mu);
	return f;
}

void metrics_started(struct srv_fn_metrics *f)
{
	if (f)
		atomic_fetch_add_explicit(&f->started, 1, memory_order_relaxed);
}

/* the series of (path, method, code): found without a lock, added under one */
static struct http_series *series(struct srv_metrics *m, const char *path, const char *method,
				  unsigned code)
{
	size_t n = atomic_load_explicit(&m->nhttp, memory_order_acquire), i;
	for (i = 0; i < n; i++) {
		struct http_series *h = &m->http[i];
		if (h->path == path && h->code == code && h->method == method)
			return h;
	}
	pthread_mutex_lock(&m->mu);
	n = atomic_load_explicit(&m->nhttp, memory_order_relaxed);
	for (; i < n; i++) { /* added meanwhile */
		struct http_series *h = &m->http[i];
		if (h->path == path && h->code == code && h->method == method)
			break;
	}
	struct http_series *h = i < NHTTP ? &m->http[i] : NULL;
	if (h && i == n) {
		h->path = path; /* its histogram is zero: never used */
		h->method = method;
		h->code = code;
		atomic_store_explicit(&m->nhttp, n + 1, memory_order_release);
	}
	pthread_mutex_unlock(&m->mu);
	return h;
}

void metrics_http(struct srv_metrics *m, const char *path, const char *method, unsigned code,
		  double seconds)
{
	static const char *const methods[] = {"GET",	"HEAD",	   "POST",  "PUT",
					      "DELETE", "OPTIONS", "PATCH", "other"};
	size_t k = 0;
	while (k + 1 < sizeof(methods) / sizeof(methods[0]) && strcmp(methods[k], method))
		k++;
	struct http_series *h = series(m, path, methods[k], code);
	if (h)
		observe(&h->secs, metrics_secs_le, seconds, SECS_SCALE);
	else
		atomic_fetch_add_explicit(&m->http_dropped, 1, memory_order_relaxed);
}

/* the statuses the server answers with itself; another (a function's response head chose it)
 * takes no slot of the last SERVER_SLOTS, so that a function's own codes never crowd them out */
static const unsigned server_codes[] = {200, 400, 404, 413, 429, 500, 502, 503, 504};
#define SERVER_SLOTS 5

static void count_code(struct srv_fn_metrics *f, unsigned code)
{
	size_t n = NCODES - SERVER_SLOTS;
	for (size_t i = 0; i < sizeof(server_codes) / sizeof(server_codes[0]); i++)
		if (server_codes[i] == code)
			n = NCODES;
	for (size_t i = 0; i < NCODES; i++) {
		if (i >= n) { /* past its slots: counted only where it has one already */
			if (atomic_load_explicit(&f->codes[i].code, memory_order_acquire) != code)
				continue;
			atomic_fetch_add_explicit(&f->codes[i].n, 1, memory_order_relaxed);
			return;
		}
		unsigned c = atomic_load_explicit(&f->codes[i].code, memory_order_acquire);
		if (!c && atomic_compare_exchange_strong(&f->codes[i].code, &c, code))
			c = code;
		if (c == code) {
			atomic_fetch_add_explicit(&f->codes[i].n, 1, memory_order_relaxed);
			return;
		}
	}
}

void metrics_invocation(struct srv_metrics *m, struct srv_fn_metrics *f, unsigned code,
			double seconds, const struct ember_result *res, double init_s)
{
	if (f) {
		count_code(f, code);
		observe(&f->secs, metrics_secs_le, seconds, SECS_SCALE);
		if (res) {
			observe(&f->exits, metrics_exits_le, (double)res->exits, 1);
			unsigned st = (unsigned)res->start < NSTART ? res->start : EMBER_START_INIT;
			atomic_fetch_add_explicit(&f->starts[st], 1, memory_order_relaxed);
		}
		hist_record(&f->hist, hist_now(), code, seconds, res);
	}
	if (res && init_s >= 0)
		observe(&m->init, metrics_secs_le, init_s, SECS_SCALE);
}
