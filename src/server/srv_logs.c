/* A function's stderr: a ring of lines bounded in bytes and in lines, with its followers. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/srv_logs.h"

#define CUT_MARK     " [... %zu bytes cut]"
#define CUT_MARK_MAX 48

struct srv_logs {
	atomic_int refs;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* a line was added, or the ring closed */
	uint64_t max_bytes;
	unsigned max_lines;
	size_t line_max;
	struct log_line **v; /* v[seq % max_lines] for first <= seq < next */
	uint64_t first, next;
	uint64_t bytes; /* of the lines kept, headers included */
	int64_t last_ts;
	int closed;
};

struct srv_logs *logs_new(uint64_t max_bytes, unsigned max_lines)
{
	struct srv_logs *l = calloc(1, sizeof(*l));
	if (!l || !max_lines)
		return free(l), NULL;
	base_cond_init(&l->cv);
	pthread_mutex_init(&l->mu, NULL);
	atomic_init(&l->refs, 1);
	l->max_bytes = max_bytes;
	l->max_lines = max_lines;
	/* a line never takes more than a quarter of the ring */
	l->line_max = LOGS_LINE_MAX;
	while (l->line_max > 64 && (l->line_max + 256 + CUT_MARK_MAX) * 4 > max_bytes)
		l->line_max /= 2;
	return l;
}

struct srv_logs *logs_get(struct srv_logs *l)
{
	if (l)
		atomic_fetch_add(&l->refs, 1);
	return l;
}

void logs_put(struct srv_logs *l)
{
	if (!l || atomic_fetch_sub(&l->refs, 1) != 1)
		return;
	for (uint64_t s = l->first; l->v && s < l->next; s++)
		free(l->v[s % l->max_lines]);
	free(l->v);
	pthread_cond_destroy(&l->cv);
	pthread_mutex_destroy(&l->mu);
	free(l);
}

static size_t line_size(const struct log_line *x)
{
	return sizeof(*x) + x->id_len + x->len + 2;
}

/* length of the valid UTF-8 sequence at p (RFC 3629), 0 when it is not one */
static size_t utf8_len(const uint8_t *p, size_t n)
{
	uint8_t c = p[0], lo = 0x80, hi = 0xbf;
	size_t len;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, lo = c == 0xe0 ? 0xa0 : lo, hi = c == 0xed ? 0x9f : hi;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, lo = c == 0xf0 ? 0x90 : lo, hi = c == 0xf4 ? 0x8f : hi;
	else
		return 0;
	if (n < len || p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return len;
}

/* one line of raw bytes as kept: valid UTF-8 (U+FFFD for a bad byte), at most line_max bytes
 * of it, then the cut mark */
static struct log_line *make_line(const struct srv_logs *l, const char *id, size_t id_len,
				  const uint8_t *p, size_t n)
{
	if (n && p[n - 1] == '\r')
		n--;
	struct log_line *x = malloc(sizeof(*x) + id_len + l->line_max + CUT_MARK_MAX + 2);
	if (!x)
		return NULL;
	memcpy(x->data, id, id_len);
	x->data[id_len] = 0;
	x->id_len = (uint8_t)id_len;
	char *t = x->data + id_len + 1;
	size_t o = 0, i = 0;
	while (i < n) {
		size_t k = utf8_len(p + i, n - i);
		if (o + (k ? k : 3) > l->line_max)
			break;
		memcpy(t + o, k ? (const char *)p + i : "\xef\xbf\xbd", k ? k : 3);
		o += k ? k : 3;
		i += k ? k : 1;
	}
	if (i < n)
		o += (size_t)snprintf(t + o, CUT_MARK_MAX, CUT_MARK, n - i);
	t[o] = 0;
	x->len = (uint32_t)o;
	struct log_line *y = realloc(x, line_size(x));
	return y ? y : x;
}

/* where the lines worth keeping start: the last ones that fit both bounds (at least one) */
static size_t window(const struct srv_logs *l, const uint8_t *p, size_t len)
{
	size_t end = len && p[len - 1] == '\n' ? len - 1 : len, keep = end, lines = 0;
	for (;;) {
		const uint8_t *nl = end ? memrchr(p, '\n', end) : NULL;
		size_t start = nl ? (size_t)(nl - p) + 1 : 0;
		if (lines && (lines >= l->max_lines || len - start > l->max_bytes))
			return keep;
		lines++;
		keep = start;
		if (!nl)
			return 0;
		end = start - 1;
	}
}

static void drop_oldest(struct srv_logs *l)
{
	struct log_line *x = l->v[l->first % l->max_lines];
	l->bytes -= line_size(x);
	free(x);
	l->first++;
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void add(struct srv_logs *l, struct log_line *x)
{
	size_t sz = line_size(x);
	while (l->next > l->first &&
	       (l->next - l->first >= l->max_lines || l->bytes + sz > l->max_bytes))
		drop_oldest(l);
	int64_t ts = now_ns();
	x->ts_ns = ts > l->last_ts ? ts : l->last_ts + 1;
	l->last_ts = x->ts_ns;
	x->seq = l->next++;
	l->v[x->seq % l->max_lines] = x;
	l->bytes += sz;
}

void logs_append(struct srv_logs *l, const char *id, const uint8_t *log, size_t len)
{
	if (!l || !len)
		return;
	size_t id_len = strnlen(id, 255);
	pthread_mutex_lock(&l->mu);
	if (!l->v)
		l->v = calloc(l->max_lines, sizeof(*l->v));
	for (size_t i = window(l, log, len); l->v && !l->closed && i < len;) {
		const uint8_t *nl = memchr(log + i, '\n', len - i);
		size_t n = nl ? (size_t)(nl - (log + i)) : len - i;
		struct log_line *x = make_line(l, id, id_len, log + i, n);
		if (!x)
			break;
		add(l, x);
		i += n + 1;
	}
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
}

void logs_close(struct srv_logs *l)
{
	if (!l)
		return;
	pthread_mutex_lock(&l->mu);
	l->closed = 1;
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
}

static int matches(const struct log_line *x, const struct logs_query *q)
{
	return x->ts_ns >= q->since_ns && (!q->instance || !strcmp(x->data, q->instance));
}

uint64_t logs_start(struct srv_logs *l, const struct logs_query *q)
{
	pthread_mutex_lock(&l->mu);
	uint64_t s = l->first;
	if (q->tail > 0) {
		long n = 0;
		for (s = l->next; s > l->first && n < q->tail; s--)
			n += matches(l->v[(s - 1) % l->max_lines], q);
	}
	pthread_mutex_unlock(&l->mu);
	return s;
}

uint64_t logs_end(struct srv_logs *l)
{
	pthread_mutex_lock(&l->mu);
	uint64_t s = l->next;
	pthread_mutex_unlock(&l->mu);
	return s;
}

struct log_line *logs_next(struct srv_logs *l, uint64_t *seq, uint64_t end,
			   const struct logs_query *q)
{
	struct log_line *copy = NULL;
	pthread_mutex_lock(&l->mu);
	if (*seq < l->first)
		*seq = l->first;
	while (!copy && *seq < l->next && *seq < end) {
		const struct log_line *x = l->v[(*seq)++ % l->max_lines];
		if (matches(x, q) && (copy = malloc(line_size(x))))
			memcpy(copy, x, line_size(x));
	}
	pthread_mutex_unlock(&l->mu);
	return copy;
}

int logs_wait(struct srv_logs *l, uint64_t seq, double secs)
{
	struct timespec ts;
	base_deadline(&ts, secs);
	pthread_mutex_lock(&l->mu);
	int rc = 0;
	while (!l->closed && l->next <= seq && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&l->cv, &l->mu, &ts);
	int closed = l->closed;
	pthread_mutex_unlock(&l->mu);
	return closed;
}

void logs_usage(struct srv_logs *l, struct logs_usage *u)
{
	pthread_mutex_lock(&l->mu);
	u->lines = l->next - l->first;
	u->bytes = l->bytes;
	pthread_mutex_unlock(&l->mu);
}
