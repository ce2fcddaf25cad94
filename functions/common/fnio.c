/* Shared helpers for C functions: whole-request input, raw output and request parameters. */
#include "fnio.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

unsigned char *fn_read_all(size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	unsigned char *buf = malloc(cap);
	for (;;) {
		if (buf && n + 1 == cap)
			buf = realloc(buf, cap *= 2);
		if (!buf)
			fn_die("out of memory reading the request");
		ssize_t r = read(0, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			fn_die("read: %s", strerror(errno));
		if (r == 0)
			break;
		n += (size_t)r;
	}
	buf[n] = 0;
	*len = n;
	return buf;
}

_Noreturn void fn_die(const char *fmt, ...)
{
	char msg[512];
	int n = snprintf(msg, sizeof(msg), "%s: ", program_invocation_short_name);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	strcat(msg, "\n");
	base_write_all(2, msg, strlen(msg));
	exit(1);
}

void fnbuf_put(struct fnbuf *b, const void *p, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n)
			cap *= 2;
		b->p = realloc(b->p, cap);
		if (!b->p)
			fn_die("out of memory");
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

void fnbuf_printf(struct fnbuf *b, const char *fmt, ...)
{
	char tmp[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		fn_die("output line too long");
	fnbuf_put(b, tmp, (size_t)n);
}

_Noreturn void fnbuf_finish(struct fnbuf *b)
{
	exit(base_write_all(1, b->p, b->len) ? 1 : 0);
}

/* Finds the value of key in text, or NULL; *end is set to the end of the value. */
static const char *find_value(const char *text, int line, const char *key, const char **end)
{
	size_t klen = strlen(key);
	const char *p = text;
	while (*p && !(line && *p == '\n')) {
		while (*p == ' ' || *p == '\t' || *p == '\r' || (!line && *p == '\n'))
			p++;
		const char *w = p;
		while (*p && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')
			p++;
		if ((size_t)(p - w) > klen && !strncmp(w, key, klen) && w[klen] == '=') {
			*end = p;
			return w + klen + 1;
		}
	}
	return NULL;
}

long fn_param(const char *text, int line, const char *key, long def, long min, long max)
{
	const char *end, *v = find_value(text, line, key, &end);
	if (!v)
		return def;
	char *e;
	errno = 0;
	long x = strtol(v, &e, 10);
	if (e != end || errno || x < min || x > max)
		fn_die("bad %s: expected an integer in [%ld, %ld]", key, min, max);
	return x;
}

double fn_paramf(const char *text, int line, const char *key, double def, double min, double max)
{
	const char *end, *v = find_value(text, line, key, &end);
	if (!v)
		return def;
	char *e;
	double x = strtod(v, &e);
	if (e != end || !(x >= min && x <= max))
		fn_die("bad %s: expected a number in [%g, %g]", key, min, max);
	return x;
}
