/* ember serve --workers N inside one worker: placement, forwarding to a function's owner, the
 * answers summed over the workers, the re-read of a deployment another worker changed. */
#ifndef EMBER_SRV_WORKERS_H
#define EMBER_SRV_WORKERS_H

#include <curl/curl.h>
#include <jansson.h>

#include "server/srv_http.h"

#define WORKERS_MAX   64
#define WK_KEY_HEADER "X-Ember-Worker-Key" /* srv_options.peer_key, on a worker's requests */

/* srv_workers.c */
/* the worker that owns name: a hash of it modulo the workers (0 when alone) */
unsigned workers_owner(const struct srv *s, const char *name);
int workers_mine(const struct srv *s, const char *name); /* 1 when alone */
/* name's calls run in this worker now: it owns name, or name's owner is down */
int workers_here(const struct srv *s, const char *name);
/* worker w serves (its pid), or 0 while it is down (dead, restarting, not started yet) */
int workers_up(const struct srv *s, unsigned w);
/* 1 when conn, on this worker's internal socket, carries this run's peer_key: another worker's */
int workers_key_ok(const struct srv *s, struct MHD_Connection *conn);
/* Before a request's handler, in a worker (not for a request another worker sent): 1 when it
 * was answered here (forwarded to the owner, or summed over the workers; *ret the result), 0
 * when its own handler answers it. */
int workers_route(struct srv *s, struct srv_req *r, enum MHD_Result *ret);
/* after a change here, the other workers follow: what "name" (a deployment: they re-read it
 * from the state folder) or "secret" (updated: they load its users again) */
void workers_notify(struct srv *s, const char *what, const char *name);
/* POST /system/worker/sync?name=NAME or ?secret=NAME, from another worker only */
enum MHD_Result h_worker_sync(struct srv *s, struct srv_req *r);
/* the reaper's, every second: the functions this worker loaded while their owner was down,
 * unloaded once the owner serves again and they are idle, so their virtines stay in one worker */
void workers_tidy(struct srv *s);
/* this worker in /system/info: {"index", "pid", "up", "functions" (deployed, as it knows them),
 * "loaded": [names of the functions it has loaded]} */
json_t *workers_self(struct srv *s);

/* srv_workers_call.c: one request to another worker's internal socket */
struct wk_answer {
	long status;
	char *body, *head; /* the body; the header lines as received */
	size_t len, cap, hlen, hcap;
	size_t max; /* the body's bound: a longer answer fails */
	int sends;  /* times libcurl was about to send the request */
};
enum { WK_OK, WK_DOWN, WK_FAILED }; /* answered; never reached it; reached it, no answer */
/* hdrs: a client's request's header lines, forwarded as they are (the key is appended to
 * them); NULL: this worker's own request, which gets the management credentials. Every request
 * carries WK_KEY_HEADER. timeout_ms 0: none. WK_OK and *a
 * (wk_answer_free it), or another result with err */
int wk_call(struct srv *s, unsigned w, const char *method, const char *uri, struct curl_slist *hdrs,
	    const void *body, size_t len, long timeout_ms, struct wk_answer *a, char *err,
	    size_t errlen);
void wk_answer_free(struct wk_answer *a);
int wk_start(struct srv *s); /* the handles' pools: 0, or -1 out of memory */
void wk_stop(struct srv *s);

/* srv_workers_sum.c: the routes answered for all the workers */
int wk_sum_metrics(struct srv *s, struct srv_req *r, enum MHD_Result *ret);
int wk_sum_list(struct srv *s, struct srv_req *r, enum MHD_Result *ret);
int wk_sum_one(struct srv *s, struct srv_req *r, enum MHD_Result *ret);
int wk_ready(struct srv *s, struct srv_req *r, enum MHD_Result *ret);
int wk_info(struct srv *s, struct srv_req *r, enum MHD_Result *ret);
/* srv_workers_merge.c: Prometheus texts summed, series by series (the families kept whole) */
char *wk_merge_metrics(char **texts, size_t n, size_t *len);

#endif
