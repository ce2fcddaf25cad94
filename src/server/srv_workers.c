/* ember serve --workers N inside one worker: a function's owner, the requests that go to it (its
 * invocations, deployments and logs), and the other workers told of a changed deployment. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/srv_core.h"
#include "server/srv_registry.h"
#include "server/srv_secrets.h"
#include "server/srv_store.h"
#include "server/srv_workers.h"

#define NOTIFY_TIMEOUT_MS 5000L
#define HEADERS_MAX	  64
#define FALLBACK_IDLE_S	  1.0 /* a function served here while its owner was down: kept so long */

unsigned workers_owner(const struct srv *s, const char *name)
{
	if (s->opt.workers <= 1)
		return 0;
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 0x100000001b3ULL;
	return (unsigned)(h % s->opt.workers);
}

int workers_mine(const struct srv *s, const char *name)
{
	return workers_owner(s, name) == s->opt.worker;
}

int workers_here(const struct srv *s, const char *name)
{
	return workers_mine(s, name) || !workers_up(s, workers_owner(s, name));
}

int workers_up(const struct srv *s, unsigned w)
{
	return w < s->opt.workers && s->opt.peer_up
		   ? __atomic_load_n(&s->opt.peer_up[w], __ATOMIC_ACQUIRE)
		   : 0;
}

int workers_key_ok(const struct srv *s, struct MHD_Connection *conn)
{
	const char *k = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, WK_KEY_HEADER);
	const char *key = s->opt.peer_key;
	if (!k || !key || strlen(k) != strlen(key))
		return 0;
	unsigned char diff = 0; /* in a time that does not tell how much of it matched */
	for (size_t i = 0; key[i]; i++)
		diff |= (unsigned char)(k[i] ^ key[i]);
	return !diff;
}

struct fwd_headers {
	struct curl_slist *l;
	int failed; /* a line could not be added: the request is not sent without it */
};

/* the request's headers, but those that belong to one connection (curl sets its own), and a
 * key the client sent (the forward carries the real one) */
static enum MHD_Result add_header(void *ctx, enum MHD_ValueKind kind, const char *k, const char *v)
{
	static const char *const hop[] = {"Host",	"Content-Length", "Transfer-Encoding",
					  "Connection", "Expect",	  "Keep-Alive",
					  WK_KEY_HEADER};
	struct fwd_headers *f = ctx;
	(void)kind;
	for (size_t i = 0; i < sizeof(hop) / sizeof(hop[0]); i++)
		if (!strcasecmp(k, hop[i]))
			return MHD_YES;
	size_t len = strlen(k) + 2 + (v ? strlen(v) : 0) + 1;
	char *line = malloc(len);
	struct curl_slist *n = NULL;
	if (line) {
		snprintf(line, len, "%s: %s", k, v ? v : "");
		n = curl_slist_append(f->l, line);
		free(line);
	}
	if (n)
		f->l = n;
	else
		f->failed = 1;
	return n ? MHD_YES : MHD_NO;
}

/* the owner's answer, whole: its status, its headers (not those of its connection), its body */
static enum MHD_Result pass_back(struct srv_req *r, struct wk_answer *a, unsigned owner)
{
	static const char *const skip[] = {"Content-Length", "Transfer-Encoding", "Connection",
					   "Keep-Alive", "Date"};
	struct srv_header h[HEADERS_MAX];
	size_t nh = 0;
	const char *ctype = NULL;
	char via[16];
	snprintf(via, sizeof(via), "%u", owner);
	h[nh++] = (struct srv_header){"X-Ember-Worker", via};
	for (char *line = a->head, *next; line && *line && nh < HEADERS_MAX; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		char *colon = strchr(line, ':'), *end = line + strlen(line);
		if (!colon || !strncmp(line, "HTTP/", 5))
			continue;
		while (end > colon && (end[-1] == '\r' || end[-1] == ' '))
			*--end = 0;
		*colon = 0;
		char *v = colon + 1 + strspn(colon + 1, " \t");
		int hop = 0;
		for (size_t i = 0; i < sizeof(skip) / sizeof(skip[0]); i++)
			hop |= !strcasecmp(line, skip[i]);
		if (!strcasecmp(line, "Content-Type"))
			ctype = v;
		else if (!hop)
			h[nh++] = (struct srv_header){line, v};
	}
	char *body = a->body;
	a->body = NULL;
	enum MHD_Result ret = srv_reply(r, (unsigned)a->status, ctype, body, a->len, 1, h, nh);
	wk_answer_free(a);
	return ret;
}

/* to name's owner when it is another worker and it serves: 1 when answered (*ret), 0 when this
 * worker answers (it owns name, or the owner is down: served here rather than failed) */
static int forward(struct srv *s, struct srv_req *r, const char *name, enum MHD_Result *ret)
{
	unsigned w = workers_owner(s, name);
	if (w == s->opt.worker || !workers_up(s, w))
		return 0;
	struct fwd_headers f = {0};
	MHD_get_connection_values(r->conn, MHD_HEADER_KIND, add_header, &f);
	struct curl_slist *hdrs = f.l, *n = f.failed ? NULL : curl_slist_append(hdrs, "Expect:");
	if (!n) { /* never sent without its header lines: it would go as the server's own */
		curl_slist_free_all(hdrs);
		return *ret = srv_reply_error(r, 500, "out of memory"), 1;
	}
	hdrs = n;
	struct wk_answer a;
	char err[SRV_ERR_MAX];
	int rc = wk_call(s, w, r->method, r->uri, hdrs, r->body ? r->body : (uint8_t *)"", r->len,
			 0, &a, err, sizeof(err));
	curl_slist_free_all(hdrs);
	if (rc == WK_DOWN)
		return 0;
	if (rc == WK_FAILED)
		*ret = srv_reply_error(r, 502, "worker %u, which runs '%s', did not answer: %s", w,
				       name, err);
	else
		*ret = pass_back(r, &a, w);
	return 1;
}

static int to_owner(struct srv *s, struct srv_req *r, enum MHD_Result *ret)
{
	return forward(s, r, r->name, ret);
}

/* GET /system/logs?name=NAME: the owner keeps the function's stderr (follow=true stays here:
 * an answer that does not end cannot be passed back whole) */
static int logs_to_owner(struct srv *s, struct srv_req *r, enum MHD_Result *ret)
{
	const char *n = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "name");
	const char *f = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "follow");
	if (!n || !srv_name_ok(n) || (f && strcmp(f, "false") && strcmp(f, "0")))
		return 0;
	return forward(s, r, n, ret);
}

/* a deployment's change is made by its owner, the one worker that writes its files */
static int body_to_owner(struct srv *s, struct srv_req *r, enum MHD_Result *ret)
{
	json_t *j = r->body ? json_loadb((const char *)r->body, r->len, 0, NULL) : NULL;
	const char *n = json_string_value(json_object_get(j, "service"));
	if (!n)
		n = json_string_value(json_object_get(j, "functionName"));
	int done = n && srv_name_ok(n) ? forward(s, r, n, ret) : 0;
	json_decref(j);
	return done;
}

/* how each route is answered by a worker; a route not listed: by the worker that took it */
static const struct {
	srv_handler fn;
	int (*way)(struct srv *s, struct srv_req *r, enum MHD_Result *ret);
} ways[] = {
    {h_invoke, to_owner},      {h_async, to_owner},	    {h_history, to_owner},
    {h_logs, logs_to_owner},   {h_deploy, body_to_owner},   {h_update, body_to_owner},
    {h_delete, body_to_owner}, {h_metrics, wk_sum_metrics}, {h_list, wk_sum_list},
    {h_get, wk_sum_one},       {h_readyz, wk_ready},	    {h_info, wk_info},
};

int workers_route(struct srv *s, struct srv_req *r, enum MHD_Result *ret)
{
	for (size_t i = 0; i < sizeof(ways) / sizeof(ways[0]); i++)
		if (ways[i].fn == r->route->fn)
			return ways[i].way(s, r, ret);
	return 0;
}

void workers_notify(struct srv *s, const char *what, const char *name)
{
	char uri[160], err[SRV_ERR_MAX];
	snprintf(uri, sizeof(uri), "/system/worker/sync?%s=%s", what, name);
	for (unsigned w = 0; w < s->opt.workers; w++) {
		struct wk_answer a;
		if (w == s->opt.worker || !workers_up(s, w))
			continue; /* a worker down reads the state folder when it starts again */
		int rc = wk_call(s, w, "POST", uri, NULL, "", 0, NOTIFY_TIMEOUT_MS, &a, err,
				 sizeof(err));
		if (rc == WK_OK && a.status != 200)
			snprintf(err, sizeof(err), "status %ld", a.status), rc = WK_FAILED;
		if (rc != WK_OK)
			srv_log(s, "warning", "worker %u was not told of %s's change: %s", w, name,
				err);
		wk_answer_free(&a);
	}
}

enum MHD_Result h_worker_sync(struct srv *s, struct srv_req *r)
{
	const char *n = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "name");
	const char *sec = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "secret");
	if (!r->internal || s->opt.workers <= 1) /* internal: it carried the key */
		return srv_reply_error(r, 404, "no such route");
	if (sec && srv_name_ok(sec)) { /* its users loaded again with its new value */
		pthread_mutex_lock(&s->admin);
		secrets_changed(s, sec);
		pthread_mutex_unlock(&s->admin);
	} else if (!n || !srv_name_ok(n))
		return srv_reply_error(r, 400, "name must be a function name");
	else if (store_reread(s, n) < 0)
		return srv_reply_error(r, 500, "cannot read function '%s'", n);
	return srv_reply(r, 200, "text/plain; charset=utf-8", "OK\n", 3, 0, NULL, 0);
}

void workers_tidy(struct srv *s)
{
	for (size_t i = 0;; i++) {
		struct srv_inst *dead = NULL;
		pthread_mutex_lock(&s->mu);
		struct srv_entry *e = i < s->nfns ? s->fns[i] : NULL;
		if (e && e->inst && !e->inflight && !e->loading &&
		    !workers_here(s, e->spec->name) &&
		    srv_now() - e->last_used >= FALLBACK_IDLE_S) {
			dead = reg_inst_put(
			    e->inst); /* not retired: its snapshot is the owner's too */
			e->inst = NULL;
		}
		pthread_mutex_unlock(&s->mu);
		inst_unload(dead);
		if (!e)
			return;
	}
}

json_t *workers_self(struct srv *s)
{
	json_t *loaded = json_array();
	pthread_mutex_lock(&s->mu);
	size_t deployed = s->nfns;
	for (size_t i = 0; loaded && i < s->nfns; i++)
		if (s->fns[i]->inst)
			json_array_append_new(loaded, json_string(s->fns[i]->spec->name));
	pthread_mutex_unlock(&s->mu);
	return json_pack("{s:I,s:I,s:b,s:I,s:o*}", "index", (json_int_t)s->opt.worker, "pid",
			 (json_int_t)getpid(), "up", 1, "functions", (json_int_t)deployed, "loaded",
			 loaded);
}
