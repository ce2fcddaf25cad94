/* Prometheus metrics: OpenFaaS gateway names plus Ember's starts, pools, budget, async queue. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "async/async.h"
#include "server/srv_cluster.h"
#include "metrics/metrics.h"
#include "server/srv_core.h"
#include "server/srv_registry.h"
#include "server/srv_cpu.h"
#include "server/srv_http.h"

static void memory_rows(FILE *f, struct srv *s);

static uint64_t get(const atomic_uint_fast64_t *a)
{
	return atomic_load_explicit(a, memory_order_relaxed);
}

static void head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* label: "" or `function_name="x",` */
static void hist(FILE *f, const char *name, const char *label, const struct hist *h,
		 const double *le, double scale)
{
	uint64_t cum = 0;
	for (int i = 0; i < NB; i++) {
		cum += get(&h->b[i]);
		fprintf(f, "%s_bucket{%sle=\"%g\"} %llu\n", name, label, le[i],
			(unsigned long long)cum);
	}
	/* +Inf and count from the same reading, never below the finite buckets */
	uint64_t count = get(&h->count);
	count = count < cum ? cum : count;
	double sum = (double)get(&h->sum) / scale;
	fprintf(f, "%s_bucket{%sle=\"+Inf\"} %llu\n", name, label, (unsigned long long)count);
	int n = (int)strlen(label) - 1; /* without the trailing comma */
	if (n > 0)
		fprintf(f, "%s_sum{%.*s} %.6f\n%s_count{%.*s} %llu\n", name, n, label, sum, name, n,
			label, (unsigned long long)count);
	else
		fprintf(f, "%s_sum %.6f\n%s_count %llu\n", name, sum, name,
			(unsigned long long)count);
}

/* one counter per function, of what pick reads */
static void per_fn(FILE *f, struct srv_metrics *m, const char *name, const char *help,
		   uint64_t (*pick)(const struct srv_fn_metrics *))
{
	head(f, name, "counter", help);
	for (size_t i = 0; i < m->n; i++)
		fprintf(f, "%s{function_name=\"%s\"} %llu\n", name, m->v[i]->name,
			(unsigned long long)pick(m->v[i]));
}

static uint64_t started_of(const struct srv_fn_metrics *v)
{
	return get(&v->started);
}

static uint64_t warm_of(const struct srv_fn_metrics *v)
{
	return get(&v->starts[EMBER_START_WARM]);
}

static uint64_t not_warm_of(const struct srv_fn_metrics *v)
{
	return get(&v->starts[EMBER_START_RESTORE]) + get(&v->starts[EMBER_START_COLD]) +
	       get(&v->starts[EMBER_START_INIT]);
}

static void per_function(FILE *f, struct srv_metrics *m)
{
	char label[SRV_NAME_MAX + 32];
	head(f, "gateway_function_invocation_total", "counter", "Invocations by HTTP status.");
	for (size_t i = 0; i < m->n; i++)
		for (size_t k = 0; k < NCODES; k++) {
			unsigned code = atomic_load(&m->v[i]->codes[k].code);
			if (code)
				fprintf(f,
					"gateway_function_invocation_total{function_name=\"%s\","
					"code=\"%u\"} %llu\n",
					m->v[i]->name, code,
					(unsigned long long)get(&m->v[i]->codes[k].n));
		}
	per_fn(f, m, "gateway_function_invocation_started", "Invocations begun.", started_of);
	head(f, "gateway_functions_seconds", "histogram", "Invocation time, queueing included.");
	for (size_t i = 0; i < m->n; i++) {
		snprintf(label, sizeof(label), "function_name=\"%s\",", m->v[i]->name);
		hist(f, "gateway_functions_seconds", label, &m->v[i]->secs, metrics_secs_le,
		     SECS_SCALE);
	}
	head(
	    f, "ember_starts_total", "counter",
	    "Invocations by how they got their virtine: warm (a ready one), restore (from the "
	    "snapshot in memory, on the request's path), cold (from disk), init (from the image).");
	for (size_t i = 0; i < m->n; i++)
		for (int k = 0; k < NSTART; k++)
			fprintf(f, "ember_starts_total{function_name=\"%s\",start=\"%s\"} %llu\n",
				m->v[i]->name, ember_start_name(k),
				(unsigned long long)get(&m->v[i]->starts[k]));
	per_fn(f, m, "ember_cold_starts_total",
	       "Deprecated: ember_starts_total{start!=\"warm\"} (restore, cold and init summed).",
	       not_warm_of);
	per_fn(f, m, "ember_warm_starts_total", "Deprecated: ember_starts_total{start=\"warm\"}.",
	       warm_of);
	head(f, "ember_exits_per_invocation", "histogram", "VM exits of one invocation.");
	for (size_t i = 0; i < m->n; i++) {
		snprintf(label, sizeof(label), "function_name=\"%s\",", m->v[i]->name);
		hist(f, "ember_exits_per_invocation", label, &m->v[i]->exits, metrics_exits_le, 1);
	}
	head(f, "ember_init_seconds", "histogram",
	     "Time before an invocation that was not warm ran: loading, restoring, waiting for a "
	     "machine.");
	hist(f, "ember_init_seconds", "", &m->init, metrics_secs_le, SECS_SCALE);
}

static void http_requests(FILE *f, struct srv_metrics *m)
{
	char label[160];
	size_t n = atomic_load_explicit(&m->nhttp, memory_order_acquire);
	head(f, "http_requests_total", "counter", "HTTP requests by route, method and status.");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "http_requests_total{code=\"%u\",method=\"%s\",path=\"%s\"} %llu\n",
			m->http[i].code, m->http[i].method, m->http[i].path,
			(unsigned long long)get(&m->http[i].secs.count));
	head(f, "http_request_duration_seconds", "histogram",
	     "HTTP request time, from its headers to the reply's end.");
	for (size_t i = 0; i < n; i++) {
		snprintf(label, sizeof(label), "code=\"%u\",method=\"%s\",path=\"%s\",",
			 m->http[i].code, m->http[i].method, m->http[i].path);
		hist(f, "http_request_duration_seconds", label, &m->http[i].secs, metrics_secs_le,
		     SECS_SCALE);
	}
	head(f, "ember_http_requests_unlabelled_total", "counter",
	     "HTTP requests past the bound on label sets, counted here only.");
	fprintf(f, "ember_http_requests_unlabelled_total %llu\n",
		(unsigned long long)get(&m->http_dropped));
}

/* rows of one value each: gauges and counters without labels */
struct row {
	const char *name, *type, *help;
	uint64_t v;
};

static void rows(FILE *f, const struct row *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		head(f, r[i].name, r[i].type, r[i].help);
		fprintf(f, "%s %llu\n", r[i].name, (unsigned long long)r[i].v);
	}
}

/* the async queue's gauges and counters */
static void async_metrics(FILE *f, struct srv *s)
{
	struct async_gauges g;
	async_gauges(s, &g);
	const struct row r[] = {
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
	rows(f, r, sizeof(r) / sizeof(r[0]));
}

static void budget_metrics(FILE *f, struct srv *s)
{
	struct ember_budget_usage u;
	ember_budget_usage(s->budget, &u);
	const struct row r[] = {
	    {"ember_memory_budget_bytes", "gauge",
	     "Guest memory all virtines may hold (--memory-budget).", u.limit},
	    {"ember_virtine_memory_bytes", "gauge", "Guest memory the virtines hold now.", u.used},
	    {"ember_virtine_memory_peak_bytes", "gauge",
	     "The most guest memory the virtines ever held at once.", u.peak},
	    {"ember_memory_budget_waits_total", "counter",
	     "Invocations or loads that waited for a virtine to give its memory back.", u.waits},
	    {"ember_memory_budget_refused_total", "counter",
	     "Spare virtines not made because the budget was full.", u.refused},
	};
	rows(f, r, sizeof(r) / sizeof(r[0]));
}

/* per function, what its pool holds and does (ember_info), 0 while it is not loaded; in the
 * order of the columns of pool_metrics */
#define POOL_COLS 8
static void pool_values(const struct ember_info *i, uint64_t *v)
{
	const uint64_t vals[POOL_COLS] = {i->ready + i->in_use, i->ready,   i->in_use, i->target,
					  i->capacity,		i->refills, i->trims,  i->restores};
	memcpy(v, vals, sizeof(vals));
}

static void pool_metrics(FILE *f, struct srv *s)
{
	static const struct {
		const char *name, *type, *help;
	} cols[POOL_COLS] = {
	    {"gateway_service_count", "gauge", "Virtines of each function (ready or running)."},
	    {"ember_pool_ready", "gauge", "Virtines ready for an invocation."},
	    {"ember_pool_in_use", "gauge", "Virtines running an invocation."},
	    {"ember_pool_target", "gauge",
	     "Virtines (ready and in use) the pool follows: the recent peak of concurrent "
	     "invocations plus headroom."},
	    {"ember_pool_capacity", "gauge",
	     "The most virtines the pool keeps: maxConcurrency within the memory budget."},
	    {"ember_pool_refills_total", "counter",
	     "Virtines made ready by the background refiller (since the function was loaded)."},
	    {"ember_pool_trims_total", "counter",
	     "Ready virtines dropped as demand fell (since the function was loaded)."},
	    {"ember_pool_restores_total", "counter",
	     "Invocations that restored a virtine on their own path: none was ready (since the "
	     "function was loaded)."},
	};
	pthread_mutex_lock(&s->mu);
	uint64_t(*v)[POOL_COLS] = calloc(s->nfns ? s->nfns : 1, sizeof(*v));
	for (size_t i = 0; v && i < s->nfns; i++) {
		struct ember_info info = {0};
		if (s->fns[i]->inst)
			ember_info(s->fns[i]->inst->fn, &info);
		pool_values(&info, v[i]);
	}
	for (size_t c = 0; v && c < POOL_COLS; c++) {
		head(f, cols[c].name, cols[c].type, cols[c].help);
		for (size_t i = 0; i < s->nfns; i++)
			fprintf(f, "%s{function_name=\"%s\"} %llu\n", cols[c].name,
				s->fns[i]->spec->name, (unsigned long long)v[i][c]);
	}
	head(f, "ember_function_costly", "gauge",
	     "1 while a function's invocations wait for a costly slot.");
	for (size_t i = 0; i < s->nfns; i++)
		fprintf(f, "ember_function_costly{function_name=\"%s\"} %d\n",
			s->fns[i]->spec->name,
			s->fns[i]->inst ? atomic_load(&s->fns[i]->inst->costly) : 0);
	memory_rows(f, s);
	pthread_mutex_unlock(&s->mu);
	free(v);
}

/* s->mu held: each loaded function's memory (ember_memory), and each sharing domain's store */
static void memory_rows(FILE *f, struct srv *s)
{
	static const struct {
		const char *name, *help;
		size_t off;
	} cols[] = {
	    {"ember_function_snapshot_bytes", "Bytes of the function's snapshot (one copy).",
	     offsetof(struct ember_memory, snapshot_bytes)},
	    {"ember_function_shared_bytes",
	     "Bytes its ready virtines map from the shared copy (upm), summed.",
	     offsetof(struct ember_memory, shared_bytes)},
	    {"ember_function_private_bytes", "Bytes its ready virtines hold of their own, summed.",
	     offsetof(struct ember_memory, private_bytes)},
	};
	struct ember_memory *m = calloc(s->nfns ? s->nfns : 1, sizeof(*m));
	for (size_t i = 0; m && i < s->nfns; i++)
		if (!s->fns[i]->inst || ember_memory(s->fns[i]->inst->fn, &m[i]))
			memset(&m[i], 0, sizeof(m[i]));
	for (size_t c = 0; m && c < sizeof(cols) / sizeof(cols[0]); c++) {
		head(f, cols[c].name, "gauge", cols[c].help);
		for (size_t i = 0; i < s->nfns; i++)
			fprintf(f, "%s{function_name=\"%s\"} %llu\n", cols[c].name,
				s->fns[i]->spec->name,
				(unsigned long long)*(const uint64_t *)((const char *)&m[i] +
									cols[c].off));
	}
	head(f, "ember_domain_bytes", "gauge",
	     "Distinct pages a sharing domain's page store holds, in bytes.");
	for (size_t i = 0; m && i < s->nfns; i++) {
		size_t k = 0; /* each domain once: at its first function */
		while (k < i && !(m[k].domain && m[i].domain && !strcmp(m[k].domain, m[i].domain)))
			k++;
		if (k == i && m[i].domain)
			fprintf(f, "ember_domain_bytes{domain=\"%s\"} %llu\n", m[i].domain,
				(unsigned long long)m[i].domain_bytes);
	}
	free(m);
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
	pthread_mutex_lock(&s->metrics->mu); /* the list of functions, not their counters */
	per_function(f, s->metrics);
	pthread_mutex_unlock(&s->metrics->mu);
	http_requests(f, s->metrics);
	pool_metrics(f, s);
	struct reg_gauges g;
	reg_gauges(s, &g);
	const struct row r[] = {
	    {"ember_functions", "gauge", "Deployed functions.", g.functions},
	    {"ember_virtines_alive", "gauge", "Virtines ready in pools or running.", g.alive},
	    {"ember_virtines_ready", "gauge", "Virtines ready in pools.", g.ready},
	};
	rows(f, r, sizeof(r) / sizeof(r[0]));
	unsigned busy, waiting;
	cpu_gauges(s, &busy, &waiting);
	const struct row costly[] = {
	    {"ember_costly_slots_busy", "gauge", "Costly slots running an invocation.", busy},
	    {"ember_costly_waiting", "gauge", "Invocations waiting for a costly slot.", waiting},
	    {"ember_costly_marked_total", "counter", "Times a function was found costly.",
	     atomic_load(&s->costly_marked)},
	    {"ember_costly_refused_total", "counter",
	     "Calls of costly functions answered 429: the slots' queue was full.",
	     atomic_load(&s->costly_refused)},
	};
	rows(f, costly, sizeof(costly) / sizeof(costly[0]));
	budget_metrics(f, s);
	async_metrics(f, s);
	cluster_metrics(f, s);
	const struct row tail[] = {
	    {"ember_http_connections_cut_total", "counter",
	     "Connections shut because a request was not read within readTimeout, or none started "
	     "within connectionTimeout.",
	     atomic_load(&s->conns_cut)},
	    {"process_resident_memory_bytes", "gauge", "Resident memory of the server.",
	     rss_bytes()},
	};
	rows(f, tail, sizeof(tail) / sizeof(tail[0]));
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
