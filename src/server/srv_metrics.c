/* Prometheus metrics: OpenFaaS gateway names plus Ember's starts, exits, virtines, async queue. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/srv_async.h"

#define NB     11  /* finite buckets per histogram */
#define NCODES 8   /* distinct HTTP statuses counted per function */
#define NHTTP  256 /* distinct (route, method, status) series of http_requests_total */

static const double secs_le[NB] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
static const double exits_le[NB] = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000};

struct hist {
	uint64_t b[NB], count;
	double sum;
};

struct fn_metrics {
	char name[SRV_NAME_MAX];
	struct {
		unsigned code;
		uint64_t n;
	} codes[NCODES];
	size_t ncodes;
	struct hist secs, exits;
	uint64_t cold, warm, started;
};

/* one series of the gateway's http_requests_total / http_request_duration_seconds */
struct http_series {
	const char *path; /* a route's pattern, or "other": bounded, never the raw URL */
	char method[8];
	unsigned code;
	struct hist secs;
};

struct srv_metrics {
	pthread_mutex_t mu;
	struct fn_metrics *v;
	size_t n, cap;
	struct hist init;
	struct http_series http[NHTTP];
	size_t nhttp;
	uint64_t http_dropped; /* requests past NHTTP series */
};

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
	free(m->v);
	free(m);
}

static void observe(struct hist *h, const double *le, double v)
{
	for (int i = 0; i < NB; i++) {
		if (v <= le[i]) {
			h->b[i]++;
			break;
		}
	}
	h->count++;
	h->sum += v;
}

static struct fn_metrics *fn_of(struct srv_metrics *m, const char *name)
{
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->v[i].name, name))
			return &m->v[i];
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 16;
		struct fn_metrics *v = realloc(m->v, cap * sizeof(*v));
		if (!v)
			return NULL;
		m->v = v;
		m->cap = cap;
	}
	struct fn_metrics *f = &m->v[m->n++];
	memset(f, 0, sizeof(*f));
	snprintf(f->name, sizeof(f->name), "%s", name);
	return f;
}

void metrics_started(struct srv_metrics *m, const char *name)
{
	pthread_mutex_lock(&m->mu);
	struct fn_metrics *f = fn_of(m, name);
	if (f)
		f->started++;
	pthread_mutex_unlock(&m->mu);
}

void metrics_http(struct srv_metrics *m, const char *path, const char *method, unsigned code,
		  double seconds)
{
	static const char *const methods[] = {"GET",	"HEAD",	   "POST",  "PUT",
					      "DELETE", "OPTIONS", "PATCH", "other"};
	size_t k = 0;
	while (k + 1 < sizeof(methods) / sizeof(methods[0]) && strcmp(methods[k], method))
		k++;
	pthread_mutex_lock(&m->mu);
	size_t i;
	for (i = 0; i < m->nhttp; i++)
		if (m->http[i].path == path && m->http[i].code == code &&
		    !strcmp(m->http[i].method, methods[k]))
			break;
	if (i == m->nhttp && i < NHTTP) {
		m->http[i].path = path;
		m->http[i].code = code;
		snprintf(m->http[i].method, sizeof(m->http[i].method), "%s", methods[k]);
		m->nhttp++;
	}
	if (i < NHTTP)
		observe(&m->http[i].secs, secs_le, seconds);
	else
		m->http_dropped++;
	pthread_mutex_unlock(&m->mu);
}

void metrics_invocation(struct srv_metrics *m, const char *name, unsigned code, double seconds,
			const struct ember_result *res, double init_s)
{
	pthread_mutex_lock(&m->mu);
	struct fn_metrics *f = fn_of(m, name);
	if (f) {
		size_t i;
		for (i = 0; i < f->ncodes && f->codes[i].code != code; i++)
			;
		if (i == f->ncodes && i < NCODES)
			f->codes[f->ncodes++].code = code;
		if (i < NCODES)
			f->codes[i].n++;
		observe(&f->secs, secs_le, seconds);
		if (res) {
			observe(&f->exits, exits_le, (double)res->exits);
			if (init_s < 0)
				f->warm++;
			else
				f->cold++;
		}
	}
	if (res && init_s >= 0)
		observe(&m->init, secs_le, init_s);
	pthread_mutex_unlock(&m->mu);
}

static void head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* label: "" or `function_name="x",` */
static void hist(FILE *f, const char *name, const char *label, const struct hist *h,
		 const double *le)
{
	uint64_t cum = 0;
	for (int i = 0; i < NB; i++) {
		cum += h->b[i];
		fprintf(f, "%s_bucket{%sle=\"%g\"} %llu\n", name, label, le[i],
			(unsigned long long)cum);
	}
	fprintf(f, "%s_bucket{%sle=\"+Inf\"} %llu\n", name, label, (unsigned long long)h->count);
	int n = (int)strlen(label) - 1; /* without the trailing comma */
	if (n > 0)
		fprintf(f, "%s_sum{%.*s} %.6f\n%s_count{%.*s} %llu\n", name, n, label, h->sum, name,
			n, label, (unsigned long long)h->count);
	else
		fprintf(f, "%s_sum %.6f\n%s_count %llu\n", name, h->sum, name,
			(unsigned long long)h->count);
}

static void per_function(FILE *f, struct srv_metrics *m)
{
	char label[SRV_NAME_MAX + 32];
	head(f, "gateway_function_invocation_total", "counter", "Invocations by HTTP status.");
	for (size_t i = 0; i < m->n; i++)
		for (size_t k = 0; k < m->v[i].ncodes; k++)
			fprintf(f,
				"gateway_function_invocation_total{function_name=\"%s\","
				"code=\"%u\"} %llu\n",
				m->v[i].name, m->v[i].codes[k].code,
				(unsigned long long)m->v[i].codes[k].n);
	head(f, "gateway_function_invocation_started", "counter", "Invocations begun.");
	for (size_t i = 0; i < m->n; i++)
		fprintf(f, "gateway_function_invocation_started{function_name=\"%s\"} %llu\n",
			m->v[i].name, (unsigned long long)m->v[i].started);
	head(f, "gateway_functions_seconds", "histogram", "Invocation time, queueing included.");
	for (size_t i = 0; i < m->n; i++) {
		snprintf(label, sizeof(label), "function_name=\"%s\",", m->v[i].name);
		hist(f, "gateway_functions_seconds", label, &m->v[i].secs, secs_le);
	}
	head(f, "ember_cold_starts_total", "counter",
	     "Invocations not started from a pooled virtine.");
	for (size_t i = 0; i < m->n; i++)
		fprintf(f, "ember_cold_starts_total{function_name=\"%s\"} %llu\n", m->v[i].name,
			(unsigned long long)m->v[i].cold);
	head(f, "ember_warm_starts_total", "counter", "Invocations started from a pooled virtine.");
	for (size_t i = 0; i < m->n; i++)
		fprintf(f, "ember_warm_starts_total{function_name=\"%s\"} %llu\n", m->v[i].name,
			(unsigned long long)m->v[i].warm);
	head(f, "ember_exits_per_invocation", "histogram", "VM exits of one invocation.");
	for (size_t i = 0; i < m->n; i++) {
		snprintf(label, sizeof(label), "function_name=\"%s\",", m->v[i].name);
		hist(f, "ember_exits_per_invocation", label, &m->v[i].exits, exits_le);
	}
	head(f, "ember_init_seconds", "histogram",
	     "Time before a cold invocation ran: loading, restoring, waiting for a machine.");
	hist(f, "ember_init_seconds", "", &m->init, secs_le);
}

static void http_requests(FILE *f, struct srv_metrics *m)
{
	char label[160];
	head(f, "http_requests_total", "counter", "HTTP requests by route, method and status.");
	for (size_t i = 0; i < m->nhttp; i++)
		fprintf(f, "http_requests_total{code=\"%u\",method=\"%s\",path=\"%s\"} %llu\n",
			m->http[i].code, m->http[i].method, m->http[i].path,
			(unsigned long long)m->http[i].secs.count);
	head(f, "http_request_duration_seconds", "histogram",
	     "HTTP request time, from its headers to the reply's end.");
	for (size_t i = 0; i < m->nhttp; i++) {
		snprintf(label, sizeof(label), "code=\"%u\",method=\"%s\",path=\"%s\",",
			 m->http[i].code, m->http[i].method, m->http[i].path);
		hist(f, "http_request_duration_seconds", label, &m->http[i].secs, secs_le);
	}
	head(f, "ember_http_requests_unlabelled_total", "counter",
	     "HTTP requests past the bound on label sets, counted here only.");
	fprintf(f, "ember_http_requests_unlabelled_total %llu\n",
		(unsigned long long)m->http_dropped);
}

/* the async queue's gauges and counters */
static void async_metrics(FILE *f, struct srv *s)
{
	struct async_gauges g;
	async_gauges(s, &g);
	const struct {
		const char *name, *type, *help;
		uint64_t v;
	} rows[] = {
	    {"ember_async_queue_depth", "gauge", "Async calls waiting in the queue.", g.depth},
	    {"ember_async_running", "gauge", "Async calls being run by the workers.", g.running},
	    {"ember_async_calls_accepted_total", "counter", "Async calls accepted (202).",
	     g.accepted},
	    {"ember_async_calls_completed_total", "counter",
	     "Async calls run to the end, their callback delivered or dropped.", g.completed},
	    {"ember_async_calls_rejected_total", "counter",
	     "Async calls refused because the queue was full (429).", g.rejected},
	    {"ember_async_callbacks_failed_total", "counter",
	     "Callbacks dropped after their last try.", g.callbacks_failed},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		head(f, rows[i].name, rows[i].type, rows[i].help);
		fprintf(f, "%s %llu\n", rows[i].name, (unsigned long long)rows[i].v);
	}
}

static uint64_t rss_bytes(void)
{
	unsigned long long size = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "re");
	if (f) {
		if (fscanf(f, "%llu %llu", &size, &rss) != 2)
			rss = 0;
		fclose(f);
	}
	return rss * (uint64_t)sysconf(_SC_PAGESIZE);
}

char *metrics_render(struct srv *s, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	if (!f)
		return NULL;
	pthread_mutex_lock(&s->metrics->mu);
	per_function(f, s->metrics);
	http_requests(f, s->metrics);
	pthread_mutex_unlock(&s->metrics->mu);
	head(f, "gateway_service_count", "gauge", "Virtines of each function (ready or running).");
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->nfns; i++) {
		struct ember_info info = {0};
		if (s->fns[i]->inst)
			ember_info(s->fns[i]->inst->fn, &info);
		fprintf(
		    f, "gateway_service_count{function_name=\"%s\"} %llu\n", s->fns[i]->spec->name,
		    (unsigned long long)(s->fns[i]->inst ? info.ready + s->fns[i]->inflight : 0));
	}
	head(f, "ember_function_costly", "gauge",
	     "1 while a function's invocations wait for a costly slot.");
	for (size_t i = 0; i < s->nfns; i++)
		fprintf(f, "ember_function_costly{function_name=\"%s\"} %d\n",
			s->fns[i]->spec->name,
			s->fns[i]->inst ? atomic_load(&s->fns[i]->inst->costly) : 0);
	pthread_mutex_unlock(&s->mu);
	struct reg_gauges g;
	reg_gauges(s, &g);
	head(f, "ember_functions", "gauge", "Deployed functions.");
	fprintf(f, "ember_functions %zu\n", g.functions);
	head(f, "ember_virtines_alive", "gauge", "Virtines ready in pools or running.");
	fprintf(f, "ember_virtines_alive %llu\n", (unsigned long long)g.alive);
	head(f, "ember_virtines_ready", "gauge", "Virtines ready in pools.");
	fprintf(f, "ember_virtines_ready %llu\n", (unsigned long long)g.ready);
	async_metrics(f, s);
	head(f, "ember_http_connections_cut_total", "counter",
	     "Connections shut because a request was not read within readTimeout, or none started "
	     "within connectionTimeout.");
	fprintf(f, "ember_http_connections_cut_total %lu\n", atomic_load(&s->conns_cut));
	unsigned busy, waiting;
	cpu_gauges(s, &busy, &waiting);
	head(f, "ember_costly_slots_busy", "gauge", "Costly slots running an invocation.");
	fprintf(f, "ember_costly_slots_busy %u\n", busy);
	head(f, "ember_costly_waiting", "gauge", "Invocations waiting for a costly slot.");
	fprintf(f, "ember_costly_waiting %u\n", waiting);
	head(f, "ember_costly_marked_total", "counter", "Times a function was found costly.");
	fprintf(f, "ember_costly_marked_total %lu\n", atomic_load(&s->costly_marked));
	head(f, "ember_costly_refused_total", "counter",
	     "Calls of costly functions answered 429: the slots' queue was full.");
	fprintf(f, "ember_costly_refused_total %lu\n", atomic_load(&s->costly_refused));
	head(f, "process_resident_memory_bytes", "gauge", "Resident memory of the server.");
	fprintf(f, "process_resident_memory_bytes %llu\n", (unsigned long long)rss_bytes());
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

enum MHD_Result h_metrics(struct srv *s, struct srv_req *r)
{
	size_t len = 0;
	char *text = metrics_render(s, &len);
	if (!text)
		return srv_reply_error(r, 500, "out of memory");
	return srv_reply(r, 200, "text/plain; version=0.0.4; charset=utf-8", text, len, 1, NULL, 0);
}
