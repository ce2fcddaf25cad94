/* POST /async-function/NAME: accepted at once (202 and X-Call-Id) once it is on disk, then run
 * from a bounded queue by a few worker threads, its result POSTed to X-Callback-Url. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "async/async.h"
#include "server/srv_core.h"
#include "server/srv_spec.h"
#include "server/srv_registry.h"
#include "server/srv_http.h"
#include "server/srv_invoke.h"

#define DEFAULT_WORKERS 4
#define DEFAULT_QUEUE	256

struct async_node {
	uint64_t seq;
	struct async_node *next;
};

struct srv_async {
	pthread_mutex_t mu;
	pthread_cond_t work; /* a call was queued, or the server stops */
	pthread_cond_t stop; /* the server stops (wakes naps) */
	pthread_cond_t idle; /* a worker finished a call */
	struct async_node *head, *tail;
	size_t depth, reserved, cap; /* queued; places held by calls being written */
	unsigned running, nthreads;
	pthread_t *threads;
	int stopping;
	uint64_t next_seq;
	uint64_t accepted, completed, rejected, callbacks_failed;
};

/* with q->mu held */
static void push(struct srv_async *q, struct async_node *n)
{
	n->next = NULL;
	if (q->tail)
		q->tail->next = n;
	else
		q->head = n;
	q->tail = n;
	q->depth++;
}

/* one call from disk: a CB_ code, or -1 when its file could not be read (it is set aside) */
static int run_job(struct srv *s, uint64_t seq)
{
	struct srv_job j;
	struct srv_answer a;
	char err[SRV_ERR_MAX];
	if (job_read(s, seq, &j, err, sizeof(err))) {
		srv_log(s, "error",
			"async call file %016" PRIx64
			".call is unreadable (%s): kept as %016" PRIx64 ".call.bad",
			seq, err, seq);
		job_set_aside(s, seq);
		return -1;
	}
	double t0 = srv_now();
	/* an async call waits for the function's capacity, however long its own queue: the async
	 * queue is the bound, and a 429 would only be posted to the callback */
	srv_invoke_call(s, j.name, j.id, j.body, j.len, j.meta, j.meta_len, 1, &a);
	double took = srv_now() - t0;
	int rc = j.callback ? callback_post(s, &j, &a, took) : CB_DELIVERED;
	if (a.owned)
		free(a.body);
	/* a callback abandoned by a shutdown: the call stays on disk and runs again */
	if (rc != CB_STOPPED)
		job_remove(s, seq);
	job_free(&j);
	return rc;
}

static void *worker(void *p)
{
	struct srv *s = p;
	struct srv_async *q = s->async;
	pthread_mutex_lock(&q->mu);
	for (;;) {
		while (!q->stopping && !q->head)
			pthread_cond_wait(&q->work, &q->mu);
		if (q->stopping)
			break;
		struct async_node *n = q->head;
		if (!(q->head = n->next))
			q->tail = NULL;
		q->depth--;
		q->running++;
		pthread_mutex_unlock(&q->mu);
		int rc = run_job(s, n->seq);
		free(n);
		pthread_mutex_lock(&q->mu);
		q->running--;
		q->completed += rc == CB_DELIVERED || rc == CB_FAILED;
		q->callbacks_failed += rc == CB_FAILED;
		pthread_cond_broadcast(&q->idle);
	}
	pthread_mutex_unlock(&q->mu);
	return NULL;
}

int async_init(struct srv *s, char *err, size_t errlen)
{
	struct srv_async *q = calloc(1, sizeof(*q));
	if (!q)
		return snprintf(err, errlen, "out of memory"), -1;
	if (callback_global_init()) {
		free(q);
		return snprintf(err, errlen, "cannot initialise libcurl"), -1;
	}
	pthread_mutex_init(&q->mu, NULL);
	base_cond_init(&q->work);
	base_cond_init(&q->stop);
	base_cond_init(&q->idle);
	q->cap = s->opt.async_queue ? s->opt.async_queue : DEFAULT_QUEUE;
	s->async = q;
	/* the calls accepted before a restart, oldest first; they may exceed the queue's size */
	uint64_t *seqs;
	size_t n;
	if (job_list(s, &seqs, &n))
		srv_log(s, "error", "cannot read %s/%s: async calls from before are not run",
			s->state, s->async_dir);
	for (size_t i = 0; i < n; i++) {
		struct async_node *node = malloc(sizeof(*node));
		if (!node) {
			srv_log(s, "error", "out of memory: %zu async calls stay on disk", n - i);
			break;
		}
		node->seq = seqs[i];
		push(q, node);
		q->next_seq = seqs[i] + 1;
	}
	free(seqs);
	if (q->depth)
		srv_log(s, "info", "%zu async calls accepted before the restart are queued again",
			q->depth);
	return 0;
}

int async_run(struct srv *s, char *err, size_t errlen)
{
	struct srv_async *q = s->async;
	unsigned want = s->opt.async_workers ? s->opt.async_workers : DEFAULT_WORKERS;
	if (!(q->threads = calloc(want, sizeof(*q->threads))))
		return snprintf(err, errlen, "out of memory"), -1;
	while (q->nthreads < want && !pthread_create(&q->threads[q->nthreads], NULL, worker, s))
		q->nthreads++;
	if (!q->nthreads)
		return snprintf(err, errlen, "cannot start the async workers"), -1;
	if (q->nthreads < want)
		srv_log(s, "warning", "only %u of %u async workers could start", q->nthreads, want);
	return 0;
}

void async_stop(struct srv *s)
{
	struct srv_async *q = s->async;
	if (!q)
		return;
	pthread_mutex_lock(&q->mu);
	q->stopping = 1;
	pthread_cond_broadcast(&q->work);
	pthread_cond_broadcast(&q->stop);
	pthread_mutex_unlock(&q->mu);
}

unsigned async_wait(struct srv *s, const struct timespec *deadline)
{
	struct srv_async *q = s->async;
	if (!q)
		return 0;
	pthread_mutex_lock(&q->mu);
	while (q->running && pthread_cond_timedwait(&q->idle, &q->mu, deadline) != ETIMEDOUT)
		;
	unsigned left = q->running;
	pthread_mutex_unlock(&q->mu);
	if (left)
		return left;
	for (unsigned i = 0; i < q->nthreads; i++)
		pthread_join(q->threads[i], NULL);
	q->nthreads = 0;
	return 0;
}

void async_free(struct srv *s)
{
	struct srv_async *q = s->async;
	if (!q)
		return;
	while (q->head) {
		struct async_node *n = q->head;
		q->head = n->next;
		free(n);
	}
	free(q->threads);
	pthread_cond_destroy(&q->work);
	pthread_cond_destroy(&q->stop);
	pthread_cond_destroy(&q->idle);
	pthread_mutex_destroy(&q->mu);
	callback_global_free();
	free(q);
	s->async = NULL;
}

int async_nap(struct srv *s, double secs)
{
	struct srv_async *q = s->async;
	struct timespec ts;
	base_deadline(&ts, secs);
	pthread_mutex_lock(&q->mu);
	while (!q->stopping && pthread_cond_timedwait(&q->stop, &q->mu, &ts) != ETIMEDOUT)
		;
	int stopping = q->stopping;
	pthread_mutex_unlock(&q->mu);
	return stopping ? -1 : 0;
}

void async_gauges(struct srv *s, struct async_gauges *g)
{
	struct srv_async *q = s->async;
	pthread_mutex_lock(&q->mu);
	*g = (struct async_gauges){q->depth,	 q->running,  q->accepted,
				   q->completed, q->rejected, q->callbacks_failed};
	pthread_mutex_unlock(&q->mu);
}

/* a place in the queue and a sequence number for a call about to be written; NULL: full */
static struct async_node *reserve(struct srv_async *q)
{
	struct async_node *n = malloc(sizeof(*n));
	pthread_mutex_lock(&q->mu);
	if (n && q->depth + q->reserved < q->cap) {
		q->reserved++;
		n->seq = q->next_seq++;
	} else {
		q->rejected += n != NULL;
		free(n);
		n = NULL;
	}
	pthread_mutex_unlock(&q->mu);
	return n;
}

/* the call reserved as n is on disk (queued: ok) or could not be written (its place freed) */
static void settle(struct srv_async *q, struct async_node *n, int ok)
{
	pthread_mutex_lock(&q->mu);
	q->reserved--;
	if (ok) {
		push(q, n);
		q->accepted++;
		pthread_cond_signal(&q->work);
	} else {
		free(n);
	}
	pthread_mutex_unlock(&q->mu);
}

/* the request's metadata, with Http_X_Call_Id added when the caller sent none, as the
 * gateway adds X-Call-Id to the request it queues */
static char *call_meta(const struct srv *s, struct srv_req *r, const char *id, size_t *len)
{
	char *m = srv_meta(s, r, len);
	if (!m || MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Call-Id"))
		return m;
	size_t extra = strlen("Http_X_Call_Id=\n") + strlen(id);
	char *p = realloc(m, *len + extra + 1);
	if (!p) {
		free(m);
		return NULL;
	}
	snprintf(p + *len, extra + 1, "Http_X_Call_Id=%s\n", id);
	*len += extra;
	return p;
}

enum MHD_Result h_async(struct srv *s, struct srv_req *r)
{
	char err[SRV_ERR_MAX];
	struct srv_spec *sp = reg_spec(s, r->name);
	if (!sp)
		return srv_reply_error(r, 404, "function '%s' not found", r->name);
	spec_put(sp);
	const char *cb = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Callback-Url");
	if (cb && callback_url_check(cb, err, sizeof(err)))
		return srv_reply_error(r, 400, "X-Callback-Url: %s", err);
	struct async_node *n = reserve(s->async);
	if (!n)
		return srv_reply_error(r, 429,
				       "the async queue is full (%zu calls wait); try again later",
				       s->async->cap);
	struct srv_job j = {.seq = n->seq, .callback = (char *)cb, .body = r->body, .len = r->len};
	snprintf(j.name, sizeof(j.name), "%s", r->name);
	srv_req_call_id(r, j.id, sizeof(j.id));
	j.meta = call_meta(s, r, j.id, &j.meta_len);
	int rc = j.meta ? job_write(s, &j, err, sizeof(err)) : -1;
	if (!j.meta)
		snprintf(err, sizeof(err), "out of memory");
	free(j.meta);
	settle(s->async, n, rc == 0);
	if (rc) {
		srv_log(s, "error", "async call %s of %s not accepted: %s", j.id, j.name, err);
		return srv_reply_error(r, 500, "cannot queue the call: %s", err);
	}
	struct srv_header h = {"X-Call-Id", j.id};
	return srv_reply(r, 202, NULL, NULL, 0, 0, &h, 1);
}
