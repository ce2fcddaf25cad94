/* Async invocations inside the server: the queue, its calls on disk and their callbacks. */
#ifndef EMBER_SRV_ASYNC_H
#define EMBER_SRV_ASYNC_H

#include <time.h>

#include "server/srv_core.h"
#include "server/srv_invoke.h"

/* One accepted call, as kept in STATE/async/<seq>.call until it is done. */
struct srv_job {
	uint64_t seq;
	char id[SRV_CALL_ID_MAX];
	char name[SRV_NAME_MAX];
	char *callback; /* NULL: none */
	char *meta;	/* the request's metadata, captured when it was accepted */
	size_t meta_len;
	uint8_t *body;
	size_t len;
};

/* async.c: the queue and its workers */
int async_init(struct srv *s, char *err, size_t errlen); /* the queue, with the calls on disk */
int async_run(struct srv *s, char *err, size_t errlen);	 /* starts the workers */
void async_stop(struct srv *s); /* the workers take no new call; the queue stays on disk */
/* Waits until deadline (CLOCK_MONOTONIC) for the calls running; returns how many still run. */
unsigned async_wait(struct srv *s, const struct timespec *deadline);
void async_free(struct srv *s); /* after async_wait returned 0 */
/* Sleeps secs unless the server stops meanwhile: 0 slept, -1 stopping. */
int async_nap(struct srv *s, double secs);
struct async_gauges {
	uint64_t depth, running, accepted, completed, rejected, callbacks_failed;
};
void async_gauges(struct srv *s, struct async_gauges *g);

/* async_store.c: the calls on disk, written atomically and fsynced before the 202 */
int job_write(const struct srv *s, const struct srv_job *j, char *err, size_t errlen);
int job_read(const struct srv *s, uint64_t seq, struct srv_job *j, char *err, size_t errlen);
void job_free(struct srv_job *j);
void job_remove(const struct srv *s, uint64_t seq);
void job_set_aside(const struct srv *s, uint64_t seq); /* unreadable: renamed .bad, kept */
/* the calls in STATE/async, oldest first (malloc'd); -1 when the folder cannot be read */
int job_list(const struct srv *s, uint64_t **seqs, size_t *n);

/* async_callback.c: the result POSTed to X-Callback-Url, as OpenFaaS's queue worker posts it */
enum { CB_DELIVERED, CB_FAILED, CB_STOPPED };
/* 0 when url is an http or https URL with a host; else -1 and why */
int callback_url_check(const char *url, char *err, size_t errlen);
/* Posts a (the answer to j, which took seconds) to j->callback, with retries: CB_DELIVERED,
 * CB_FAILED (logged, dropped) or CB_STOPPED (the server stopped between two tries). */
int callback_post(struct srv *s, const struct srv_job *j, const struct srv_answer *a,
		  double seconds);
int callback_global_init(void);
void callback_global_free(void);

#endif
