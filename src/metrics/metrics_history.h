/* A function's recent history: a ring of per-second counts, bounded, for the console's charts. */
#ifndef EMBER_SRV_HISTORY_H
#define EMBER_SRV_HISTORY_H

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>

#include "ember/ember.h"

#define HIST_SECONDS 300 /* seconds the ring keeps: five minutes */
/* latency buckets: half-octaves (each bound 1.41 times the last) from 4 µs, the last open (past
 * 4 µs * 2^21.5, 12 s) */
#define HIST_BUCKETS 45
#define HIST_STARTS  (EMBER_START_INIT + 1)

/* one second of one function's invocations */
struct hist_slot {
	int64_t sec;	  /* the Unix second counted here (0: never used) */
	uint32_t calls;	  /* every invocation answered in that second */
	uint32_t ran;	  /* of them, those that ran (got a virtine): latency, exits, syscalls */
	uint32_t errors;  /* answered 5xx: the function failed (502, 504) or the server did */
	uint32_t refused; /* answered 429: no place in its queue, or the costly slots' */
	uint32_t starts[HIST_STARTS];
	uint64_t exits, syscalls, syscalls_in_guest;
	uint64_t sum_us, max_us;
	uint32_t lat[HIST_BUCKETS];
};

struct srv_history {
	pthread_mutex_t mu;
	struct hist_slot *ring; /* HIST_SECONDS slots, allocated at the first invocation */
	uint64_t total_ran;
	uint64_t total_lat[HIST_BUCKETS]; /* since the server started: the table's p50 and p99 */
};

/* Unix seconds, from the monotonic clock: never backwards, whatever the wall clock does */
int64_t hist_now(void);
void hist_init(struct srv_history *h);
void hist_destroy(struct srv_history *h);
/* one invocation answered at Unix second sec with an HTTP status after seconds; res is NULL
 * when it never ran (refused, or the function could not be loaded) */
void hist_record(struct srv_history *h, int64_t sec, unsigned code, double seconds,
		 const struct ember_result *res);
/* The last `seconds` seconds up to now (at most HIST_SECONDS), one entry a second, in columns;
 * with the totals since the start. NULL when out of memory. */
json_t *hist_json(struct srv_history *h, int64_t now, unsigned seconds);
/* the bytes the history holds: constant once the ring exists, whatever the invocations */
size_t hist_bytes(const struct srv_history *h);
/* the latency (seconds) below which a fraction q of the counts lie, from the buckets; -1 when
 * there are none */
double hist_quantile(const uint64_t *lat, uint64_t n, double q);

#endif
