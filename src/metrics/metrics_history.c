/* A function's recent history: per-second counts in a fixed ring, and its JSON for the console. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "metrics/metrics_history.h"

/* bound[i]: the largest latency (µs) of bucket i; the last bucket has none */
static double bound[HIST_BUCKETS - 1];
static pthread_once_t bound_once = PTHREAD_ONCE_INIT;

static void make_bounds(void)
{
	double b = 4.0;
	for (int i = 0; i < HIST_BUCKETS - 1; i++, b *= 1.4142135623730951)
		bound[i] = b;
}

static int64_t mono_to_unix; /* seconds: Unix time minus the monotonic clock, at the first call */
static pthread_once_t clock_once = PTHREAD_ONCE_INIT;

static void set_offset(void)
{
	struct timespec r, m;
	clock_gettime(CLOCK_REALTIME, &r);
	clock_gettime(CLOCK_MONOTONIC, &m);
	mono_to_unix = (int64_t)r.tv_sec - (int64_t)m.tv_sec;
}

int64_t hist_now(void)
{
	struct timespec m;
	pthread_once(&clock_once, set_offset);
	clock_gettime(CLOCK_MONOTONIC, &m);
	return mono_to_unix + (int64_t)m.tv_sec;
}

void hist_init(struct srv_history *h)
{
	memset(h, 0, sizeof(*h));
	pthread_mutex_init(&h->mu, NULL);
	pthread_once(&bound_once, make_bounds);
}

void hist_destroy(struct srv_history *h)
{
	pthread_mutex_destroy(&h->mu);
	free(h->ring);
	h->ring = NULL;
}

size_t hist_bytes(const struct srv_history *h)
{
	return sizeof(*h) + (h->ring ? HIST_SECONDS * sizeof(*h->ring) : 0);
}

static int bucket(double us)
{
	int lo = 0, hi = HIST_BUCKETS - 1; /* the first bucket whose bound holds us */
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (us <= bound[mid])
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

double hist_quantile(const uint64_t *lat, uint64_t n, double q)
{
	if (!n)
		return -1;
	double rank = q * (double)n, cum = 0;
	int i = 0;
	while (i < HIST_BUCKETS - 1 && cum + (double)lat[i] < rank)
		cum += (double)lat[i++];
	if (i == HIST_BUCKETS - 1) /* the open bucket: its lower bound */
		return bound[i - 1] / 1e6;
	/* linear within the bucket, by rank */
	double lo = i ? bound[i - 1] : 0, frac = lat[i] ? (rank - cum) / (double)lat[i] : 1;
	return (lo + (bound[i] - lo) * frac) / 1e6;
}

void hist_record(struct srv_history *h, int64_t sec, unsigned code, double seconds,
		 const struct ember_result *res)
{
	pthread_mutex_lock(&h->mu);
	if (!h->ring && !(h->ring = calloc(HIST_SECONDS, sizeof(*h->ring))))
		goto out; /* out of memory: the history has a gap, nothing else changes */
	struct hist_slot *s = &h->ring[(uint64_t)sec % HIST_SECONDS];
	if (sec < s->sec) /* a second the ring has moved past */
		goto out;
	if (sec != s->sec) {
		memset(s, 0, sizeof(*s));
		s->sec = sec;
	}
	s->calls++;
	s->errors += code >= 500;
	s->refused += code == 429;
	if (!res)
		goto out;
	uint64_t us = (uint64_t)(seconds * 1e6);
	int b = bucket((double)us);
	s->ran++;
	s->lat[b]++;
	s->sum_us += us;
	s->max_us = us > s->max_us ? us : s->max_us;
	h->total_ran++;
	h->total_lat[b]++;
	s->starts[(unsigned)res->start < HIST_STARTS ? res->start : EMBER_START_INIT]++;
	s->exits += res->exits;
	for (size_t i = 0; i < res->nsyscalls; i++) {
		s->syscalls += res->syscalls[i].served + res->syscalls[i].denied;
		s->syscalls_in_guest += res->syscalls[i].in_guest;
	}
out:
	pthread_mutex_unlock(&h->mu);
}

/* a slot's quantile, never past the slowest call it saw; null when it has none */
static json_t *slot_quantile(const struct hist_slot *s, double q)
{
	uint64_t lat[HIST_BUCKETS];
	for (int i = 0; i < HIST_BUCKETS; i++)
		lat[i] = s->lat[i];
	double v = hist_quantile(lat, s->ran, q), max = (double)s->max_us / 1e6;
	return v < 0 ? json_null() : json_real(v < max ? v : max);
}

static json_t *quantile_or_null(const uint64_t *lat, uint64_t n, double q)
{
	double v = hist_quantile(lat, n, q);
	return v < 0 ? json_null() : json_real(v);
}

/* the columns of the series: a name and what one slot gives it */
struct column {
	const char *name;
	json_t *(*of)(const struct hist_slot *s);
};
#define COUNT(fn, expr)                                                                            \
	static json_t *fn(const struct hist_slot *s)                                               \
	{                                                                                          \
		return json_integer((json_int_t)(expr));                                           \
	}
COUNT(c_t, s->sec)
COUNT(c_calls, s->calls)
COUNT(c_ran, s->ran)
COUNT(c_errors, s->errors)
COUNT(c_refused, s->refused)
COUNT(c_warm, s->starts[EMBER_START_WARM])
COUNT(c_restore, s->starts[EMBER_START_RESTORE])
COUNT(c_cold, s->starts[EMBER_START_COLD])
COUNT(c_init, s->starts[EMBER_START_INIT])
COUNT(c_exits, s->exits)
COUNT(c_syscalls, s->syscalls)
COUNT(c_in_guest, s->syscalls_in_guest)
static json_t *c_p50(const struct hist_slot *s)
{
	return slot_quantile(s, 0.5);
}
static json_t *c_p99(const struct hist_slot *s)
{
	return slot_quantile(s, 0.99);
}
static json_t *c_max(const struct hist_slot *s)
{
	return s->ran ? json_real((double)s->max_us / 1e6) : json_null();
}
static json_t *c_mean(const struct hist_slot *s)
{
	return s->ran ? json_real((double)s->sum_us / 1e6 / s->ran) : json_null();
}

static const struct column columns[] = {
    {"t", c_t},
    {"invocations", c_calls},
    {"ran", c_ran},
    {"errors", c_errors},
    {"refused", c_refused},
    {"p50", c_p50},
    {"p99", c_p99},
    {"max", c_max},
    {"mean", c_mean},
    {"warm", c_warm},
    {"restore", c_restore},
    {"cold", c_cold},
    {"init", c_init},
    {"exits", c_exits},
    {"syscalls", c_syscalls},
    {"syscallsInGuest", c_in_guest},
};
#define NCOLUMNS (sizeof(columns) / sizeof(columns[0]))

/* the slots of the seconds now-n+1 .. now, empty ones for the seconds without calls */
static void window(const struct srv_history *h, int64_t now, unsigned n, struct hist_slot *out)
{
	for (unsigned i = 0; i < n; i++) {
		int64_t sec = now - (int64_t)(n - 1 - i);
		const struct hist_slot *s = h->ring ? &h->ring[(uint64_t)sec % HIST_SECONDS] : NULL;
		if (s && s->sec == sec)
			out[i] = *s;
		else
			out[i] = (struct hist_slot){.sec = sec};
	}
}

/* the window's sums: calls, errors, refused and its latencies together */
static json_t *summary(const struct hist_slot *v, unsigned n)
{
	uint64_t lat[HIST_BUCKETS] = {0}, calls = 0, errors = 0, refused = 0, ran = 0;
	for (unsigned i = 0; i < n; i++) {
		calls += v[i].calls;
		errors += v[i].errors;
		refused += v[i].refused;
		ran += v[i].ran;
		for (int b = 0; b < HIST_BUCKETS; b++)
			lat[b] += v[i].lat[b];
	}
	return json_pack("{s:i,s:I,s:I,s:I,s:o,s:o,s:f}", "seconds", (int)n, "invocations",
			 (json_int_t)calls, "errors", (json_int_t)errors, "refused",
			 (json_int_t)refused, "p50", quantile_or_null(lat, ran, 0.5), "p99",
			 quantile_or_null(lat, ran, 0.99), "perSecond",
			 n ? (double)calls / n : 0.0);
}

json_t *hist_json(struct srv_history *h, int64_t now, unsigned seconds)
{
	unsigned n = seconds < HIST_SECONDS ? seconds : HIST_SECONDS;
	struct hist_slot *v = calloc(n ? n : 1, sizeof(*v));
	if (!v)
		return NULL;
	uint64_t total[HIST_BUCKETS], ran;
	pthread_mutex_lock(&h->mu);
	window(h, now, n, v);
	memcpy(total, h->total_lat, sizeof(total));
	ran = h->total_ran;
	pthread_mutex_unlock(&h->mu);
	json_t *series = json_object();
	for (size_t c = 0; series && c < NCOLUMNS; c++) {
		json_t *a = json_array();
		for (unsigned i = 0; a && i < n; i++)
			json_array_append_new(a, columns[c].of(&v[i]));
		json_object_set_new(series, columns[c].name, a);
	}
	json_t *j = json_pack("{s:I,s:i,s:o,s:{s:I,s:o,s:o},s:o}", "now", (json_int_t)now, "kept",
			      HIST_SECONDS, "window", summary(v, n), "total", "ran",
			      (json_int_t)ran, "p50", quantile_or_null(total, ran, 0.5), "p99",
			      quantile_or_null(total, ran, 0.99), "series", series);
	free(v);
	return j;
}
