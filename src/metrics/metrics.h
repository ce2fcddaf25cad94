/* The metrics' counters, shared by counting (metrics.c) and rendering (metrics_render.c).
 */
#ifndef EMBER_SRV_METRICS_H
#define EMBER_SRV_METRICS_H

#include "metrics/metrics_history.h"
#include "server/srv_core.h"

/* metrics.c: counters without a lock on the request path */
struct srv_fn_metrics;
struct srv_metrics *metrics_new(void);
void metrics_free(struct srv_metrics *m);
/* the series of a function by name, made at the first call (NULL when out of memory): only
 * known names, so that clients cannot make series */
struct srv_fn_metrics *metrics_fn(struct srv_metrics *m, const char *name);
/* one invocation: its HTTP status, wall time, result (NULL when it never ran; res->start says
 * how it started) and, when not warm, the seconds before the function ran (< 0: warm) */
void metrics_invocation(struct srv_metrics *m, struct srv_fn_metrics *f, unsigned code,
			double seconds, const struct ember_result *res, double init_s);
char *metrics_render(struct srv *s, size_t *len); /* metrics_render.c */
void metrics_started(struct srv_fn_metrics *f);	  /* an invocation begins */
/* one HTTP request, by its route's pattern (a static string: the series' key) */
void metrics_http(struct srv_metrics *m, const char *path, const char *method, unsigned code,
		  double seconds);

#define NB     11  /* finite buckets per histogram */
#define NCODES 12  /* distinct HTTP statuses counted per function */
#define NHTTP  256 /* distinct (route, method, status) series of http_requests_total */
#define NSTART (EMBER_START_INIT + 1)

extern const double metrics_secs_le[NB], metrics_exits_le[NB];

/* counted with atomics only: an invocation or a request takes no lock */
struct hist {
	atomic_uint_fast64_t b[NB], count;
	atomic_uint_fast64_t sum; /* in units of 1/scale */
};

struct srv_fn_metrics {
	char name[SRV_NAME_MAX];
	struct {
		atomic_uint code; /* 0: a free place */
		atomic_uint_fast64_t n;
	} codes[NCODES];
	struct hist secs, exits;
	atomic_uint_fast64_t started, starts[NSTART];
	struct srv_history hist; /* its last minutes, second by second (the console's charts) */
};

/* one series of the gateway's http_requests_total / http_request_duration_seconds: set before
 * nhttp counts it, never changed after */
struct http_series {
	const char *path; /* a route's pattern, or "other": bounded, never the raw URL */
	const char *method;
	unsigned code;
	struct hist secs;
};

struct srv_metrics {
	pthread_mutex_t mu;	   /* adding a function or a series */
	struct srv_fn_metrics **v; /* each allocated once, kept to the end */
	size_t n, cap;
	struct hist init;
	struct http_series http[NHTTP];
	atomic_size_t nhttp;
	atomic_uint_fast64_t http_dropped; /* requests past NHTTP series */
};

#define SECS_SCALE 1e9 /* histogram sums of seconds are kept in ns */

#endif
