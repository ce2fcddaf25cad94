/* One request to another worker of ember serve --workers over its internal socket (loopback),
 * with libcurl: handles kept per worker, so that their connections are used again. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/srv_cluster.h"
#include "server/srv_core.h"
#include "server/srv_workers.h"

#define POOL_KEEP 32 /* idle handles kept per worker */
/* an answer another worker gives: a function's output (6 MiB at most: libember's default
 * output_limit, which ember serve keeps), a function's log ring, a deployment's status */
#define BODY_MIN (64ULL << 20)
#define HEAD_MAX (64ULL << 10)

struct wk_pool {
	pthread_mutex_t mu;
	CURL *idle[POOL_KEEP];
	unsigned n;
};

struct srv_workers {
	struct wk_pool pool[WORKERS_MAX];
};

int wk_start(struct srv *s)
{
	if (s->opt.workers <= 1)
		return 0;
	if (!(s->workers = calloc(1, sizeof(*s->workers))))
		return -1;
	for (unsigned i = 0; i < WORKERS_MAX; i++)
		pthread_mutex_init(&s->workers->pool[i].mu, NULL);
	return 0;
}

void wk_stop(struct srv *s)
{
	if (!s->workers)
		return;
	for (unsigned i = 0; i < WORKERS_MAX; i++) {
		struct wk_pool *p = &s->workers->pool[i];
		while (p->n)
			curl_easy_cleanup(p->idle[--p->n]);
		pthread_mutex_destroy(&p->mu);
	}
	free(s->workers);
	s->workers = NULL;
}

static CURL *take(struct wk_pool *p)
{
	CURL *c = NULL;
	pthread_mutex_lock(&p->mu);
	if (p->n)
		c = p->idle[--p->n];
	pthread_mutex_unlock(&p->mu);
	return c ? c : curl_easy_init();
}

/* a handle back to its pool, its connection kept open for the next request */
static void give(struct wk_pool *p, CURL *c)
{
	curl_easy_reset(c);
	pthread_mutex_lock(&p->mu);
	if (p->n < POOL_KEEP)
		p->idle[p->n++] = c, c = NULL;
	pthread_mutex_unlock(&p->mu);
	if (c)
		curl_easy_cleanup(c);
}

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
	struct wk_answer *a = ctx;
	return cluster_buf_add(&a->body, &a->len, &a->cap, p, size * n, a->max) ? 0 : size * n;
}

static size_t on_head(char *p, size_t size, size_t n, void *ctx)
{
	struct wk_answer *a = ctx;
	if (n > 5 && !strncmp(p, "HTTP/", 5))
		a->hlen = 0; /* a 100 Continue's head before the answer's own */
	return cluster_buf_add(&a->head, &a->hlen, &a->hcap, p, size * n, HEAD_MAX) ? 0 : size * n;
}

/* Before the request goes out: once. libcurl sends it again on a new connection when the one it
 * reused dies before an answer, which is what a worker killed in the middle of a call looks
 * like (its socket, which the supervisor keeps, queues the new connection for its next
 * process): that call must fail with 502, not run twice. */
static int on_send(void *ctx, char *ip, char *local_ip, int port, int local_port)
{
	struct wk_answer *a = ctx;
	(void)ip, (void)local_ip, (void)port, (void)local_port;
	return ++a->sends > 1 ? CURL_PREREQFUNC_ABORT : CURL_PREREQFUNC_OK;
}

void wk_answer_free(struct wk_answer *a)
{
	free(a->body);
	free(a->head);
	memset(a, 0, sizeof(*a));
}

int wk_call(struct srv *s, unsigned w, const char *method, const char *uri, struct curl_slist *hdrs,
	    const void *body, size_t len, long timeout_ms, struct wk_answer *a, char *err,
	    size_t errlen)
{
	memset(a, 0, sizeof(*a));
	if (!s->workers || w >= s->opt.workers)
		return snprintf(err, errlen, "no worker %u", w), WK_DOWN;
	struct wk_pool *p = &s->workers->pool[w];
	CURL *c = take(p);
	if (!c)
		return snprintf(err, errlen, "out of memory"), WK_DOWN;
	char url[SRV_PATH_MAX], key[128];
	snprintf(key, sizeof(key), WK_KEY_HEADER ": %s", s->opt.peer_key ? s->opt.peer_key : "");
	struct curl_slist *own = NULL, *l = curl_slist_append(hdrs, key);
	if (!l) {
		give(p, c);
		return snprintf(err, errlen, "out of memory"), WK_DOWN;
	}
	if (!hdrs)
		own = l;
	a->max = BODY_MIN > 2 * s->opt.log_ring_bytes ? BODY_MIN : 2 * s->opt.log_ring_bytes;
	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", s->opt.peer_ports[w], uri);
	curl_easy_setopt(c, CURLOPT_URL, url);
	/* the path as the client sent it: "/function/f/../../system/..." squashed here would reach
	 * another route in the owner than the one it was forwarded for */
	curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_PROXY, "");
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
	if (!strcmp(method, "HEAD"))
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	else
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (body && (len || strcmp(method, "GET"))) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	}
	/* the worker's own request: the /system/ routes of the other ask for the credentials; a
	 * client's (hdrs) carries its own, or none: never the server's */
	if (s->auth && !hdrs) {
		curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(c, CURLOPT_USERNAME, s->auth_user);
		curl_easy_setopt(c, CURLOPT_PASSWORD, s->auth_pass);
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, l);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, a);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_head);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, a);
	curl_easy_setopt(c, CURLOPT_PREREQFUNCTION, on_send);
	curl_easy_setopt(c, CURLOPT_PREREQDATA, a);
	CURLcode rc = curl_easy_perform(c);
	curl_slist_free_all(own);
	if (rc == CURLE_OK) {
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a->status);
		give(p, c);
		return WK_OK;
	}
	snprintf(err, errlen, "%s",
		 rc == CURLE_ABORTED_BY_CALLBACK ? "the connection was closed before an answer"
						 : curl_easy_strerror(rc));
	curl_easy_cleanup(c); /* its connection may be half used */
	wk_answer_free(a);
	return rc == CURLE_COULDNT_CONNECT ? WK_DOWN : WK_FAILED;
}
