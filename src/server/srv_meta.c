/* An invocation's metadata: method, path, query and headers as the watchdog's Http_* names. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/srv_core.h"
#include "server/srv_auth.h"
#include "server/srv_http.h"
#include "server/srv_invoke.h"

struct meta {
	char *p;
	size_t len, cap;
	int oom;
	int drop_auth; /* the Authorization header held Ember's credentials: not the function's */
};

static void put(struct meta *m, const char *s, size_t n)
{
	if (m->oom)
		return;
	if (m->len + n > m->cap) {
		size_t cap = m->cap ? m->cap : 1024;
		while (cap < m->len + n)
			cap *= 2;
		char *p = realloc(m->p, cap);
		if (!p) {
			m->oom = 1;
			return;
		}
		m->p = p;
		m->cap = cap;
	}
	memcpy(m->p + m->len, s, n);
	m->len += n;
}

static int printable(unsigned char c)
{
	return c >= 0x20 && c < 0x7f;
}

/* a line NAME=value, with any byte of value outside printable ASCII written as %XX */
static void put_escaped(struct meta *m, const char *name, const char *v)
{
	static const char hex[] = "0123456789ABCDEF";
	put(m, name, strlen(name));
	put(m, "=", 1);
	for (const unsigned char *c = (const unsigned char *)v; *c; c++) {
		char e[3] = {'%', hex[*c >> 4], hex[*c & 15]};
		if (printable(*c))
			put(m, (const char *)c, 1);
		else
			put(m, e, 3);
	}
	put(m, "\n", 1);
}

/* a header name's characters (RFC 9110 tchar) */
static int token(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* 1: a line "name=" is there already */
static int has(const struct meta *m, const char *name, size_t n)
{
	for (size_t i = 0; i + n < m->len;) {
		if (!memcmp(m->p + i, name, n) && m->p[i + n] == '=')
			return 1;
		const char *nl = memchr(m->p + i, '\n', m->len - i);
		if (!nl)
			break;
		i = (size_t)(nl - m->p) + 1;
	}
	return 0;
}

/* one header as Http_<Name>, the name in Go's canonical form (X-Test, Content-Type) with dashes
 * as underscores; the first of several with one name wins, as the watchdog takes each header's
 * first value; headers with bytes outside printable ASCII are left out */
static enum MHD_Result header(void *cls, enum MHD_ValueKind kind, const char *key, size_t klen,
			      const char *value, size_t vlen)
{
	struct meta *m = cls;
	char name[128] = "Http_";
	size_t n = 5;
	(void)kind;
	if (!key || !value || klen == 0 || klen >= sizeof(name) - n)
		return MHD_YES;
	if (m->drop_auth && klen == 13 && !strncasecmp(key, "Authorization", 13))
		return MHD_YES;
	for (size_t i = 0; i < vlen; i++)
		if (!printable((unsigned char)value[i]))
			return MHD_YES;
	int upper = 1;
	for (size_t i = 0; i < klen; i++) {
		char c = key[i];
		if (!token((unsigned char)c))
			return MHD_YES;
		if (upper && c >= 'a' && c <= 'z')
			c = (char)(c - 'a' + 'A');
		else if (!upper && c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		upper = c == '-';
		name[n++] = c == '-' ? '_' : c;
	}
	if (has(m, name, n))
		return MHD_YES;
	put(m, name, n);
	put(m, "=", 1);
	put(m, value, vlen);
	put(m, "\n", 1);
	return MHD_YES;
}

char *srv_meta(const struct srv *s, struct srv_req *r, size_t *len)
{
	/* the management API's credentials never reach a function: on a route that asked for
	 * them, and where a client sent them unasked (a browser sends what it holds) */
	struct meta m = {.drop_auth = r->authed || auth_ok(s, r->conn)};
	/* the path after /function/NAME (or /async-function/NAME), as the gateway forwards it to
	 * the watchdog */
	size_t skip = strlen(r->route->path) + strlen(r->name);
	const char *rest = r->path && strlen(r->path) > skip ? r->path + skip : "/";
	put_escaped(&m, "Http_Method", r->method);
	put_escaped(&m, "Http_Path", rest);
	put_escaped(&m, "Http_Query", r->query ? r->query : "");
	MHD_get_connection_values_n(r->conn, MHD_HEADER_KIND, header, &m);
	if (m.oom || !m.p) {
		free(m.p);
		return NULL;
	}
	*len = m.len;
	return m.p;
}
