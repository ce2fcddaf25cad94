/* ember serve's log on stderr: lines go into a buffer that a thread of its own writes, in order,
 * so a request's REPORT line costs a copy on its path instead of a write (about 8 us to a file
 * under PVM). */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/serve_log.h"
#include "base/base.h"

/* at most this much waits to be written; a line that finds the buffer full waits for the writer
 * to take it (it cannot keep up: the callers wait, nothing is dropped) */
#define LOG_BUF (256 << 10)
/* an info line may wait this long for others to join it in one write; a warning or an error,
 * and everything before it, is written before the call returns */
#define GATHER_NS 1000000L

static struct {
	pthread_mutex_t mu;
	pthread_cond_t more, room; /* more: on the monotonic clock (base_cond_init); room: the
				    * writer took the buffer, or wrote it */
	char *buf, *spare;
	size_t len;
	uint64_t queued, written; /* bytes ever put in the buffer, and written out */
	unsigned room_waiters;	  /* callers waiting for room: the writer does not end before */
	int started, stop, waiting, urgent, monotonic;
	pthread_t thread;
} lg = {.mu = PTHREAD_MUTEX_INITIALIZER, .room = PTHREAD_COND_INITIALIZER};

static void write_out(const char *p, size_t n)
{
	(void)base_write_all(STDERR_FILENO, p, n);
}

/* waits up to GATHER_NS (on the monotonic clock, which no clock step moves) for more lines */
static void gather(void)
{
	struct timespec until;
	base_deadline(&until, GATHER_NS / 1e9);
	while (!lg.stop && !lg.urgent && lg.len < LOG_BUF / 2 &&
	       pthread_cond_timedwait(&lg.more, &lg.mu, &until) != ETIMEDOUT)
		;
}

static void *writer(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lg.mu);
	for (;;) {
		while (!lg.len && !(lg.stop && !lg.room_waiters)) {
			lg.waiting = 1;
			pthread_cond_wait(&lg.more, &lg.mu);
			lg.waiting = 0;
		}
		if (!lg.len) {
			/* stopping, all written, nobody waiting to put a line: from now on a line
			 * is written on its caller's thread, under the lock, after all of these */
			lg.started = 0;
			pthread_cond_broadcast(&lg.room);
			break;
		}
		gather();
		char *out = lg.buf;
		size_t n = lg.len;
		lg.buf = lg.spare;
		lg.spare = out;
		lg.len = 0;
		lg.urgent = 0;
		pthread_cond_broadcast(&lg.room);
		pthread_mutex_unlock(&lg.mu);
		write_out(out, n);
		pthread_mutex_lock(&lg.mu);
		lg.written += n;
		pthread_cond_broadcast(&lg.room);
	}
	pthread_mutex_unlock(&lg.mu);
	return NULL;
}

void serve_log_start(void)
{
	pthread_mutex_lock(&lg.mu);
	if (!lg.monotonic) { /* before any writer: nobody waits on it */
		base_cond_init(&lg.more);
		lg.monotonic = 1;
	}
	lg.buf = malloc(LOG_BUF);
	lg.spare = malloc(LOG_BUF);
	lg.len = 0;
	lg.stop = lg.urgent = 0;
	lg.started = lg.buf && lg.spare && !pthread_create(&lg.thread, NULL, writer, NULL);
	if (!lg.started) { /* every line is then written on the caller's thread */
		free(lg.buf);
		free(lg.spare);
		lg.buf = lg.spare = NULL;
	}
	pthread_mutex_unlock(&lg.mu);
}

void serve_log_stop(void)
{
	pthread_mutex_lock(&lg.mu);
	if (!lg.started) {
		pthread_mutex_unlock(&lg.mu);
		return;
	}
	lg.stop = 1;
	pthread_cond_signal(&lg.more);
	pthread_mutex_unlock(&lg.mu);
	pthread_join(lg.thread, NULL); /* it cleared started */
	pthread_mutex_lock(&lg.mu);
	free(lg.buf);
	free(lg.spare);
	lg.buf = lg.spare = NULL;
	pthread_cond_broadcast(&lg.room);
	pthread_mutex_unlock(&lg.mu);
}

void serve_log_emergency(void)
{
	/* the process is dying (a forbidden system call): no lock, best effort, whatever the
	 * buffer holds now */
	char *b = lg.buf;
	size_t n = lg.len;
	if (b && n && n <= LOG_BUF) {
		ssize_t w = write(STDERR_FILENO, b, n);
		(void)w;
	}
}

/* one whole line, newline included; the writer takes lines in the order they are put, and
 * while it runs nothing is written past it */
static void put(const char *line, size_t n, int urgent)
{
	pthread_mutex_lock(&lg.mu);
	while (lg.started && lg.len + n > LOG_BUF) {
		lg.urgent = 1; /* no gathering: room is wanted */
		lg.room_waiters++;
		pthread_cond_signal(&lg.more);
		pthread_cond_wait(&lg.room, &lg.mu);
		lg.room_waiters--;
	}
	if (!lg.started) {
		write_out(line, n);
		pthread_mutex_unlock(&lg.mu);
		return;
	}
	memcpy(lg.buf + lg.len, line, n);
	lg.len += n;
	lg.queued += n;
	lg.urgent |= urgent;
	if (lg.waiting || urgent)
		pthread_cond_signal(&lg.more);
	/* a warning or an error is on stderr when the call returns (an operator, or a test, may
	 * look right after what it reports), with every line before it */
	for (uint64_t mine = lg.queued; urgent && lg.written < mine && lg.started;)
		pthread_cond_wait(&lg.room, &lg.mu);
	pthread_mutex_unlock(&lg.mu);
}

void serve_log_line(void *ctx, const char *level, const char *line)
{
	(void)ctx;
	static const char prefix[] = "ember serve: ";
	char buf[SRV_LOG_LINE_MAX + 64];
	size_t n = sizeof(prefix) - 1, ll = strlen(level), len = strlen(line);
	int info = !strcmp(level, "info");
	memcpy(buf, prefix, n);
	if (!info && ll + 2 < sizeof(buf) - n) {
		memcpy(buf + n, level, ll);
		memcpy(buf + n + ll, ": ", 2);
		n += ll + 2;
	}
	if (len > sizeof(buf) - n - 1)
		len = sizeof(buf) - n - 1;
	memcpy(buf + n, line, len);
	n += len;
	buf[n++] = '\n';
	put(buf, n, !info);
}

void serve_log(const char *level, const char *fmt, ...)
{
	char line[SRV_LOG_LINE_MAX + 1];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	serve_log_line(NULL, level, line);
}
