/* One call of a function: its answer, the response head, its metadata, its REPORT line. */
#ifndef EMBER_SRV_INVOKE_H
#define EMBER_SRV_INVOKE_H

#include <stddef.h>
#include <stdint.h>

#include "server/srv_http.h"
#include "server/srv_registry.h"

/* srv_invoke.c: one call of a function, for /function and for the async workers */
#define SRV_HEAD_HEADERS 32 /* headers a function's response head may give */
struct srv_answer {
	unsigned status;
	int error; /* 1: the call did not run; the answer is the JSON error {"error": err} */
	char err[SRV_ERR_MAX];
	const char *ctype;
	void *body; /* the function's stdout (owned: malloc'd), or msg */
	size_t len;
	int owned;
	struct srv_header h[6 + SRV_HEAD_HEADERS];
	size_t nh;
	char head[EMBER_HEAD_MAX + 1]; /* the function's response head, its lines cut in place */
	char id[SRV_CALL_ID_MAX], dur[32], init[32], code[16], ctype_buf[128];
	char msg[sizeof(((struct ember_result *)0)->message) + 64];
};
/* srv_head.c: the response head a function wrote on fd 4 ("Status: N", "Name: value" lines)
 * applied to a: its status, its Content-Type, its headers (pointing into a->head). 0, or -1 with
 * why in err (a malformed line, a header the server owns), and a unchanged but for a->head */
int srv_head_apply(struct srv_answer *a, const uint8_t *head, size_t len, char *err, size_t errlen);

/* Runs name with body and meta as call id: acquires the function (loading it when needed), runs
 * it, counts it in the metrics and fills a with what the sync reply sends. patient: as for
 * reg_acquire. */
void srv_invoke_call(struct srv *s, const char *name, const char *id, const uint8_t *body,
		     size_t len, const char *meta, size_t meta_len, int patient,
		     struct srv_answer *a);
/* the caller's own X-Call-Id when it is a plain token, else a new UUID */
void srv_req_call_id(struct srv_req *r, char *buf, size_t len);

/* srv_meta.c: an invocation's metadata for ember_invoke_meta, "NAME=value\n" lines named as
 * the OpenFaaS watchdog names its environment (Http_Method, ...); NULL when out of memory */
char *srv_meta(const struct srv *s, struct srv_req *r, size_t *len);

/* srv_report.c: the REPORT line of one invocation (duration and init in seconds, init < 0: warm) */
void srv_report(struct srv *s, const struct srv_call *c, const char *id,
		const struct ember_result *res, double took_s, double init_s);

#endif
