/* HTTP inside the server: requests, the route table's entries, replies, and the handlers it names.
 */
#ifndef EMBER_SRV_HTTP_H
#define EMBER_SRV_HTTP_H

#include <jansson.h>
#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

#include "server/srv_core.h"

/* srv_routes.c: requests and routes; srv_reply.c: replies */
struct srv_req;
typedef enum MHD_Result (*srv_handler)(struct srv *s, struct srv_req *r);
struct srv_route {
	const char *method; /* NULL: any */
	const char *path;   /* exact, or the part before the name ('*' the name, then the rest) */
	int match;	    /* ROUTE_EXACT, ROUTE_NAME or ROUTE_NAME_REST */
	int body;	    /* BODY_REQUEST or BODY_IMAGE: which limit applies */
	srv_handler fn;
};
enum { ROUTE_EXACT, ROUTE_NAME, ROUTE_NAME_REST };
enum { BODY_REQUEST, BODY_IMAGE };
/* a request answered without its handler (bad route, too large): what to answer */
struct srv_early {
	unsigned status;
	char msg[SRV_ERR_MAX];
};
struct srv_req {
	struct MHD_Connection *conn;
	struct srv_early early;
	const struct srv_route *route;
	const char *method;
	char name[SRV_NAME_MAX];
	char *path;   /* the URL's path, percent-decoded */
	char *query;  /* the query string as sent, without the '?' ("" when none) */
	char *uri;    /* the path and query as sent (forwarded so to another worker) */
	int internal; /* sent by another worker of ember serve --workers, to its internal socket */
	uint8_t *body;
	size_t len, cap;
	uint64_t limit;
	uint64_t dropped; /* body bytes read and dropped after an early error */
	int too_large;
	unsigned status; /* of the reply queued (0: none yet) */
	int authed;	 /* the route needed the credentials, and they were given */
	double t0;	 /* when its headers arrived */
};
struct srv_header {
	const char *name, *value;
};
enum MHD_Result srv_reply(struct srv_req *r, unsigned status, const char *ctype, void *buf,
			  size_t len, int take, const struct srv_header *hdrs, size_t nhdrs);
enum MHD_Result srv_reply_json(struct srv_req *r, unsigned status, json_t *j);
enum MHD_Result srv_reply_error(struct srv_req *r, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* the request body as JSON, or NULL after replying 400 (*ret holds the reply's result) */
json_t *srv_body_json(struct srv_req *r, enum MHD_Result *ret);
int http_start(struct srv *s, char *err, size_t errlen);
/* The route of a request (r->method set) to the (decoded) url: r->route, r->name and r->limit
 * set; e->status (and its message) set when it is answered early: 404, 405, 400 for a bad name,
 * 503 when stopping. */
void srv_route(struct srv *s, struct srv_req *r, const char *url, int stopping,
	       struct srv_early *e);

/* the handlers */
enum MHD_Result h_healthz(struct srv *s, struct srv_req *r);
enum MHD_Result h_readyz(struct srv *s, struct srv_req *r);
enum MHD_Result h_info(struct srv *s, struct srv_req *r);
enum MHD_Result h_metrics(struct srv *s, struct srv_req *r);
enum MHD_Result h_list(struct srv *s, struct srv_req *r);
enum MHD_Result h_get(struct srv *s, struct srv_req *r);
enum MHD_Result h_deploy(struct srv *s, struct srv_req *r);
enum MHD_Result h_update(struct srv *s, struct srv_req *r);
enum MHD_Result h_delete(struct srv *s, struct srv_req *r);
enum MHD_Result h_image_put(struct srv *s, struct srv_req *r);
enum MHD_Result h_image_delete(struct srv *s, struct srv_req *r);
enum MHD_Result h_image_list(struct srv *s, struct srv_req *r);
enum MHD_Result h_invoke(struct srv *s, struct srv_req *r);
enum MHD_Result h_logs(struct srv *s, struct srv_req *r);
enum MHD_Result h_async(struct srv *s, struct srv_req *r);
enum MHD_Result h_history(struct srv *s, struct srv_req *r); /* metrics_history_route.c */
enum MHD_Result h_console(struct srv *s, struct srv_req *r); /* srv_console.c: GET /ui/ */
json_t *srv_info(struct srv *s); /* srv_system.c: what GET /system/info answers */

#endif
