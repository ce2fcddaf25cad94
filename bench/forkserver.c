/* forkserver: the HTTP benchmark's baseline, a process per request (OpenFaaS classic watchdog). */
/*
 * forkserver [--fork] PORT PROGRAM: listens on 127.0.0.1:PORT (0: a free one; the port is printed
 * on stdout). For every request it starts a new process running PROGRAM with the request body on
 * stdin, reads its stdout and answers 200 with it (500 when the program fails). The process is
 * made with posix_spawn (glibc: clone with CLONE_VM | CLONE_VFORK, then exec), which is how Go's
 * os/exec starts the watchdog's process on Linux; --fork uses fork() and exec instead. Keep-alive
 * connections get one thread each, as Go's net/http gives the watchdog a goroutine each. Not
 * product code: a minimal HTTP/1.1 reader, enough for wrk and curl.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define HEAD_MAX (64 << 10)
#define BODY_MAX (6 << 20)

extern char **environ;
static const char *program;
static int use_fork; /* 1: fork(); 0: posix_spawn, a vfork-style clone as Go's os/exec does */

struct conn {
	int fd;
	char *buf; /* bytes read and not used yet (a pipelined request) */
	size_t len, cap;
};

static int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n > 0) {
		ssize_t w = write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

static int fill(struct conn *c, size_t want)
{
	if (want > c->cap) {
		size_t cap = c->cap ? c->cap : 16384;
		while (cap < want)
			cap *= 2;
		char *b = realloc(c->buf, cap);
		if (!b)
			return -1;
		c->buf = b;
		c->cap = cap;
	}
	while (c->len < want) {
		ssize_t r = read(c->fd, c->buf + c->len, c->cap - c->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		c->len += (size_t)r;
	}
	return 0;
}

/* the value of header name in the head [p, end), or NULL */
static const char *header(const char *p, const char *end, const char *name, size_t *vlen)
{
	size_t n = strlen(name);
	for (const char *line = memchr(p, '\n', (size_t)(end - p)); line && line + 1 < end;
	     line = memchr(line + 1, '\n', (size_t)(end - line - 1))) {
		const char *h = line + 1;
		if ((size_t)(end - h) > n && !strncasecmp(h, name, n) && h[n] == ':') {
			const char *v = h + n + 1, *e = memchr(v, '\r', (size_t)(end - v));
			while (v < e && *v == ' ')
				v++;
			*vlen = e ? (size_t)(e - v) : 0;
			return v;
		}
	}
	return NULL;
}

/* runs the program with in on stdin; its stdout in *out; returns its wait status or -1 */
static int run(const char *in, size_t inlen, char **out, size_t *outlen)
{
	int pin[2], pout[2];
	if (pipe2(pin, O_CLOEXEC) || pipe2(pout, O_CLOEXEC))
		return -1;
	pid_t pid = -1;
	char *argv[] = {(char *)program, NULL};
	if (use_fork) {
		pid = fork();
		if (pid == 0) {
			dup2(pin[0], 0);
			dup2(pout[1], 1);
			execv(program, argv);
			_exit(127);
		}
	} else {
		posix_spawn_file_actions_t fa;
		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_adddup2(&fa, pin[0], 0);
		posix_spawn_file_actions_adddup2(&fa, pout[1], 1);
		if (posix_spawn(&pid, program, &fa, NULL, argv, environ))
			pid = -1;
		posix_spawn_file_actions_destroy(&fa);
	}
	if (pid < 0) {
		close(pin[0]), close(pin[1]), close(pout[0]), close(pout[1]);
		return -1;
	}
	close(pin[0]);
	close(pout[1]);
	size_t cap = 4096, n = 0, sent = 0;
	char *o = malloc(cap);
	struct pollfd pf[2] = {{pin[1], POLLOUT, 0}, {pout[0], POLLIN, 0}};
	if (!inlen) {
		close(pin[1]);
		pf[0].fd = -1;
	}
	while (o && pf[1].fd >= 0) {
		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			break;
		if (pf[0].fd >= 0 && pf[0].revents) {
			ssize_t w = write(pin[1], in + sent, inlen - sent);
			if (w > 0)
				sent += (size_t)w;
			if (w <= 0 || sent == inlen) {
				close(pin[1]);
				pf[0].fd = -1;
			}
		}
		if (pf[1].revents) {
			if (n == cap) {
				char *b = realloc(o, cap *= 2);
				if (!b)
					break;
				o = b;
			}
			ssize_t r = read(pout[0], o + n, cap - n);
			if (r > 0)
				n += (size_t)r;
			else if (r == 0 || errno != EINTR)
				pf[1].fd = -1;
		}
	}
	if (pf[0].fd >= 0)
		close(pin[1]);
	close(pout[0]);
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	*out = o;
	*outlen = n;
	return o ? status : -1;
}

/* one request from c, answered; 0 to keep the connection, -1 to close it */
static int serve_one(struct conn *c)
{
	char *end = NULL;
	while (!(end = c->len ? memmem(c->buf, c->len, "\r\n\r\n", 4) : NULL)) {
		if (c->len >= HEAD_MAX || fill(c, c->len + 1))
			return -1;
	}
	size_t head = (size_t)(end - c->buf) + 4, vlen = 0, body = 0;
	const char *v = header(c->buf, end + 2, "Content-Length", &vlen);
	if (v)
		body = strtoul(v, NULL, 10);
	if (body > BODY_MAX || fill(c, head + body))
		return -1;
	int keep = memmem(c->buf, head, "HTTP/1.1", 8) != NULL;
	v = header(c->buf, end + 2, "Connection", &vlen);
	if (v && vlen == 5 && !strncasecmp(v, "close", 5))
		keep = 0;
	char *out = NULL;
	size_t outlen = 0;
	int st = run(c->buf + head, body, &out, &outlen);
	int ok = st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
	char hdr[256];
	int hl = snprintf(hdr, sizeof(hdr),
			  "HTTP/1.1 %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
			  "Content-Length: %zu\r\n%s\r\n",
			  ok ? "200 OK" : "500 Internal Server Error", outlen,
			  keep ? "" : "Connection: close\r\n");
	int rc = write_all(c->fd, hdr, (size_t)hl) || write_all(c->fd, out, outlen) ? -1 : 0;
	free(out);
	memmove(c->buf, c->buf + head + body, c->len - head - body);
	c->len -= head + body;
	return rc || !keep ? -1 : 0;
}

static void *connection(void *p)
{
	struct conn c = {.fd = (int)(intptr_t)p};
	while (serve_one(&c) == 0)
		;
	close(c.fd);
	free(c.buf);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "--fork")) {
		use_fork = 1;
		argv++, argc--;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: forkserver [--fork] PORT PROGRAM\n");
		return 2;
	}
	program = argv[2];
	signal(SIGPIPE, SIG_IGN);
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) || listen(ls, 512)) {
		perror("forkserver: listen");
		return 1;
	}
	socklen_t al = sizeof(a);
	getsockname(ls, (struct sockaddr *)&a, &al);
	printf("forkserver listening on 127.0.0.1:%u (%s)\n", ntohs(a.sin_port),
	       use_fork ? "fork" : "posix_spawn");
	fflush(stdout);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 << 10);
	for (;;) {
		int fd = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		pthread_t t;
		if (pthread_create(&t, &attr, connection, (void *)(intptr_t)fd))
			close(fd);
	}
}
