/* Connections that read too slowly (slowloris): a deadline for each request, enforced by a thread.
 */
#include <stdlib.h>
#include <sys/socket.h>

#include "server/srv_core.h"
#include "server/srv_spec.h"
#include "server/srv_auth.h"

#define WATCH_INTERVAL_S 1

/* One connection, from libmicrohttpd's start notice to its close; in srv.conn_mu's list (its
 * phase is atomics that its own thread sets without the lock, in an order the watcher reads
 * back: handling, started, since). A request
 * must start (its request line) within connectionTimeout of the connection's start or of the
 * previous request's end, and be read whole (headers and body) within readTimeout of its
 * start; libmicrohttpd's own timeout only closes a connection that sends nothing at all, so a
 * client that trickles a byte a second would hold its thread for ever. Once the handler runs
 * (an invocation, a log follower) no deadline applies. */
struct srv_conn {
	struct srv_conn *prev, *next;
	int fd;
	_Atomic double since;	/* the connection's start or the last request's end */
	_Atomic double started; /* the current request's line arrived (0: none yet) */
	atomic_int handling;	/* its handler runs: no deadline */
};

static void unlink_conn(struct srv *s, struct srv_conn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
}

void conn_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
		 enum MHD_ConnectionNotificationCode toe)
{
	struct srv *s = cls;
	struct srv_conn *c = *socket_context;
	pthread_mutex_lock(&s->conn_mu);
	if (toe == MHD_CONNECTION_NOTIFY_STARTED && !c && (c = calloc(1, sizeof(*c)))) {
		const union MHD_ConnectionInfo *ci =
		    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		c->fd = ci ? ci->connect_fd : -1;
		c->since = srv_now();
		c->next = s->conns;
		if (s->conns)
			s->conns->prev = c;
		s->conns = c;
		*socket_context = c;
	} else if (toe == MHD_CONNECTION_NOTIFY_CLOSED && c) {
		unlink_conn(s, c);
		free(c);
		*socket_context = NULL;
	}
	pthread_mutex_unlock(&s->conn_mu);
}

/* the tracked connection of conn, or NULL */
static struct srv_conn *conn_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

void conn_phase(struct srv *s, struct MHD_Connection *conn, enum conn_phase phase)
{
	(void)s;
	struct srv_conn *c = conn_of(conn);
	if (!c)
		return;
	if (phase == CONN_REQUEST) {
		c->started = srv_now();
	} else if (phase == CONN_HANDLING) {
		c->handling = 1;
	} else { /* handling cleared last: a watcher that sees it clear sees the rest too */
		c->since = srv_now();
		c->started = 0;
		c->handling = 0;
	}
}

/* shuts down the connections past their deadline: libmicrohttpd's thread then sees the end of
 * the stream and closes it */
static void cut_slow(struct srv *s)
{
	double now = srv_now();
	pthread_mutex_lock(&s->conn_mu);
	for (struct srv_conn *c = s->conns; c; c = c->next) {
		if (c->handling)
			continue;
		double started = c->started, since = c->since;
		int late = started ? now - started > s->opt.read_timeout_s
				   : now - since > s->opt.conn_timeout_s;
		if (late && c->fd >= 0) {
			shutdown(c->fd, SHUT_RDWR);
			c->fd = -1; /* once */
			atomic_fetch_add(&s->conns_cut, 1);
		}
	}
	pthread_mutex_unlock(&s->conn_mu);
}

static void *watch(void *p)
{
	struct srv *s = p;
	pthread_mutex_lock(&s->mu);
	while (!s->stopping) {
		struct timespec ts;
		base_deadline(&ts, WATCH_INTERVAL_S);
		pthread_cond_timedwait(&s->reaper_cv, &s->mu, &ts);
		pthread_mutex_unlock(&s->mu);
		cut_slow(s);
		pthread_mutex_lock(&s->mu);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

int conn_watch_start(struct srv *s)
{
	if (pthread_create(&s->conn_watch, NULL, watch, s))
		return -1;
	s->conn_watch_started = 1;
	return 0;
}

void conn_watch_stop(struct srv *s)
{
	if (s->conn_watch_started)
		pthread_join(s->conn_watch, NULL);
	s->conn_watch_started = 0;
}
