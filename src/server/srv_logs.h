/* Functions' stderr: one ring per function bounded in bytes and lines, and its readers. */
#ifndef EMBER_SRV_LOGS_H
#define EMBER_SRV_LOGS_H

#include <stddef.h>
#include <stdint.h>

#include "server/srv_core.h"

/* srv_logs.c: one function's stderr, a ring bounded in bytes and in lines */
struct srv_logs;
/* a line as kept: id (the call id) and text are NUL-terminated, text valid UTF-8 */
struct log_line {
	uint64_t seq;	/* 0, 1, 2 ... per function */
	int64_t ts_ns;	/* when the server got it (Unix ns); increasing per function */
	uint32_t len;	/* of text */
	uint8_t id_len; /* of id */
	char data[];	/* id, NUL, text, NUL */
};
static inline const char *log_line_text(const struct log_line *l)
{
	return l->data + l->id_len + 1;
}
/* which lines a reader wants: since_ns and later, of one call (instance) or all (NULL) */
struct logs_query {
	int64_t since_ns;
	const char *instance;
	long tail; /* only the last tail of them (<= 0: all) */
};
#define LOGS_LINE_MAX 8192 /* a longer line keeps its start and is marked as cut */
/* NULL when out of memory; the ring itself is allocated at the first line */
struct srv_logs *logs_new(uint64_t max_bytes, unsigned max_lines);
struct srv_logs *logs_get(struct srv_logs *l);
void logs_put(struct srv_logs *l);
/* One invocation's stderr: split in lines, cut, made valid UTF-8 and appended, the oldest
 * lines dropped past a bound. Wakes the followers. */
void logs_append(struct srv_logs *l, const char *id, const uint8_t *log, size_t len);
/* the end: followers stop, appends are dropped */
void logs_close(struct srv_logs *l);
/* the seq a reader of q starts at */
uint64_t logs_start(struct srv_logs *l, const struct logs_query *q);
/* the seq the next appended line gets */
uint64_t logs_end(struct srv_logs *l);
/* A copy of the first line of q at or after *seq and before end (free it), *seq moved past it;
 * NULL when there is none now. Lines dropped meanwhile are skipped. */
struct log_line *logs_next(struct srv_logs *l, uint64_t *seq, uint64_t end,
			   const struct logs_query *q);
/* waits up to secs for a line at seq or later; 1 when the ring is closed */
int logs_wait(struct srv_logs *l, uint64_t seq, double secs);
struct logs_usage {
	uint64_t lines, bytes;
};
void logs_usage(struct srv_logs *l, struct logs_usage *u);
/* srv_logs_route.c: GET /system/logs */
/* "2026-11-29T20:03:51.5Z", "...+01:00" or Unix seconds "1764446631.5" -> ns; -1 when bad */
int logs_parse_time(const char *s, int64_t *ns);
/* closes every function's ring, so that followers end and a shutdown does not wait for them */
void logs_shutdown(struct srv *s);

#endif
