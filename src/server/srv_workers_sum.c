/* The routes ember serve --workers answers for the whole server: the worker that takes one asks
 * every other worker for its own part (on its internal socket) and adds them up. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics.h"
#include "server/srv_core.h"
#include "server/srv_registry.h"
#include "server/srv_workers.h"

#define ASK_TIMEOUT_MS 5000L

/* worker w's own answer to GET uri: its body as JSON (status 200), or NULL */
static json_t *ask_json(struct srv *s, unsigned w, const char *uri)
{
	struct wk_answer a;
	char err[SRV_ERR_MAX];
	json_t *j = NULL;
	if (workers_up(s, w) && wk_call(s, w, "GET", uri, NULL, NULL, 0, ASK_TIMEOUT_MS, &a, err,
					sizeof(err)) == WK_OK) {
		if (a.status == 200 && a.body)
			j = json_loadb(a.body, a.len, 0, NULL);
		wk_answer_free(&a);
	}
	return j;
}

int wk_sum_metrics(struct srv *s, struct srv_req *r, enum MHD_Result *ret)
{
	char *texts[WORKERS_MAX] = {0};
	size_t len, n = 0;
	char up[WORKERS_MAX];
	for (unsigned w = 0; w < s->opt.workers; w++) {
		struct wk_answer a;
		char err[SRV_ERR_MAX];
		up[w] = w == s->opt.worker;
		if (up[w]) {
			texts[n++] = metrics_render(s, &len);
			continue;
		}
		if (!workers_up(s, w) || wk_call(s, w, "GET", "/metrics", NULL, NULL, 0,
						 ASK_TIMEOUT_MS, &a, err, sizeof(err)) != WK_OK)
			continue;
		if (a.status == 200 && a.body)
			texts[n++] = a.body, a.body = NULL, up[w] = 1;
		wk_answer_free(&a);
	}
	char *sum = wk_merge_metrics(texts, n, &len);
	for (size_t i = 0; i < n; i++)
		free(texts[i]);
	/* which workers the sums are of */
	size_t cap = len + 256 + 48 * s->opt.workers;
	char *out = sum ? realloc(sum, cap) : NULL;
	if (!out) {
		free(sum);
		return *ret = srv_reply_error(r, 500, "out of memory"), 1;
	}
	len += (size_t)snprintf(out + len, cap - len,
				"# HELP ember_worker_up The workers whose series are summed here.\n"
				"# TYPE ember_worker_up gauge\n");
	for (unsigned w = 0; w < s->opt.workers; w++)
		len += (size_t)snprintf(out + len, cap - len, "ember_worker_up{worker=\"%u\"} %d\n",
					w, up[w]);
	*ret = srv_reply(r, 200, "text/plain; version=0.0.4; charset=utf-8", out, len, 1, NULL, 0);
	return 1;
}

/* b's counts added to a's: the invocations and the virtines of one function in two workers */
static void add_status(json_t *a, json_t *b)
{
	static const char *const top[] = {"invocationCount", "replicas", "availableReplicas"};
	static const char *const em[] = {"inflight", "queued"};
	for (size_t i = 0; i < sizeof(top) / sizeof(top[0]); i++)
		json_object_set_new(a, top[i],
				    json_integer(json_integer_value(json_object_get(a, top[i])) +
						 json_integer_value(json_object_get(b, top[i]))));
	json_t *ea = json_object_get(a, "ember"), *eb = json_object_get(b, "ember");
	for (size_t i = 0; ea && i < sizeof(em) / sizeof(em[0]); i++)
		json_object_set_new(ea, em[i],
				    json_integer(json_integer_value(json_object_get(ea, em[i])) +
						 json_integer_value(json_object_get(eb, em[i]))));
	json_t *ua = json_object_get(a, "usage"), *ub = json_object_get(b, "usage");
	if (ua && ub)
		json_object_set_new(
		    ua, "totalMemoryBytes",
		    json_integer(json_integer_value(json_object_get(ua, "totalMemoryBytes")) +
				 json_integer_value(json_object_get(ub, "totalMemoryBytes"))));
}

/* *into (or NULL) and one more worker's status of the same function: the worker that has it
 * loaded gives the fields of its virtines, every worker its counts */
static void merge_status(json_t **into, json_t *b)
{
	if (!*into) {
		*into = json_deep_copy(b);
		return;
	}
	int la = json_is_true(json_object_get(json_object_get(*into, "ember"), "loaded"));
	int lb = json_is_true(json_object_get(json_object_get(b, "ember"), "loaded"));
	if (lb && !la) {
		json_t *c = json_deep_copy(b);
		add_status(c, *into);
		json_decref(*into);
		*into = c;
	} else
		add_status(*into, b);
}

/* where the function called name is in list, or -1 */
static long find_name(json_t *list, const char *name)
{
	size_t i;
	json_t *v;
	json_array_foreach(list, i, v)
	{
		const char *n = json_string_value(json_object_get(v, "name"));
		if (n && !strcmp(n, name))
			return (long)i;
	}
	return -1;
}

int wk_sum_list(struct srv *s, struct srv_req *r, enum MHD_Result *ret)
{
	json_t *all = reg_list(s);
	for (unsigned w = 0; all && w < s->opt.workers; w++) {
		json_t *l = w == s->opt.worker ? NULL : ask_json(s, w, "/system/functions");
		size_t i;
		json_t *v;
		json_array_foreach(l, i, v)
		{
			const char *name = json_string_value(json_object_get(v, "name"));
			long k = name ? find_name(all, name) : -1;
			if (k < 0) {
				json_array_append(all, v);
				continue;
			}
			json_t *m = json_incref(json_array_get(all, (size_t)k));
			merge_status(&m, v);
			json_array_set_new(all, (size_t)k, m);
		}
		json_decref(l);
	}
	*ret = srv_reply_json(r, 200, all);
	return 1;
}

int wk_sum_one(struct srv *s, struct srv_req *r, enum MHD_Result *ret)
{
	json_t *one = NULL;
	char uri[SRV_NAME_MAX + 32];
	snprintf(uri, sizeof(uri), "/system/function/%s", r->name);
	for (unsigned w = 0; w < s->opt.workers; w++) {
		json_t *j = w == s->opt.worker ? reg_status(s, r->name) : ask_json(s, w, uri);
		if (j)
			merge_status(&one, j);
		json_decref(j);
	}
	*ret = one ? srv_reply_json(r, 200, one)
		   : srv_reply_error(r, 404, "function '%s' not found", r->name);
	return 1;
}

/* ready when every worker is: each serves and has loaded what the state folder holds */
int wk_ready(struct srv *s, struct srv_req *r, enum MHD_Result *ret)
{
	for (unsigned w = 0; w < s->opt.workers; w++) {
		struct wk_answer a;
		char err[SRV_ERR_MAX];
		if (w == s->opt.worker)
			continue;
		int rc = workers_up(s, w) ? wk_call(s, w, "GET", "/readyz", NULL, NULL, 0,
						    ASK_TIMEOUT_MS, &a, err, sizeof(err))
					  : WK_DOWN;
		int ok = rc == WK_OK && a.status == 200;
		if (rc == WK_OK)
			wk_answer_free(&a);
		if (!ok) {
			*ret = srv_reply_error(r, 503, "worker %u is not ready", w);
			return 1;
		}
	}
	return 0; /* this worker's own answer is the whole server's */
}

int wk_info(struct srv *s, struct srv_req *r, enum MHD_Result *ret)
{
	json_t *j = srv_info(s), *all = json_array();
	for (unsigned w = 0; all && w < s->opt.workers; w++) {
		json_t *i = w == s->opt.worker ? json_incref(j) : ask_json(s, w, "/system/info");
		json_t *me = json_object_get(json_object_get(i, "ember"), "worker");
		json_array_append_new(all,
				      me ? json_incref(me)
					 : json_pack("{s:I,s:I,s:b}", "index", (json_int_t)w, "pid",
						     (json_int_t)workers_up(s, w), "up", 0));
		json_decref(i);
	}
	json_object_set_new(json_object_get(j, "ember"), "workers", all);
	*ret = srv_reply_json(r, 200, j);
	return 1;
}
