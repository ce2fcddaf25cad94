/* The response head a function wrote on fd 4: its HTTP status and headers, checked. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "server/srv_http.h"
#include "server/srv_invoke.h"

/* what the server says itself: the transport's framing, Ember's own headers, and the
 * authentication challenges (a function's 401 with the server's realm would have a browser send
 * it the credentials it holds for the management API) */
static const char *const owned[] = {
    "Content-Length",
    "Transfer-Encoding",
    "Connection",
    "Keep-Alive",
    "Upgrade",
    "Trailer",
    "Date",
    "X-Call-Id",
    "X-Duration-Seconds",
    "WWW-Authenticate",
    "Proxy-Authenticate",
    "Authentication-Info",
};

static int is_owned(const char *name)
{
	if (!strncasecmp(name, "X-Ember-", 8))
		return 1;
	for (size_t i = 0; i < sizeof(owned) / sizeof(owned[0]); i++)
		if (!strcasecmp(name, owned[i]))
			return 1;
	return 0;
}

/* RFC 9110's token characters */
static int is_token(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || strchr("!#$%&'*+-.^_`|~", *s)))
			return 0;
	return 1;
}

/* a field value: visible characters, spaces and tabs */
static int is_value(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 && *s != '\t')
			return 0;
		else if (*s == 0x7f)
			return 0;
	return 1;
}

/* "Status: 201" or "Status: 201 Created": the code from 200 to 599 (no interim 1xx) */
static int parse_status(const char *v, unsigned *out)
{
	if (strlen(v) < 3 || v[0] < '2' || v[0] > '5' || v[1] < '0' || v[1] > '9' || v[2] < '0' ||
	    v[2] > '9' || (v[3] && v[3] != ' '))
		return -1;
	*out = (unsigned)((v[0] - '0') * 100 + (v[1] - '0') * 10 + (v[2] - '0'));
	return 0;
}

int srv_head_apply(struct srv_answer *a, const uint8_t *head, size_t len, char *err, size_t errlen)
{
	if (len > EMBER_HEAD_MAX)
		return snprintf(err, errlen, "longer than %d bytes", EMBER_HEAD_MAX), -1;
	memcpy(a->head, head, len);
	a->head[len] = 0;
	if (memchr(a->head, 0, len))
		return snprintf(err, errlen, "it holds a NUL byte"), -1;
	unsigned status = a->status;
	const char *ctype = a->ctype;
	struct srv_header h[SRV_HEAD_HEADERS];
	size_t nh = 0;
	int line = 0;
	for (char *p = a->head, *next; p && *p; p = next) {
		line++;
		next = strchr(p, '\n');
		if (next)
			*next++ = 0;
		size_t n = strlen(p);
		if (n && p[n - 1] == '\r')
			p[--n] = 0;
		if (!n)
			continue;
		char *colon = strchr(p, ':');
		if (!colon)
			return snprintf(err, errlen, "line %d is no \"Name: value\"", line), -1;
		*colon = 0;
		char *v = colon + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		if (!is_token(p) || !is_value(v))
			return snprintf(err, errlen, "line %d: a bad header name or value", line),
			       -1;
		if (!strcasecmp(p, "Status")) {
			if (parse_status(v, &status))
				return snprintf(err, errlen,
						"line %d: Status must be a code from 200 to 599",
						line),
				       -1;
		} else if (!strcasecmp(p, "Content-Type")) {
			ctype = v;
		} else if (is_owned(p)) {
			return snprintf(err, errlen, "line %d: %s is the server's to send", line,
					p),
			       -1;
		} else if (nh == SRV_HEAD_HEADERS) {
			return snprintf(err, errlen, "more than %d headers", SRV_HEAD_HEADERS), -1;
		} else {
			h[nh++] = (struct srv_header){p, v};
		}
	}
	a->status = status;
	a->ctype = ctype;
	memcpy(a->h + a->nh, h, nh * sizeof(h[0]));
	a->nh += nh;
	return 0;
}
