/* attack: hostile HTTP clients for bench/hostile.sh (garbage, slowloris, oversized bodies). */
/*
 * attack MODE [-r RATE] [-n CONNS] [-d SECONDS] [-i SECONDS] [-m BYTES] [-S SRCADDR]
 *        http://A.B.C.D:PORT/PATH
 *
 * garbage   RATE new connections a second (up to CONNS at once), each sending one of: random
 *           bytes; a request line and random bytes; a 100 KiB header line; a bad Content-Length
 *           (negative, not a number, 2^64 and more); a chunked body with a bad chunk size. It
 *           reads until the server answers or closes (2 s at most).
 * slowloris CONNS connections, each trickling one byte every -i SECONDS (default 1): half of
 *           them a request's headers that never end, half a body that never ends after honest
 *           headers (Content-Length 1 MB). A connection the server closes (or refuses) is
 *           opened again an interval later.
 * oversize  RATE new connections a second (up to CONNS at once), each POSTing to PATH a body
 *           larger than any limit as fast as the server takes it: every other one with
 *           Content-Length -m BYTES (default 64 MiB), the others chunked without end; until
 *           the server answers or closes (10 s at most).
 * Runs for -d SECONDS (default 10) and prints one line:
 *   ATTACK mode=M opened=N refused=N answered=N closed=N timedout=N s4xx=N s5xx=N
 *          held_max=N sent_bytes=N
 * answered: the server sent a status line; closed: it closed the connection without one;
 * timedout: the attack gave up first. -S binds to a source address (127.0.0.2: an attacker
 * the server can tell from the tenants on 127.0.0.1). Not product code.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "client.h"

#define MAX_CONNS 4096
#define CHUNK	  65536

enum { M_GARBAGE, M_SLOW, M_OVERSIZE };
struct conn {
	int fd, kind;
	double opened, last;
	char *msg; /* what to send: msg[0..len), then (oversize) more filler */
	size_t len, pos;
	uint64_t total; /* oversize: how much to send in all (0: without end) */
	int got_status;
};

static struct {
	int mode, nconns, bind_src;
	double rate, dur, interval;
	uint64_t big;
	struct sockaddr_in dst, src;
	char host[64], path[512];
	unsigned port;
	long opened, refused, answered, closed, timedout, s4, s5, held_max;
	uint64_t sent;
	char filler[CHUNK];
} g = {.nconns = 64, .rate = 20, .dur = 10, .interval = 1, .big = 64ULL << 20};

/* a request: "METHOD PATH HTTP/1.1", the Host header, then f */
static char *req(size_t *len, const char *f, ...)
{
	char *m = NULL, *rest = NULL;
	va_list ap;
	va_start(ap, f);
	int n = vasprintf(&rest, f, ap);
	va_end(ap);
	if (n < 0 ||
	    asprintf(&m, "POST %s HTTP/1.1\r\nHost: %s:%u\r\n%s", g.path, g.host, g.port, rest) < 0)
		client_die("out of memory");
	free(rest);
	*len = strlen(m);
	return m;
}

/* one hostile request of a garbage kind */
static char *garbage(size_t *len)
{
	static const char *const bad_len[] = {"-1", "abc", "18446744073709551616",
					      "99999999999999999999999", "1, 2"};
	int kind = rand() % 5;
	char *m;
	if (kind == 0 || kind == 1) { /* random bytes, or a request line and random bytes */
		size_t n = 1 + (size_t)(rand() % 4096);
		m = malloc(n + 64);
		if (!m)
			client_die("out of memory");
		size_t off = kind ? (size_t)sprintf(m, "POST /function/hello HTTP/1.1\r\n") : 0;
		for (size_t i = 0; i < n; i++)
			m[off + i] = (char)(rand() & 0xff);
		*len = off + n;
	} else if (kind == 2) { /* a header line of 100 KiB */
		size_t n = 100 << 10;
		m = malloc(n + 256);
		if (!m)
			client_die("out of memory");
		size_t off = (size_t)sprintf(m, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ");
		memset(m + off, 'A', n);
		memcpy(m + off + n, "\r\n\r\n", 4);
		*len = off + n + 4;
	} else if (kind == 3) {
		m = req(len, "Content-Length: %s\r\n\r\n12345", bad_len[rand() % 5]);
	} else {
		m = req(len, "Transfer-Encoding: chunked\r\n\r\n%s\r\nxx\r\n0\r\n",
			rand() % 2 ? "zzzz" : "ffffffffffffffffff");
	}
	return m;
}

static void conn_start(struct conn *c, double t)
{
	memset(c, 0, sizeof(*c));
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0 || (g.bind_src && bind(c->fd, (struct sockaddr *)&g.src, sizeof(g.src))) ||
	    (connect(c->fd, (struct sockaddr *)&g.dst, sizeof(g.dst)) && errno != EINPROGRESS)) {
		if (c->fd >= 0)
			close(c->fd);
		c->fd = -1;
		g.refused++;
		return;
	}
	g.opened++;
	c->opened = c->last = t;
	if (g.mode == M_GARBAGE) {
		c->msg = garbage(&c->len);
	} else if (g.mode == M_SLOW) {
		c->kind = (int)(g.opened & 1);
		c->msg = c->kind ? req(&c->len, "X-Slow: ")
				 : req(&c->len, "Content-Length: 1000000\r\n\r\n");
	} else {
		c->kind = (int)(g.opened & 1);
		c->msg = c->kind ? req(&c->len, "Content-Length: %llu\r\n\r\n",
				       (unsigned long long)g.big)
				 : req(&c->len, "Transfer-Encoding: chunked\r\n\r\n");
		c->total = c->kind ? c->len + g.big : 0;
	}
}

static void conn_end(struct conn *c, long *counter)
{
	if (counter)
		(*counter)++;
	close(c->fd);
	free(c->msg);
	c->last = client_now();
	c->fd = -1;
	c->msg = NULL;
}

/* sends what is due: everything at once (garbage, oversize), one byte per interval (slow) */
static void on_write(struct conn *c, double t)
{
	for (;;) {
		const char *p;
		size_t n;
		if (c->pos < c->len) {
			p = c->msg + c->pos;
			n = c->len - c->pos;
		} else if (g.mode == M_OVERSIZE && (!c->total || c->pos < c->total)) {
			size_t at = (c->pos - c->len) % CHUNK; /* the filler is one whole chunk */
			p = g.filler + at;
			n = CHUNK - at;
			if (c->total && c->total - c->pos < n)
				n = c->total - c->pos;
		} else if (g.mode == M_SLOW && t - c->last >= g.interval) {
			p = "a";
			n = 1;
		} else
			return;
		ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (w <= 0)
			return conn_end(c, &g.closed);
		c->pos += (size_t)w;
		c->last = t;
		g.sent += (uint64_t)w;
		if (g.mode == M_SLOW && c->pos > c->len)
			return;
	}
}

static int wants_write(const struct conn *c, double t)
{
	if (c->pos < c->len)
		return 1;
	if (g.mode == M_OVERSIZE)
		return !c->total || c->pos < c->total;
	return g.mode == M_SLOW && t - c->last >= g.interval;
}

static void on_read(struct conn *c)
{
	char buf[4096];
	ssize_t r = recv(c->fd, buf, sizeof(buf), 0);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r > 12 && !strncmp(buf, "HTTP/1.", 7)) {
		int st = atoi(buf + 9);
		g.s4 += st >= 400 && st < 500;
		g.s5 += st >= 500;
		return conn_end(c, &g.answered);
	}
	conn_end(c, r <= 0 ? &g.closed : &g.answered);
}

/* -S, and what is not an option */
static void other_opt(int c, char *arg)
{
	if (c != 'S')
		client_die("see the comment at the top of bench/attack.c");
	g.bind_src = 1;
	client_src(arg, &g.src);
}

static void parse(int argc, char **argv)
{
	static const char *const modes[] = {"garbage", "slowloris", "oversize"};
	if (argc < 2)
		client_die(
		    "usage: attack garbage|slowloris|oversize [-r RATE] [-n CONNS] [-d SECONDS] "
		    "[-i SECONDS] [-m BYTES] [-S SRCADDR] URL");
	g.mode = -1;
	for (int i = 0; i < 3; i++)
		if (!strcmp(argv[1], modes[i]))
			g.mode = i;
	if (g.mode < 0)
		client_die("the mode is garbage, slowloris or oversize");
	const struct client_opt t[] = {
	    {'r', OPT_DOUBLE, &g.rate},	    {'n', OPT_INT, &g.nconns}, {'d', OPT_DOUBLE, &g.dur},
	    {'i', OPT_DOUBLE, &g.interval}, {'m', OPT_U64, &g.big},
	};
	optind = 2;
	client_opts(argc, argv, "r:n:d:i:m:S:", t, (int)(sizeof(t) / sizeof(t[0])), other_opt);
	if (optind != argc - 1 || g.nconns < 1 || g.nconns > MAX_CONNS)
		client_die("give one URL; CONNS is 1 to 4096");
	struct client_url u;
	client_url(argv[optind], &u);
	g.dst = u.dst;
	g.port = u.port;
	snprintf(g.host, sizeof(g.host), "%s", u.host);
	snprintf(g.path, sizeof(g.path), "%s", u.path);
	if (g.mode != M_SLOW && !(g.rate > 0))
		client_die("RATE must be above 0");
	/* the oversize filler: one whole chunk of 0xfff6 bytes, framing included (as plain
	 * bytes, a body too) */
	memcpy(g.filler, "fff6\r\n", 6);
	memset(g.filler + 6, 'x', CHUNK - 8);
	memcpy(g.filler + CHUNK - 2, "\r\n", 2);
}

int main(int argc, char **argv)
{
	client_name = "attack";
	parse(argc, argv);
	srand((unsigned)getpid());
	struct conn *cs = calloc((size_t)g.nconns, sizeof(*cs));
	struct pollfd *pf = calloc((size_t)g.nconns, sizeof(*pf));
	if (!cs || !pf)
		client_die("out of memory");
	for (int i = 0; i < g.nconns; i++)
		cs[i].fd = -1;
	double t0 = client_now(), end = t0 + g.dur, limit = g.mode == M_OVERSIZE ? 10 : 2;
	long n = 0;
	while (client_now() < end) {
		double t = client_now();
		long held = 0;
		for (int i = 0; i < g.nconns; i++) {
			struct conn *c = &cs[i];
			/* slowloris opens a connection the server closed again an interval later */
			int due = g.mode == M_SLOW ? t - c->last >= g.interval
						   : t0 + (double)n / g.rate <= t;
			if (c->fd < 0 && due) {
				conn_start(c, t);
				n++;
			}
			if (c->fd >= 0 && g.mode != M_SLOW && t - c->opened > limit)
				conn_end(c, &g.timedout);
			held += c->fd >= 0;
			pf[i].fd = c->fd;
			pf[i].events = POLLIN | (c->fd >= 0 && wants_write(c, t) ? POLLOUT : 0);
		}
		if (held > g.held_max)
			g.held_max = held;
		if (poll(pf, (nfds_t)g.nconns, 20) < 0 && errno != EINTR)
			client_die("poll failed");
		t = client_now();
		for (int i = 0; i < g.nconns; i++) {
			if (cs[i].fd < 0 || !pf[i].revents)
				continue;
			if (pf[i].revents & (POLLIN | POLLHUP | POLLERR))
				on_read(&cs[i]);
			else if (pf[i].revents & POLLOUT)
				on_write(&cs[i], t);
		}
	}
	for (int i = 0; i < g.nconns; i++)
		if (cs[i].fd >= 0)
			conn_end(&cs[i], g.mode == M_SLOW ? NULL : &g.timedout);
	printf(
	    "ATTACK mode=%s opened=%ld refused=%ld answered=%ld closed=%ld timedout=%ld s4xx=%ld "
	    "s5xx=%ld held_max=%ld sent_bytes=%llu\n",
	    argv[1], g.opened, g.refused, g.answered, g.closed, g.timedout, g.s4, g.s5, g.held_max,
	    (unsigned long long)g.sent);
	return 0;
}
