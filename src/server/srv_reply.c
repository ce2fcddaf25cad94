/* Replies every handler sends: a buffer, JSON, a JSON error; and a request body read as JSON. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/srv_http.h"

enum MHD_Result srv_reply(struct srv_req *r, unsigned status, const char *ctype, void *buf,
			  size_t len, int take, const struct srv_header *hdrs, size_t nhdrs)
{
	struct MHD_Response *resp;
	if (take && buf)
		resp = MHD_create_response_from_buffer_with_free_callback(len, buf, free);
	else
		resp = MHD_create_response_from_buffer(len, buf ? buf : (void *)"",
						       MHD_RESPMEM_MUST_COPY);
	if (!resp) {
		if (take)
			free(buf);
		return MHD_NO;
	}
	if (ctype)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	for (size_t i = 0; i < nhdrs; i++)
		MHD_add_response_header(resp, hdrs[i].name, hdrs[i].value);
	enum MHD_Result ret = MHD_queue_response(r->conn, status, resp);
	MHD_destroy_response(resp);
	if (ret == MHD_YES)
		r->status = status;
	return ret;
}

enum MHD_Result srv_reply_json(struct srv_req *r, unsigned status, json_t *j)
{
	char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (!text)
		return srv_reply(r, 500, "application/json", "{\"error\":\"out of memory\"}\n", 26,
				 0, NULL, 0);
	size_t n = strlen(text);
	char *t = realloc(text, n + 2);
	if (t) {
		t[n++] = '\n';
		t[n] = 0;
		text = t;
	}
	return srv_reply(r, status, "application/json", text, n, 1, NULL, 0);
}

enum MHD_Result srv_reply_error(struct srv_req *r, unsigned status, const char *fmt, ...)
{
	char msg[SRV_ERR_MAX + 64];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_t *text = json_string(msg);
	if (!text) { /* not UTF-8, which a JSON string must be: it quotes a client's bytes */
		for (char *c = msg; *c; c++)
			if ((unsigned char)*c >= 0x80)
				*c = '?';
		text = json_string(msg);
	}
	return srv_reply_json(r, status, text ? json_pack("{s:o}", "error", text) : NULL);
}

json_t *srv_body_json(struct srv_req *r, enum MHD_Result *ret)
{
	json_error_t e;
	if (!r->len) {
		*ret = srv_reply_error(r, 400, "the request body must be a JSON object");
		return NULL;
	}
	json_t *j = json_loadb((const char *)r->body, r->len, JSON_REJECT_DUPLICATES, &e);
	if (!j)
		*ret = srv_reply_error(r, 400, "malformed JSON: %s (line %d, column %d)", e.text,
				       e.line, e.column);
	return j;
}
