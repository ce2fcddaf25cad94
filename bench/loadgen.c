/* loadgen: a fixed-rate (open-loop) HTTP/1.1 load generator for bench/hostile.sh. */
/*
 * loadgen [-r RATE] [-c CONNS] [-d SECONDS] [-b BODY | -f FILE] [-m METHOD] [-H HEADER]
 *         [-w BODY] [-e STATUS|any] [-T SECONDS] [-S SRCADDR] [-s FILE] [-n N]
 *         http://A.B.C.D:PORT/PATH
 *
 * POSTs (-m: another method) BODY (default Ember; -f: a file's bytes) with one more header line
 * when -H gives one, to the URL on a fixed schedule of RATE requests per second over up to CONNS
 * keep-alive connections (one request in flight on each), for SECONDS. A request that falls due
 * while every connection is busy waits, and its latency counts from when it was due, not from
 * when it was sent: the load does not ease off when the server slows down (wrk, a closed loop,
 * does). RATE 0 is a closed loop: every connection sends again as soon as it is answered.
 * At the end it waits up to the timeout for what is in flight; what is still unanswered then is
 * lost. Prints one line on stdout:
 *   LOAD due=N ok=N status=N mismatch=N connect=N read=N timeout=N lost=N s2xx=N s4xx=N s5xx=N
 *        connections=N duration_us=N p50_us=N p90_us=N p99_us=N p999_us=N max_us=N
 * ok: answered with the expected status (-e, default 200; "any": every answer) and, with -w,
 * exactly the expected body (in -b and -w, \n is a newline); status and mismatch: answered
 * otherwise; connect, read, timeout: no answer (failed to connect, connection closed or broken, no
 * answer within -T, default 10). Latencies are of every answered request. -S binds the connections
 * to a source address (a second loopback address tells an attacker from a tenant). -s FILE writes
 * one line per completed request: "SECONDS_SINCE_START LATENCY_US OK(0/1)". -n N (N > 1) sends
 * round-robin to N paths, PATH-0 to PATH-(N-1): one request to each in turn (bench/interleave.sh).
 * Not product code.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "client.h"

#define RBUF	  65536
#define MAX_CONNS 1024

enum { C_CLOSED, C_CONNECTING, C_IDLE, C_SENDING, C_READING };

struct conn {
	int fd, state;
	double due, sent;  /* the request in flight: when it fell due, when it was sent */
	size_t wpos, rlen; /* bytes of the request written, of the answer read */
	long body_left;	   /* -1 until the headers are in */
	size_t head_len;   /* the headers' length, once in */
	int status, close_after;
	int ri; /* which of the requests (-n) it sends */
	char rbuf[RBUF];
};

struct sample {
	float t;
	uint32_t us;
	uint8_t ok;
};

static struct {
	double rate, dur, timeout;
	int nconns, want_status; /* -1: any */
	const char *want_body, *series;
	struct sockaddr_in dst, src;
	int bind_src;
	char **req; /* one request per path (-n) */
	size_t *req_len;
	int nreq;
	unsigned long next; /* the path of the next request to start */
	/* counters */
	long due, ok, status, mismatch, connect, read, timedout, lost, s2, s4, s5, opened;
	struct sample *s;
	size_t ns, caps;
	double *queue; /* due times of the requests waiting for a connection */
	size_t qhead, qlen, qcap;
} g = {.rate = 100, .dur = 10, .timeout = 10, .nconns = 8, .want_status = 200, .nreq = 1};

static void q_push(double t)
{
	if (g.qlen == g.qcap) {
		size_t cap = g.qcap ? g.qcap * 2 : 1024;
		double *q = malloc(cap * sizeof(*q));
		if (!q)
			client_die("out of memory");
		for (size_t i = 0; i < g.qlen; i++)
			q[i] = g.queue[(g.qhead + i) % g.qcap];
		free(g.queue);
		g.queue = q;
		g.qhead = 0;
		g.qcap = cap;
	}
	g.queue[(g.qhead + g.qlen++) % g.qcap] = t;
}

static double q_pop(void)
{
	double t = g.queue[g.qhead];
	g.qhead = (g.qhead + 1) % g.qcap;
	g.qlen--;
	return t;
}

static void record(double t0, double due, double done, int ok)
{
	if (g.ns == g.caps) {
		g.caps = g.caps ? g.caps * 2 : 4096;
		if (!(g.s = realloc(g.s, g.caps * sizeof(*g.s))))
			client_die("out of memory");
	}
	g.s[g.ns++] = (struct sample){(float)(done - t0), (uint32_t)((done - due) * 1e6), !!ok};
}

static void conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->state = C_CLOSED;
}

static void conn_open(struct conn *c)
{
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	if (c->fd < 0)
		return;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (g.bind_src && bind(c->fd, (struct sockaddr *)&g.src, sizeof(g.src))) {
		conn_close(c);
		return;
	}
	g.opened++;
	if (connect(c->fd, (struct sockaddr *)&g.dst, sizeof(g.dst)) && errno != EINPROGRESS)
		conn_close(c);
	else
		c->state = C_CONNECTING;
}

/* a connection that failed to open: the request due that it was for (if any) is lost to it */
static void connect_failed(struct conn *c)
{
	conn_close(c);
	if (g.rate > 0 && g.qlen)
		q_pop(), g.connect++;
	else if (!g.rate)
		g.due++, g.connect++;
}

/* a request without an answer: counted, its connection closed */
static void conn_fail(struct conn *c, long *counter)
{
	(*counter)++;
	conn_close(c);
}

static void start(struct conn *c, double due, double t)
{
	c->due = due;
	c->sent = t;
	c->ri = (int)(g.next++ % (unsigned long)g.nreq);
	c->wpos = c->rlen = 0;
	c->body_left = -1;
	c->state = C_SENDING;
}

/* the headers are in: status, Content-Length, Connection: close */
static int parse_head(struct conn *c)
{
	char *end = memmem(c->rbuf, c->rlen, "\r\n\r\n", 4);
	if (!end)
		return c->rlen < RBUF ? 0 : -1;
	c->head_len = (size_t)(end - c->rbuf) + 4;
	if (c->rlen < 12 || strncmp(c->rbuf, "HTTP/1.", 7))
		return -1;
	c->status = atoi(c->rbuf + 9);
	c->body_left = -2; /* no Content-Length: until the connection closes */
	c->close_after = 0;
	for (char *l = memchr(c->rbuf, '\n', c->head_len); l && l < end;
	     l = memchr(l + 1, '\n', (size_t)(end - l))) {
		l++;
		if (!strncasecmp(l, "Content-Length:", 15))
			c->body_left = atol(l + 15);
		else if (!strncasecmp(l, "Connection:", 11) && strstr(l, "close") &&
			 strstr(l, "close") < end)
			c->close_after = 1;
	}
	return 1;
}

static void answered(struct conn *c, double t0, double t)
{
	int st = c->status, ok = g.want_status < 0 || st == g.want_status;
	if (st >= 200 && st < 300)
		g.s2++;
	else if (st >= 400 && st < 500)
		g.s4++;
	else if (st >= 500)
		g.s5++;
	size_t blen = c->rlen - c->head_len;
	int body_ok = !g.want_body || (blen == strlen(g.want_body) &&
				       !memcmp(c->rbuf + c->head_len, g.want_body, blen));
	if (!ok)
		g.status++;
	else if (!body_ok)
		g.mismatch++;
	else
		g.ok++;
	static int told;
	if ((!ok || !body_ok) && !told++)
		fprintf(stderr, "loadgen: first unexpected answer: %.300s\n", c->rbuf);
	record(t0, c->due, t, ok && body_ok);
	if (c->close_after)
		conn_close(c);
	else
		c->state = C_IDLE;
}

static void on_read(struct conn *c, double t0, double t)
{
	for (;;) {
		if (c->rlen == RBUF) { /* a long answer: keep the headers, drop the rest */
			size_t keep = c->head_len ? c->head_len : 0;
			if (!keep)
				return conn_fail(c, &g.read);
			c->rlen = keep;
		}
		ssize_t n = read(c->fd, c->rbuf + c->rlen, RBUF - c->rlen);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n == 0 && c->body_left == -2) {
			c->close_after = 1;
			return answered(c, t0, t);
		}
		if (n <= 0)
			return conn_fail(c, &g.read);
		size_t before = c->rlen;
		c->rlen += (size_t)n;
		if (c->body_left == -1) {
			int h = parse_head(c);
			if (h < 0)
				return conn_fail(c, &g.read);
			if (!h)
				continue;
			before = c->head_len;
		}
		if (c->body_left >= 0) {
			c->body_left -= (long)(c->rlen - before);
			if (c->body_left <= 0)
				return answered(c, t0, t);
		}
	}
}

static void on_write(struct conn *c)
{
	const char *r = g.req[c->ri];
	size_t len = g.req_len[c->ri];
	while (c->wpos < len) {
		ssize_t n = write(c->fd, r + c->wpos, len - c->wpos);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0)
			return conn_fail(c, &g.read);
		c->wpos += (size_t)n;
	}
	c->state = C_READING;
}

/* the request every connection sends: METHOD PATH, Host, an extra header (or ""), the body */
static void build(const char *url, const char *method, const char *hdr, const char *body,
		  size_t blen)
{
	struct client_url u;
	client_url(url, &u);
	g.dst = u.dst;
	const char *host = u.host;
	unsigned port = u.port;
	size_t cap = strlen(method) + strlen(u.path) + strlen(host) + strlen(hdr) + blen + 200;
	g.req = calloc((size_t)g.nreq, sizeof(*g.req));
	g.req_len = calloc((size_t)g.nreq, sizeof(*g.req_len));
	if (!g.req || !g.req_len)
		client_die("out of memory");
	for (int k = 0; k < g.nreq; k++) {
		char path[2048];
		if (g.nreq > 1)
			snprintf(path, sizeof(path), "%.2000s-%d", u.path, k);
		else
			snprintf(path, sizeof(path), "%.2000s", u.path);
		if (!(g.req[k] = malloc(cap)))
			client_die("out of memory");
		int n = snprintf(g.req[k], cap,
				 "%s %s HTTP/1.1\r\nHost: %s:%u\r\n%s%sContent-Type: text/plain\r\n"
				 "Content-Length: %zu\r\n\r\n",
				 method, path, host, port, hdr, hdr[0] ? "\r\n" : "", blen);
		memcpy(g.req[k] + n, body, blen);
		g.req_len[k] = (size_t)n + blen;
	}
}

/* -f FILE: the body is the file's bytes */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	if (!f || fseek(f, 0, SEEK_END) || (long)(*len = (size_t)ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) || !(buf = malloc(*len + 1)) || fread(buf, 1, *len, f) != *len)
		client_die("cannot read the -f file");
	fclose(f);
	return buf;
}

/* "\n" in -b and -w is a newline (the shell cannot pass a trailing one in $(...)) */
static char *unescape(const char *in)
{
	char *out = strdup(in), *o = out;
	if (!out)
		client_die("out of memory");
	for (; *in; in++)
		*o++ = in[0] == '\\' && in[1] == 'n' ? (in++, '\n') : *in;
	*o = 0;
	return out;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static void report(double took)
{
	uint32_t *l = malloc((g.ns ? g.ns : 1) * sizeof(*l));
	if (!l)
		client_die("out of memory");
	for (size_t i = 0; i < g.ns; i++)
		l[i] = g.s[i].us;
	qsort(l, g.ns, sizeof(*l), cmp_u32);
#define PCT(p) (g.ns ? l[(size_t)((double)(g.ns - 1) * (p))] : 0)
	printf("LOAD due=%ld ok=%ld status=%ld mismatch=%ld connect=%ld read=%ld timeout=%ld "
	       "lost=%ld s2xx=%ld s4xx=%ld s5xx=%ld connections=%ld duration_us=%.0f p50_us=%u "
	       "p90_us=%u p99_us=%u p999_us=%u max_us=%u\n",
	       g.due, g.ok, g.status, g.mismatch, g.connect, g.read, g.timedout, g.lost, g.s2, g.s4,
	       g.s5, g.opened, took * 1e6, PCT(0.5), PCT(0.9), PCT(0.99), PCT(0.999),
	       g.ns ? l[g.ns - 1] : 0);
#undef PCT
	free(l);
	FILE *f = g.series ? fopen(g.series, "w") : NULL;
	for (size_t i = 0; f && i < g.ns; i++)
		fprintf(f, "%.3f %u %d\n", g.s[i].t, g.s[i].us, g.s[i].ok);
	if (f)
		fclose(f);
}

static struct {
	const char *body, *method, *hdr;
	size_t blen;
} req = {"Ember", "POST", "", 5};

/* the options that are not plain values */
static void other_opt(int c, char *arg)
{
	if (c == 'b') {
		req.body = unescape(arg);
		req.blen = strlen(req.body);
	} else if (c == 'f') {
		req.body = slurp(arg, &req.blen);
	} else if (c == 'w') {
		g.want_body = unescape(arg);
	} else if (c == 'e') {
		g.want_status = strcmp(arg, "any") ? atoi(arg) : -1;
	} else if (c == 'S') {
		g.bind_src = 1;
		client_src(arg, &g.src);
	} else {
		client_die("see the comment at the top of bench/loadgen.c");
	}
}

static void options(int argc, char **argv)
{
	const struct client_opt t[] = {
	    {'r', OPT_DOUBLE, &g.rate},	   {'c', OPT_INT, &g.nconns},	{'d', OPT_DOUBLE, &g.dur},
	    {'T', OPT_DOUBLE, &g.timeout}, {'m', OPT_STR, &req.method}, {'H', OPT_STR, &req.hdr},
	    {'s', OPT_STR, &g.series},	   {'n', OPT_INT, &g.nreq},
	};
	client_opts(argc, argv, "r:c:d:b:f:m:H:w:e:T:S:s:n:", t, (int)(sizeof(t) / sizeof(t[0])),
		    other_opt);
	if (optind != argc - 1 || g.nconns < 1 || g.nconns > MAX_CONNS || g.rate < 0 ||
	    g.dur <= 0 || g.timeout <= 0 || g.nreq < 1 || g.nreq > 100000)
		client_die(
		    "usage: loadgen [-r RATE] [-c CONNS] [-d SECONDS] [-b BODY] [-w BODY] "
		    "[-f FILE] [-m METHOD] [-H HEADER] [-e STATUS|any] [-T SECONDS] [-S SRCADDR] "
		    "[-s FILE] [-n N] URL");
	build(argv[optind], req.method, req.hdr, req.body, req.blen);
}

/* one pass: connections that are due a request get one, failed connects are counted */
static void dispatch(struct conn *cs, double t, int running)
{
	for (int i = 0; i < g.nconns; i++) {
		struct conn *c = &cs[i];
		int want = g.rate > 0 ? g.qlen > 0 : running;
		if (c->state == C_CLOSED && want) {
			c->sent = t;
			conn_open(c);
			if (c->state == C_CLOSED)
				connect_failed(c);
		}
		if (c->state == C_IDLE && want) {
			if (g.rate > 0)
				start(c, q_pop(), t);
			else
				g.due++, start(c, t, t);
		}
		if (c->state == C_CONNECTING && t - c->sent > g.timeout)
			connect_failed(c);
		else if ((c->state == C_SENDING || c->state == C_READING) &&
			 t - c->sent > g.timeout)
			conn_fail(c, &g.timedout);
	}
}

int main(int argc, char **argv)
{
	client_name = "loadgen";
	options(argc, argv);
	struct conn *cs = calloc((size_t)g.nconns, sizeof(*cs));
	struct pollfd *pf = calloc((size_t)g.nconns, sizeof(*pf));
	if (!cs || !pf)
		client_die("out of memory");
	for (int i = 0; i < g.nconns; i++)
		cs[i].fd = -1;
	double t0 = client_now(), end = t0 + g.dur;
	long n = 0;
	for (;;) {
		double t = client_now();
		int running = t < end;
		while (g.rate > 0 && running && t0 + (double)n / g.rate <= t) {
			q_push(t0 + (double)n++ / g.rate);
			g.due++;
		}
		dispatch(cs, t, running);
		int busy = 0;
		for (int i = 0; i < g.nconns; i++) {
			struct conn *c = &cs[i];
			pf[i].fd = c->state == C_CLOSED || c->state == C_IDLE ? -1 : c->fd;
			pf[i].events = c->state == C_READING ? POLLIN : POLLOUT;
			busy += pf[i].fd >= 0 && c->state != C_CONNECTING;
		}
		if (!running && !busy && !g.qlen)
			break;
		if (t > end + g.timeout) {
			g.lost += busy + (long)g.qlen;
			break;
		}
		double next = g.rate > 0 && running ? t0 + (double)n / g.rate - t : 0.05;
		int ms = next > 0 ? (int)(next * 1e3) + 1 : 0;
		if (poll(pf, (nfds_t)g.nconns, ms) < 0 && errno != EINTR)
			client_die("poll failed");
		t = client_now();
		for (int i = 0; i < g.nconns; i++) {
			struct conn *c = &cs[i];
			if (pf[i].fd < 0 || !pf[i].revents)
				continue;
			if (c->state == C_CONNECTING) {
				int e = 0;
				socklen_t el = sizeof(e);
				getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &e, &el);
				if (e)
					connect_failed(c);
				else
					c->state = C_IDLE;
			} else if (c->state == C_SENDING)
				on_write(c);
			else if (c->state == C_READING)
				on_read(c, t0, t);
		}
	}
	report(client_now() - t0);
	return 0;
}
