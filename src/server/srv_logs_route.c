/* GET /system/logs?name=NAME[&instance=ID&since=T&tail=N&follow=B]: a function's stderr as
 * NDJSON, one OpenFaaS logs.Message a line; with follow, new lines as they come. */
#include <ctype.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/srv_core.h"
#include "server/srv_registry.h"
#include "server/srv_http.h"
#include "server/srv_logs.h"

#define LOGS_BLOCK    16384
#define FOLLOW_POLL_S 0.25 /* how often a follower looks whether its client is still there */
#define NDJSON	      "application/x-ndjson"

struct follower {
	struct srv_logs *l;
	struct MHD_Connection *conn;
	char name[SRV_NAME_MAX];
	char instance[256];
	struct logs_query q;
	uint64_t seq, end;
	int follow, closed;
	char *pend; /* the rendered line being sent */
	size_t pend_len, pend_off;
};

static int digits(const char **p, int n, int *out)
{
	int v = 0;
	for (int i = 0; i < n; i++, (*p)++) {
		if (!isdigit((unsigned char)**p))
			return -1;
		v = v * 10 + (**p - '0');
	}
	*out = v;
	return 0;
}

/* ".123" -> 123000000 ns; p moves past it; -1 when a '.' has no digits */
static int fraction(const char **p, int64_t *ns)
{
	int n = 0;
	*ns = 0;
	if (**p != '.')
		return 0;
	for ((*p)++; isdigit((unsigned char)**p); (*p)++)
		if (n < 9)
			*ns = *ns * 10 + (**p - '0'), n++;
	if (!n)
		return -1;
	for (; n < 9; n++)
		*ns *= 10;
	return 0;
}

/* seconds and nanoseconds since 1970 as nanoseconds, held to what int64_t holds (the years
 * 1677 to 2262): a time past them is before or after every line all the same */
static int64_t to_ns(int64_t sec, int64_t frac)
{
	if (sec >= INT64_MAX / 1000000000)
		return INT64_MAX;
	if (sec <= INT64_MIN / 1000000000)
		return INT64_MIN;
	return sec * 1000000000 + frac;
}

static int unix_time(const char *s, int64_t *ns)
{
	int64_t sec = 0, frac;
	const char *p = s;
	for (; isdigit((unsigned char)*p) && sec < 1000000000000LL; p++)
		sec = sec * 10 + (*p - '0');
	if (p == s || fraction(&p, &frac) || *p)
		return -1;
	*ns = to_ns(sec, frac);
	return 0;
}

int logs_parse_time(const char *s, int64_t *ns)
{
	if (!s || !*s)
		return -1;
	if (isdigit((unsigned char)s[0]) && strspn(s, "0123456789.") == strlen(s))
		return unix_time(s, ns);
	const char *p = s;
	int Y, M, D, h, m, sec, oh = 0, om = 0, sign = 0;
	int64_t frac;
	if (digits(&p, 4, &Y) || *p++ != '-' || digits(&p, 2, &M) || *p++ != '-' ||
	    digits(&p, 2, &D) || (*p != 'T' && *p != 't'))
		return -1;
	p++;
	if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &m) || *p++ != ':' ||
	    digits(&p, 2, &sec) || fraction(&p, &frac))
		return -1;
	if (*p == '+' || *p == '-') {
		sign = *p++ == '-' ? -1 : 1;
		if (digits(&p, 2, &oh) || *p++ != ':' || digits(&p, 2, &om) || oh > 23 || om > 59)
			return -1;
	} else if (*p == 'Z' || *p == 'z') {
		p++;
	} else {
		return -1;
	}
	if (*p || M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60)
		return -1;
	struct tm tm = {.tm_year = Y - 1900,
			.tm_mon = M - 1,
			.tm_mday = D,
			.tm_hour = h,
			.tm_min = m,
			.tm_sec = sec};
	int64_t t = (int64_t)timegm(&tm) - sign * (oh * 3600 + om * 60);
	*ns = to_ns(t, frac);
	return 0;
}

/* Go's strconv.ParseBool; anything else is false, as the OpenFaaS provider takes it */
static int parse_bool(const char *v)
{
	static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
	for (size_t i = 0; v && i < sizeof(yes) / sizeof(yes[0]); i++)
		if (!strcmp(v, yes[i]))
			return 1;
	return 0;
}

/* one line of NDJSON in f->pend; 0 when out of memory (the line is then skipped) */
static int render(struct follower *f, const struct log_line *x)
{
	char ts[48];
	struct tm tm;
	time_t sec = (time_t)(x->ts_ns / 1000000000);
	gmtime_r(&sec, &tm);
	size_t n = strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(ts + n, sizeof(ts) - n, ".%09lldZ", (long long)(x->ts_ns % 1000000000));
	json_t *j =
	    json_pack("{s:s,s:s,s:s,s:s,s:s#}", "name", f->name, "namespace", "", "instance",
		      x->data, "timestamp", ts, "text", log_line_text(x), (int)x->len);
	char *t = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	free(f->pend);
	f->pend = NULL;
	if (!t)
		return 0;
	size_t len = strlen(t);
	f->pend = realloc(t, len + 1);
	if (!f->pend)
		return free(t), 0;
	f->pend[len] = '\n';
	f->pend_len = len + 1;
	f->pend_off = 0;
	return 1;
}

/* copies what is ready into buf: the rest of the line being sent, then the lines in the ring */
static size_t fill(struct follower *f, char *buf, size_t max)
{
	size_t n = 0;
	while (n < max) {
		if (f->pend_off < f->pend_len) {
			size_t k = f->pend_len - f->pend_off;
			k = k < max - n ? k : max - n;
			memcpy(buf + n, f->pend + f->pend_off, k);
			n += k;
			f->pend_off += k;
			continue;
		}
		struct log_line *x = logs_next(f->l, &f->seq, f->end, &f->q);
		if (!x)
			break;
		render(f, x);
		free(x);
	}
	return n;
}

/* the client closed its side (curl killed, a browser tab shut) */
static int client_gone(struct follower *f)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(f->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!ci)
		return 1;
	struct pollfd p = {.fd = ci->connect_fd, .events = POLLRDHUP};
	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

/* libmicrohttpd runs each connection in its own thread, so a follower may block here */
static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct follower *f = cls;
	(void)pos;
	for (;;) {
		size_t n = fill(f, buf, max);
		if (n)
			return (ssize_t)n;
		if (!f->follow || f->closed || client_gone(f))
			return MHD_CONTENT_READER_END_OF_STREAM;
		f->closed = logs_wait(f->l, f->seq, FOLLOW_POLL_S);
	}
}

static void follower_free(void *cls)
{
	struct follower *f = cls;
	logs_put(f->l);
	free(f->pend);
	free(f);
}

/* the query into f; 0, or the status to answer with msg */
static unsigned parse_query(struct srv_req *r, struct follower *f, char *msg, size_t len)
{
	const char *name = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "name");
	const char *inst = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "instance");
	const char *since = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "since");
	const char *tail = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "tail");
	const char *follow = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "follow");
	char *end;
	if (!name || !name[0])
		return snprintf(msg, len, "the query needs name=FUNCTION"), 400;
	if (strlen(name) >= sizeof(f->name) || !srv_name_ok(name))
		return snprintf(msg, len, "names match [a-z0-9][a-z0-9-_.]{0,62}"), 400;
	strcpy(f->name, name);
	if (inst && inst[0]) {
		snprintf(f->instance, sizeof(f->instance), "%s", inst);
		f->q.instance = f->instance;
	}
	if (since && since[0] && logs_parse_time(since, &f->q.since_ns))
		return snprintf(msg, len,
				"since must be an RFC 3339 time (2026-01-02T15:04:05Z) or Unix "
				"seconds"),
		       422;
	if (tail && tail[0]) {
		f->q.tail = strtol(tail, &end, 10);
		if (*end || end == tail)
			return snprintf(msg, len, "tail must be an integer"), 422;
	}
	f->follow = parse_bool(follow);
	return 0;
}

enum MHD_Result h_logs(struct srv *s, struct srv_req *r)
{
	char msg[SRV_ERR_MAX];
	struct follower *f = calloc(1, sizeof(*f));
	if (!f)
		return srv_reply_error(r, 500, "out of memory");
	unsigned st = parse_query(r, f, msg, sizeof(msg));
	if (st) {
		free(f);
		return srv_reply_error(r, st, "%s", msg);
	}
	pthread_mutex_lock(&s->mu);
	struct srv_entry *e = reg_find(s, f->name, NULL);
	f->l = e ? logs_get(e->logs) : NULL;
	int stopping = s->stopping;
	pthread_mutex_unlock(&s->mu);
	if (!f->l || stopping) {
		char name[SRV_NAME_MAX];
		strcpy(name, f->name);
		logs_put(f->l);
		free(f);
		if (stopping)
			return srv_reply_error(r, 503, "the server is shutting down");
		if (!e)
			return srv_reply_error(r, 404, "function '%s' not found", name);
		return srv_reply_error(r, 500, "out of memory");
	}
	f->conn = r->conn;
	f->seq = logs_start(f->l, &f->q);
	f->end = f->follow ? UINT64_MAX : logs_end(f->l);
	struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, LOGS_BLOCK,
								      reader, f, follower_free);
	if (!resp) {
		follower_free(f);
		return MHD_NO;
	}
	/* a follower may wait for a line longer than an idle connection may last */
	if (f->follow)
		MHD_set_connection_option(r->conn, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, NDJSON);
	enum MHD_Result ret = MHD_queue_response(r->conn, 200, resp);
	MHD_destroy_response(resp);
	return ret;
}

void logs_shutdown(struct srv *s)
{
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->nfns; i++)
		logs_close(s->fns[i]->logs);
	pthread_mutex_unlock(&s->mu);
}
