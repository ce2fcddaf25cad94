/* HTTP on libmicrohttpd: the route table, request bodies with limits, the daemon. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "server/srv_core.h"
#include "server/srv_spec.h"
#include "server/srv_auth.h"
#include "server/srv_cluster.h"
#include "server/srv_registry.h"
#include "server/srv_http.h"
#include "metrics/metrics.h"
#include "server/srv_secrets.h"
#include "server/srv_workers.h"

/* A connection's memory: its read buffer and the request's headers, which libmicrohttpd zeroes
 * for every request on it (32 KiB by default, 2 % of a warm request's CPU time at saturation).
 * 16 KiB takes headers of up to 15 KiB in all, as Node.js does; larger ones get 431. A body is
 * read through it in pieces, of any size. */
#define CONN_MEMORY (16 << 10)

#define EARLY_413_SLACK (1ULL << 20) /* read and drop up to this much past a limit, then reply */
/* a body without a length (chunked) past its limit is read and dropped up to this much, so that
 * an honest client sees the 413 when its body ends; then answered and closed, since it may never
 * end (the client may then see the connection reset before the 413) */
#define CHUNKED_DRAIN_MAX (64ULL << 20)

/* Who may call a route: everything under /system/ and the console (/ui) needs the management
 * credentials (when authentication is on); a route with a function's name and a rest (its
 * invocations) needs them when that function's deployment asks (ember.auth); the rest is open
 * (health, metrics). */
static const struct srv_route routes[] = {
    {"GET", "/healthz", ROUTE_EXACT, BODY_REQUEST, h_healthz},
    {"GET", "/readyz", ROUTE_EXACT, BODY_REQUEST, h_readyz},
    {"GET", "/system/info", ROUTE_EXACT, BODY_REQUEST, h_info},
    {"GET", "/metrics", ROUTE_EXACT, BODY_REQUEST, h_metrics},
    {"GET", "/system/functions", ROUTE_EXACT, BODY_REQUEST, h_list},
    /* a deployment may carry its files: as large as an image */
    {"POST", "/system/functions", ROUTE_EXACT, BODY_IMAGE, h_deploy},
    {"PUT", "/system/functions", ROUTE_EXACT, BODY_IMAGE, h_update},
    {"DELETE", "/system/functions", ROUTE_EXACT, BODY_REQUEST, h_delete},
    {"GET", "/system/function/*/history", ROUTE_NAME, BODY_REQUEST, h_history},
    {"GET", "/system/function/", ROUTE_NAME, BODY_REQUEST, h_get},
    {"GET", "/system/logs", ROUTE_EXACT, BODY_REQUEST, h_logs},
    {"GET", "/system/images", ROUTE_EXACT, BODY_REQUEST, h_image_list},
    {"PUT", "/system/images/", ROUTE_NAME, BODY_IMAGE, h_image_put},
    {"DELETE", "/system/images/", ROUTE_NAME, BODY_REQUEST, h_image_delete},
    {"GET", "/system/secrets", ROUTE_EXACT, BODY_REQUEST, h_secret_list},
    {"POST", "/system/secrets", ROUTE_EXACT, BODY_REQUEST, h_secret_create},
    {"PUT", "/system/secrets", ROUTE_EXACT, BODY_REQUEST, h_secret_update},
    {"DELETE", "/system/secrets", ROUTE_EXACT, BODY_REQUEST, h_secret_delete},
    {"GET", "/system/namespaces", ROUTE_EXACT, BODY_REQUEST, h_namespaces},
    {"GET", "/system/store", ROUTE_EXACT, BODY_REQUEST, h_store_get}, /* srv_cstore_http.c */
    {NULL, "/function/", ROUTE_NAME_REST, BODY_REQUEST, h_invoke},
    {"POST", "/async-function/", ROUTE_NAME_REST, BODY_REQUEST, h_async},
    {"GET", "/ui", ROUTE_EXACT, BODY_REQUEST, h_console},
    {"GET", "/ui/", ROUTE_NAME, BODY_REQUEST, h_console},
    {"POST", "/system/worker/sync", ROUTE_EXACT, BODY_REQUEST, h_worker_sync}, /* --workers */
};

/* 0: another path; 1: this path, name set; -1: this path with a bad name */
static int path_match(const struct srv_route *route, const char *url, char *name)
{
	/* a '*' in a ROUTE_NAME path stands for the name, followed by the rest of the path */
	const char *star = strchr(route->path, '*');
	size_t n = star ? (size_t)(star - route->path) : strlen(route->path);
	if (route->match == ROUTE_EXACT)
		return !strcmp(url, route->path) ||
		       (!strncmp(url, route->path, n) && url[n] == '/' && !url[n + 1]);
	if (strncmp(url, route->path, n))
		return 0;
	const char *p = url + n, *slash = strchr(p, '/');
	size_t len = slash ? (size_t)(slash - p) : strlen(p);
	if (star && (!slash || strcmp(slash, star + 1)))
		return 0; /* another path: the route without the rest judges it */
	if ((slash && route->match == ROUTE_NAME && !star) || len == 0 || len >= SRV_NAME_MAX)
		return -1;
	memcpy(name, p, len);
	name[len] = 0;
	return srv_name_ok(name) ? 1 : -1;
}

void srv_route(struct srv *s, struct srv_req *r, const char *url, int stopping, struct srv_early *e)
{
	int found = 0, bad = 0;
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]) && !r->route; i++) {
		int m = path_match(&routes[i], url, r->name);
		if (!m)
			continue;
		found = 1;
		/* HEAD is GET without the body (libmicrohttpd leaves it out) */
		const char *meth = strcmp(r->method, "HEAD") ? r->method : "GET";
		if (routes[i].method && strcmp(routes[i].method, meth))
			continue;
		r->route = &routes[i];
		bad = m < 0;
	}
	r->limit = r->route && r->route->body == BODY_IMAGE ? s->opt.max_image : s->opt.max_body;
	if (stopping)
		*e = (struct srv_early){503, "the server is shutting down"};
	else if (!found)
		*e = (struct srv_early){404, "no such route"};
	else if (!r->route)
		snprintf(e->msg, sizeof(e->msg), "method %s not allowed here", r->method),
		    e->status = 405;
	else if (bad)
		*e = (struct srv_early){
		    400, "names match [a-z0-9][a-z0-9-_.]{0,62} and contain no '..'"};
}

/* the request is read (or will not be): no read deadline while it is answered */
static enum MHD_Result reply_early(struct srv *s, struct srv_req *r, const struct srv_early *e)
{
	conn_phase(s, r->conn, CONN_HANDLING);
	if (e->status == 401)
		return auth_deny(r);
	return srv_reply_error(r, e->status, "%s", e->msg);
}

static int needs_auth(struct srv *s, const struct srv_req *r)
{
	if (!s->auth)
		return 0;
	if (!strncmp(r->route->path, "/system/", 8) || !strncmp(r->route->path, "/ui", 3))
		return 1;
	/* no deployment asks for it (the common case): no lookup, no lock */
	if (r->route->match != ROUTE_NAME_REST || !atomic_load(&s->auth_fns))
		return 0;
	struct srv_spec *sp = reg_spec(s, r->name);
	int need = sp && sp->require_auth;
	spec_put(sp);
	return need;
}

/* the raw URI, before libmicrohttpd takes the query off and decodes the path: the request starts
 * here, with the query string kept as it was sent */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
	conn_phase(cls, conn, CONN_REQUEST); /* it must be read whole within readTimeout */
	const struct srv *s = cls;
	struct srv_req *r = calloc(1, sizeof(*r));
	const char *q = strchr(uri, '?');
	/* the URI as sent: only --workers forwards it */
	if (r && (!(r->query = strdup(q ? q + 1 : "")) ||
		  (s->opt.workers > 1 && !(r->uri = strdup(uri))))) {
		free(r->query);
		free(r);
		r = NULL;
	}
	return r;
}

/* --workers: conn came to the internal socket (known by its descriptor, not by s->mhd_peer,
 * which its daemon's threads may use before MHD_start_daemon's value is stored) */
static int on_peer_socket(struct srv *s, struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *c =
	    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_DAEMON);
	const union MHD_DaemonInfo *d =
	    c ? MHD_get_daemon_info(c->daemon, MHD_DAEMON_INFO_LISTEN_FD) : NULL;
	return d && d->listen_fd == s->opt.peer_fd;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *data,
				  size_t *size, void **con_cls)
{
	struct srv *s = cls;
	struct srv_req *r = *con_cls;
	(void)version;
	if (!r || !r->conn) {
		if (!r && !(r = calloc(1, sizeof(*r))))
			return MHD_NO;
		*con_cls = r;
		if (!(r->path = strdup(url)))
			return MHD_NO;
		r->conn = conn;
		r->method = method;
		if (s->opt.workers > 1) /* another worker's: on its socket, with the run's key */
			r->internal = on_peer_socket(s, conn) && workers_key_ok(s, conn);
		r->t0 = srv_now();
		atomic_fetch_add(&s->active, 1);
		int stopping = atomic_load(&s->stopping);
		struct srv_early *e = &r->early;
		srv_route(s, r, url, stopping, e);
		/* before the body is read: an unauthenticated caller's body is dropped unread */
		if (!e->status && needs_auth(s, r)) {
			r->authed = auth_ok(s, conn);
			if (!r->authed)
				*e = (struct srv_early){401, "authentication required"};
			else if (auth_cross_site(conn, method))
				*e = (struct srv_early){403,
							"refused: another site's page sent this "
							"request with the credentials the browser "
							"holds"};
		}
		const char *cl =
		    MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
		const char *expect = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Expect");
		unsigned long long n = cl ? strtoull(cl, NULL, 10) : 0;
		if (!e->status && n > r->limit)
			snprintf(e->msg, sizeof(e->msg), "the body is larger than %llu bytes",
				 (unsigned long long)r->limit),
			    e->status = 413;
		/* a client that waits for 100 Continue, or would send far too much, hears now */
		if (e->status && (expect || n > r->limit + EARLY_413_SLACK))
			return reply_early(s, r, e);
		return MHD_YES;
	}
	struct srv_early *e = &r->early;
	if (*size) {
		if (!e->status && r->len + *size > r->limit) {
			snprintf(e->msg, sizeof(e->msg), "the body is larger than %llu bytes",
				 (unsigned long long)r->limit);
			e->status = 413;
		}

		if (!e->status && r->len + *size > r->cap) {
			size_t cap = r->cap ? r->cap : 16384;
			while (cap < r->len + *size)
				cap *= 2;
			uint8_t *b = realloc(r->body, cap);
			if (!b)
				return MHD_NO;
			r->body = b;
			r->cap = cap;
		}
		if (!e->status) {
			memcpy(r->body + r->len, data, *size);
			r->len += *size;
		} else
			r->dropped += *size;
		*size = 0;
		if (e->status && r->dropped > CHUNKED_DRAIN_MAX && !r->status)
			return reply_early(s, r, e);
		return MHD_YES;
	}
	if (e->status)
		return reply_early(s, r, e);
	conn_phase(s, conn, CONN_HANDLING);
	enum MHD_Result ret;
	/* --workers: to the function's owner, or summed over the workers */
	if (s->opt.workers > 1 && !r->internal && r->uri && workers_route(s, r, &ret))
		return ret;
	return r->route->fn(s, r);
}

static void on_done(void *cls, struct MHD_Connection *conn, void **con_cls,
		    enum MHD_RequestTerminationCode toe)
{
	struct srv *s = cls;
	struct srv_req *r = *con_cls;
	(void)toe;
	conn_phase(s, conn, CONN_DONE); /* the next request must start within connectionTimeout */
	if (!r)
		return;
	int counted = r->conn != NULL;		  /* on_request saw it (on_uri starts it without) */
	if (counted && r->status && !r->internal) /* counted by the worker that took it */
		metrics_http(s->metrics, r->route ? r->route->path : "other", r->method, r->status,
			     srv_now() - r->t0);
	free(r->body);
	free(r->path);
	free(r->query);
	free(r->uri);
	free(r);
	*con_cls = NULL;
	if (!counted)
		return;
	if (atomic_fetch_sub(&s->active, 1) != 1)
		return;
	/* the shutdown waits for 0 with mu held: taking it here wakes it, never too early */
	pthread_mutex_lock(&s->mu);
	pthread_cond_broadcast(&s->idle);
	pthread_mutex_unlock(&s->mu);
}

/* --workers: the daemon of the internal socket, where the other workers forward and ask; its
 * connections all come from loopback, so no per-address limit */
static int peer_start(struct srv *s, unsigned flags, char *err, size_t errlen)
{
	if (wk_start(s))
		return snprintf(err, errlen, "out of memory"), -1;
	s->mhd_peer = MHD_start_daemon(
	    flags, 0, NULL, NULL, on_request, s, MHD_OPTION_LISTEN_SOCKET, s->opt.peer_fd,
	    MHD_OPTION_CONNECTION_TIMEOUT, s->opt.conn_timeout_s, MHD_OPTION_CONNECTION_LIMIT,
	    s->opt.max_conns, MHD_OPTION_NOTIFY_CONNECTION, conn_notify, s,
	    MHD_OPTION_NOTIFY_COMPLETED, on_done, s, MHD_OPTION_URI_LOG_CALLBACK, on_uri, s,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_MEMORY, MHD_OPTION_END);
	if (!s->mhd_peer) {
		wk_stop(s);
		return snprintf(err, errlen, "cannot serve the other workers"), -1;
	}
	return 0;
}

int http_start(struct srv *s, char *err, size_t errlen)
{
	int fd = s->opt.listen_fd;
	if (fd <= 0 && srv_listen(s->opt.listen, &fd, err, errlen))
		return -1;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl)) {
		snprintf(err, errlen, "the listening socket: %s", strerror(errno));
		goto fail;
	}
	if (auth_listen_ok(s, (struct sockaddr *)&ss, err, errlen))
		goto fail;
	int v6 = ss.ss_family == AF_INET6;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
			 MHD_USE_POLL | MHD_USE_ITC | (v6 ? MHD_USE_IPv6 : 0);
	/* --workers: the internal socket first, so that the address never serves as a lone server
	 * (a restarted worker's queued connections are taken at once) */
	if (s->opt.workers > 1 && peer_start(s, flags & ~MHD_USE_IPv6, err, errlen))
		goto fail;
	errno = 0;
	s->mhd = MHD_start_daemon(
	    flags, 0, NULL, NULL, on_request, s, MHD_OPTION_LISTEN_SOCKET, fd,
	    MHD_OPTION_CONNECTION_TIMEOUT, s->opt.conn_timeout_s, MHD_OPTION_CONNECTION_LIMIT,
	    s->opt.max_conns, MHD_OPTION_PER_IP_CONNECTION_LIMIT, s->opt.max_conns_per_addr,
	    MHD_OPTION_NOTIFY_CONNECTION, conn_notify, s, MHD_OPTION_NOTIFY_COMPLETED, on_done, s,
	    MHD_OPTION_URI_LOG_CALLBACK, on_uri, s, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
	    (size_t)CONN_MEMORY, MHD_OPTION_END);
	if (!s->mhd) {
		snprintf(err, errlen, "cannot listen on %s: %s", s->opt.listen,
			 errno ? strerror(errno) : "libmicrohttpd failed");
		if (s->mhd_peer)
			MHD_stop_daemon(s->mhd_peer), s->mhd_peer = NULL, wk_stop(s);
		goto fail;
	}
	char host[INET6_ADDRSTRLEN] = "?";
	void *a = v6 ? (void *)&((struct sockaddr_in6 *)&ss)->sin6_addr
		     : (void *)&((struct sockaddr_in *)&ss)->sin_addr;
	inet_ntop(ss.ss_family, a, host, sizeof(host));
	unsigned port = ntohs(v6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
				 : ((struct sockaddr_in *)&ss)->sin_port);
	snprintf(s->address, sizeof(s->address), v6 ? "[%s]:%u" : "%s:%u", host, port);
	return 0;
fail:
	if (fd != s->opt.listen_fd) /* a socket given to us is the caller's to close */
		close(fd);
	return -1;
}
