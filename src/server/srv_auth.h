/* Who may call and how long they may take: HTTP basic authentication, slow connections. */
#ifndef EMBER_SRV_AUTH_H
#define EMBER_SRV_AUTH_H

#include <microhttpd.h>
#include <stddef.h>

#include "server/srv_core.h"

/* srv_auth.c: HTTP basic authentication */
struct srv_req;
int auth_init(struct srv *s, char *err, size_t errlen); /* reads or generates the credentials */
int auth_ok(const struct srv *s, struct MHD_Connection *conn);
enum MHD_Result auth_deny(struct srv_req *r); /* 401 with WWW-Authenticate */
/* 1: a browser sent this request (not GET or HEAD) for another site's page */
int auth_cross_site(struct MHD_Connection *conn, const char *method);
/* refuses an address other than loopback when authentication is off and not --insecure */
struct sockaddr;
int auth_listen_ok(const struct srv *s, const struct sockaddr *sa, char *err, size_t errlen);

/* srv_conn.c: connections that read too slowly (slowloris) */
enum conn_phase { CONN_REQUEST, CONN_HANDLING, CONN_DONE };
void conn_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
		 enum MHD_ConnectionNotificationCode toe); /* MHD_OPTION_NOTIFY_CONNECTION */
/* a request's line arrived, its handler (or an early reply) runs, it is done */
void conn_phase(struct srv *s, struct MHD_Connection *conn, enum conn_phase phase);
int conn_watch_start(struct srv *s); /* the thread that enforces the deadlines */
void conn_watch_stop(struct srv *s); /* after stopping is set and reaper_cv broadcast */

#endif
