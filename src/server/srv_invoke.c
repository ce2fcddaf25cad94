/* POST /function/{name}: one invocation, the request body in, the function's stdout out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/srv_impl.h"

#define DEFAULT_CONTENT_TYPE "text/plain; charset=utf-8"

static const char *const outcome_names[] = {"ok", "crash", "timeout", "limit", "error"};

/* a caller's own X-Call-Id when it is tame, else a new one */
static void call_id(struct srv_req *r, char *buf, size_t len)
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

enum MHD_Result h_invoke(struct srv *s, struct srv_req *r)
{
	char err[SRV_ERR_MAX], id[72], dur[32], init[32], code[16];
	struct srv_header h[6];
	size_t nh = 0;
	call_id(r, id, sizeof(id));
	h[nh++] = (struct srv_header){"X-Call-Id", id};
	double t0 = srv_now();
	size_t meta_len = 0;
	char *meta = srv_meta(r, &meta_len);
	if (!meta)
		return srv_reply_error(r, 500, "out of memory");
	struct srv_call c;
	int rc = reg_acquire(s, r->name, &c, err, sizeof(err));
	if (rc) {
		unsigned st = rc == REG_NOTFOUND ? 404 : rc == REG_BUSY ? 429 : 500;
		if (rc != REG_NOTFOUND)
			metrics_invocation(s->metrics, r->name, st, srv_now() - t0, NULL, -1);
		free(meta);
		return srv_reply_error(r, st, "%s", err);
	}
	metrics_started(s->metrics, r->name); /* a known name: the series stay bounded */
	struct ember_result res;
	double t1 = srv_now();
	ember_invoke_meta(c.inst->fn, r->body, r->len, meta, meta_len, &res);
	double took = srv_now() - t1;
	free(meta);
	const char *ctype = c.spec->content_type ? c.spec->content_type : DEFAULT_CONTENT_TYPE;
	char ctype_buf[128];
	snprintf(ctype_buf, sizeof(ctype_buf), "%s", ctype);
	/* cold: it did not start from a ready virtine, or it waited for the function to load */
	double init_s = -1;
	if (!res.warm || c.load_us)
		init_s = (double)(c.load_us +
				  (res.warm ? 0 : res.wait_us + res.setup_us + res.load_us)) /
			 1e6;
	logs_append(c.e->logs, id, res.log, res.log_len);
	srv_report(s, &c, id, &res, took, init_s);
	reg_release(s, &c);

	unsigned st = http_status(&res);
	snprintf(dur, sizeof(dur), "%.6f", took);
	snprintf(code, sizeof(code), "%d", res.exit_code);
	h[nh++] = (struct srv_header){"X-Duration-Seconds", dur};
	h[nh++] = (struct srv_header){"X-Ember-Start", init_s < 0 ? "warm" : "cold"};
	h[nh++] = (struct srv_header){"X-Ember-Outcome", outcome_names[res.outcome]};
	h[nh++] = (struct srv_header){"X-Ember-Exit-Code", code};
	if (init_s >= 0) {
		snprintf(init, sizeof(init), "%.3f", init_s * 1e3);
		h[nh++] = (struct srv_header){"X-Ember-Init-Ms", init};
	}
	metrics_invocation(s->metrics, r->name, st, srv_now() - t0, &res, init_s);
	enum MHD_Result ret;
	if (res.outcome == EMBER_OK && (st == 200 || res.out_len)) {
		/* the body is the function's stdout, also when it exits non-zero */
		ret = srv_reply(r, st, st == 200 ? ctype_buf : DEFAULT_CONTENT_TYPE, res.out,
				res.out_len, 1, h, nh);
		res.out = NULL;
	} else {
		char msg[sizeof(res.message) + 64];
		int n = res.outcome == EMBER_OK
			    ? snprintf(msg, sizeof(msg), "exit status %d\n", res.status)
			    : snprintf(msg, sizeof(msg), "%s\n", res.message);
		ret = srv_reply(r, st, DEFAULT_CONTENT_TYPE, msg, (size_t)n, 0, h, nh);
	}
	ember_result_free(&res);
	return ret;
}
