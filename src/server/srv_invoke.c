/* Invocations: one call of a function (shared by /function and the async workers) and
 * POST /function/{name}: the request body in, the function's stdout out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/srv_core.h"
#include "server/srv_spec.h"
#include "server/srv_registry.h"
#include "server/srv_cpu.h"
#include "server/srv_http.h"
#include "server/srv_invoke.h"
#include "server/srv_logs.h"
#include "metrics/metrics.h"

#define DEFAULT_CONTENT_TYPE "text/plain; charset=utf-8"

void srv_req_call_id(struct srv_req *r, char *buf, size_t len)
{
	const char *id = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Call-Id");
	size_t n = id ? strlen(id) : 0;
	if (n && n < len &&
	    strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		       "0123456789-_.") == n)
		memcpy(buf, id, n + 1);
	else
		srv_call_id(buf, len);
}

/* who failed: 502 for the function's own failure, 504 for its timeout, 500 for Ember's */
static unsigned http_status(const struct ember_result *res)
{
	static const unsigned by_outcome[] = {
	    [EMBER_OK] = 200,	 [EMBER_CRASH] = 502, [EMBER_TIMEOUT] = 504,
	    [EMBER_LIMIT] = 502, [EMBER_ERROR] = 500,
	};
	if (res->outcome == EMBER_OK && res->status)
		return 502;
	return (unsigned)res->outcome < sizeof(by_outcome) / sizeof(by_outcome[0])
		   ? by_outcome[res->outcome]
		   : 500;
}

void srv_invoke_call(struct srv *s, const char *name, const char *id, const uint8_t *body,
		     size_t len, const char *meta, size_t meta_len, int patient,
		     struct srv_answer *a)
{
	a->nh = 0;
	a->error = 0;
	srv_copy(a->id, sizeof(a->id), id);
	a->h[a->nh++] = (struct srv_header){"X-Call-Id", a->id};
	double t0 = srv_now();
	struct srv_call c;
	int rc = reg_acquire(s, name, &c, patient, a->err, sizeof(a->err));
	if (rc) {
		a->status = rc == REG_NOTFOUND ? 404 : rc == REG_BUSY ? 429 : 500;
		a->error = 1;
		if (rc != REG_NOTFOUND) /* a known name: the series stay bounded */
			metrics_invocation(s->metrics, metrics_fn(s->metrics, name), a->status,
					   srv_now() - t0, NULL, -1);
		return;
	}
	struct srv_fn_metrics *fm = c.e->metrics;
	/* a costly function waits for a slot; past the slots' queue: 429, as for its own limit */
	int slot = cpu_enter(s, c.inst, patient);
	if (slot == CPU_FULL) {
		reg_release(s, &c);
		snprintf(a->err, sizeof(a->err),
			 "function '%s' is costly, and %u calls of costly functions wait already",
			 name, s->opt.costly_queue);
		a->status = 429;
		a->error = 1;
		metrics_invocation(s->metrics, fm, a->status, srv_now() - t0, NULL, -1);
		return;
	}
	metrics_started(fm);
	struct ember_result res;
	double t1 = srv_now();
	ember_invoke_meta(c.inst->fn, body, len, meta, meta_len, &res);
	double took = srv_now() - t1;
	cpu_leave(s, slot);
	cpu_account(s, c.inst, &res);
	const char *ctype = c.spec->content_type ? c.spec->content_type : DEFAULT_CONTENT_TYPE;
	srv_copy(a->ctype_buf, sizeof(a->ctype_buf), ctype);
	/* not warm: it did not start from a ready virtine, or it waited for the function to load
	 * (which ran its initialisation: a load from disk makes the start cold) */
	if (c.load_us && res.start != EMBER_START_COLD)
		res.start = EMBER_START_INIT;
	double init_s = -1;
	if (!res.warm || c.load_us)
		init_s = (double)(c.load_us +
				  (res.warm ? 0 : res.wait_us + res.setup_us + res.load_us)) /
			 1e6;
	logs_append(c.e->logs, id, res.log, res.log_len);
	srv_report(s, &c, id, &res, took, init_s);
	reg_release(s, &c);

	unsigned st = http_status(&res);
	a->status = st;
	srv_fixed(a->dur, sizeof(a->dur), took, 6);
	snprintf(a->code, sizeof(a->code), "%d", res.exit_code);
	a->h[a->nh++] = (struct srv_header){"X-Duration-Seconds", a->dur};
	a->h[a->nh++] = (struct srv_header){"X-Ember-Start", ember_start_name(res.start)};
	a->h[a->nh++] = (struct srv_header){"X-Ember-Outcome", ember_outcome_name(res.outcome)};
	a->h[a->nh++] = (struct srv_header){"X-Ember-Exit-Code", a->code};
	if (init_s >= 0) {
		srv_fixed(a->init, sizeof(a->init), init_s * 1e3, 3);
		a->h[a->nh++] = (struct srv_header){"X-Ember-Init-Ms", a->init};
	}
	if (res.outcome == EMBER_OK && (st == 200 || res.out_len)) {
		/* the body is the function's stdout, also when it exits non-zero */
		a->ctype = st == 200 ? a->ctype_buf : DEFAULT_CONTENT_TYPE;
		a->body = res.out;
		a->len = res.out_len;
		a->owned = 1;
		res.out = NULL;
	} else {
		int n = res.outcome == EMBER_OK
			    ? snprintf(a->msg, sizeof(a->msg), "exit status %d\n", res.status)
			    : snprintf(a->msg, sizeof(a->msg), "%s\n", res.message);
		a->ctype = DEFAULT_CONTENT_TYPE;
		a->body = a->msg;
		a->len = (size_t)n;
		a->owned = 0;
	}
	/* the status and headers it gave on fd 4, when it succeeded; a malformed head is the
	 * function's fault, answered as a gateway answers a bad upstream response */
	char why[128];
	if (st == 200 && res.head && srv_head_apply(a, res.head, res.head_len, why, sizeof(why))) {
		free(a->body);
		a->status = 502;
		a->ctype = DEFAULT_CONTENT_TYPE;
		a->body = a->msg;
		a->len = (size_t)snprintf(a->msg, sizeof(a->msg),
					  "the function's response head (fd 4): %s\n", why);
		a->owned = 0;
	}
	metrics_invocation(s->metrics, fm, a->status, srv_now() - t0, &res, init_s);
	ember_result_free(&res);
}

enum MHD_Result h_invoke(struct srv *s, struct srv_req *r)
{
	char id[SRV_CALL_ID_MAX];
	struct srv_answer a;
	srv_req_call_id(r, id, sizeof(id));
	size_t meta_len = 0;
	char *meta = srv_meta(s, r, &meta_len);
	if (!meta)
		return srv_reply_error(r, 500, "out of memory");
	srv_invoke_call(s, r->name, id, r->body, r->len, meta, meta_len, 0, &a);
	free(meta);
	if (a.error)
		return srv_reply_error(r, a.status, "%s", a.err);
	return srv_reply(r, a.status, a.ctype, a.body, a.len, a.owned, a.h, a.nh);
}
