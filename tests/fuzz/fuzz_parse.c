/* The small parsers: sizes (base_parse_size, src/base) and names (srv_name_ok)
 * against reference parsers written here from their documented grammar, durations
 * (srv_parse_duration) as strings and numbers, and the router's path matching (srv_route).
 *   input: WHICH TEXT... (0 size, 1 duration string, 2 duration number: 8 bytes, 3 name,
 *   4 route: METHOD (a byte) and the path) */
#include <math.h>
#include <string.h>

#include "common.h"
#include "server/srv_core.h"
#include "server/srv_spec.h"
#include "server/srv_http.h"

/* "4096", "128M", "128Mi", "128MB", "128MiB": digits, then K/M/G (either case) and i, B or iB */
FZ_UNTRACED static int ref_size(const char *s, uint64_t *out)
{
	static const char units[] = "KkMmGg";
	unsigned __int128 v = 0;
	size_t i = 0;
	for (; s[i] >= '0' && s[i] <= '9'; i++)
		if ((v = v * 10 + (unsigned)(s[i] - '0')) > UINT64_MAX)
			return -1;
	const char *u = s[i] ? strchr(units, s[i]) : NULL;
	if (i == 0 || (s[i] && !u))
		return -1;
	int shift = u ? 10 * (1 + (int)(u - units) / 2) : 0;
	const char *rest = s + i + (u != NULL);
	if (*rest && strcmp(rest, "i") && strcmp(rest, "B") && strcmp(rest, "iB"))
		return -1;
	if ((v << shift) > UINT64_MAX)
		return -1;
	*out = (uint64_t)(v << shift);
	return 0;
}

/* [a-z0-9][a-z0-9-_.]{0,62}, without ".." */
FZ_UNTRACED static int ref_name(const char *s)
{
	size_t n = strlen(s);
	if (n < 1 || n > 63 || strstr(s, ".."))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
		      (i > 0 && strchr("-_.", s[i]))))
			return 0;
	return 1;
}

static void duration(json_t *v)
{
	double d = -1;
	if (v && srv_parse_duration(v, &d) == 0)
		FZ_CHECK(isfinite(d) && d >= 0 && d <= 86400.0 * 365, "duration %g", d);
	json_decref(v);
}

/* what the router decided holds together with the path */
FZ_UNTRACED static void check_route(const struct srv *s, const struct srv_req *r, const char *url,
				    const struct srv_early *e)
{
	const struct srv_route *route = r->route;
	FZ_CHECK(e->status == 0 || e->status == 400 || e->status == 404 || e->status == 405,
		 "status %u", e->status);
	FZ_CHECK(!e->status || e->msg[0], "status %u without a message", e->status);
	FZ_CHECK(!route == (e->status == 404 || e->status == 405), "route %p, status %u",
		 (void *)route, e->status);
	if (!route)
		return;
	const char *meth = strcmp(r->method, "HEAD") ? r->method : "GET";
	/* a '*' stands for the name, the rest of the path after it */
	const char *star = strchr(route->path, '*');
	size_t n = star ? (size_t)(star - route->path) : strlen(route->path);
	FZ_CHECK(!route->method || !strcmp(route->method, meth), "%s routed to %s", r->method,
		 route->method);
	FZ_CHECK(r->limit == (route->body == BODY_IMAGE ? s->opt.max_image : s->opt.max_body),
		 "limit %lu", r->limit);
	if (route->match == ROUTE_EXACT) {
		FZ_CHECK(!strncmp(url, route->path, n) && (!url[n] || !strcmp(url + n, "/")),
			 "'%s' routed to %s", url, route->path);
		return;
	}
	FZ_CHECK(!strncmp(url, route->path, n), "'%s' routed to %s", url, route->path);
	if (e->status == 400)
		return;
	size_t k = strlen(r->name);
	FZ_CHECK(ref_name(r->name) && !strncmp(url + n, r->name, k) &&
		     (star ? !strcmp(url + n + k, star + 1)
			   : !url[n + k] || (route->match == ROUTE_NAME_REST && url[n + k] == '/')),
		 "'%s' routed to %s with name '%s'", url, route->path, r->name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const methods[] = {"GET", "POST", "PUT", "DELETE", "HEAD", "PATCH"};
	static struct srv s = {.opt = {.max_body = 6 << 20, .max_image = 128 << 20}};
	char text[4096];
	struct fz f = {data, size};
	uint8_t which = fz_u8(&f), method = which >> 4;
	size_t n;
	const uint8_t *p = fz_bytes(&f, sizeof(text) - 1, &n);
	memcpy(text, p, n);
	text[n] = 0;
	uint64_t got, want;
	switch (which & 15) {
	case 0: {
		int rc = base_parse_size(text, &got), ref = ref_size(text, &want);
		FZ_CHECK(rc == ref && (rc || got == want), "'%s': %d %lu, expected %d %lu", text,
			 rc, got, ref, want);
		break;
	}
	case 1:
		duration(json_stringn_nocheck(text, strlen(text)));
		break;
	case 2: {
		double d = 0;
		memcpy(&d, text, n < sizeof(d) ? n : sizeof(d));
		duration(json_real(d));
		duration(json_integer((json_int_t)(n ? (int8_t)text[0] : 0) * 1000));
		break;
	}
	case 3:
		FZ_CHECK(srv_name_ok(text) == ref_name(text), "'%s'", text);
		break;
	case 4: {
		struct srv_req r;
		struct srv_early e;
		memset(&r, 0, sizeof(r));
		memset(&e, 0, sizeof(e));
		r.method = methods[method % (sizeof(methods) / sizeof(methods[0]))];
		srv_route(&s, &r, text, 0, &e);
		check_route(&s, &r, text, &e);
		break;
	}
	}
	return 0;
}
