/* The HTTP client of ember deploy, invoke and list: one gateway, its credentials, libcurl. */
#ifndef EMBER_CLI_CLIENT_H
#define EMBER_CLI_CLIENT_H

#include <stddef.h>

#include "cli/opt.h"

#define CLI_DEFAULT_GATEWAY "http://127.0.0.1:8080"

/* ember invoke's and list's --gateway URL (-g) and --secrets DIR: cli_client_opts, an option
 * table of opt.h with offsets from the start of this struct (put it first in a larger one) */
struct cli_client_args {
	const char *gateway, *secrets;
};
extern const struct opt cli_client_opts[];

struct cli_client {
	char base[1024]; /* the gateway's URL, without a trailing '/' */
	char user[256];	 /* basic auth for the management routes; "" when none */
	char pass[256];
	void *curl; /* one handle: its connection is kept between calls */
};

struct cli_resp {
	long status;
	char *body; /* malloc'd and NUL-terminated (the body itself may hold NULs) */
	size_t len;
};

/* The gateway is url when given (--gateway, the stack file's provider.gateway), else
 * $OPENFAAS_URL, else CLI_DEFAULT_GATEWAY. The credentials are secrets_dir's basic-auth-user and
 * basic-auth-password when secrets_dir is given, else $EMBER_GATEWAY_USER and
 * $EMBER_GATEWAY_PASSWORD when set, else none. */
int cli_client_open(struct cli_client *c, const char *url, const char *secrets_dir, char *why,
		    size_t whylen);
void cli_client_close(struct cli_client *c);

/* One request to path (from '/', query included). body NULL: none. headers: NULL or a
 * NULL-terminated array of "Name: value". auth: send the credentials (when there are some).
 * 0 with r filled whatever the status; -1 with why when no answer came. */
struct cli_call {
	const char *method, *path, *ctype;
	const void *body;
	size_t len;
	const char *const *headers;
	int auth;
};
int cli_client_call(struct cli_client *c, const struct cli_call *call, struct cli_resp *r,
		    char *why, size_t whylen);
/* the common case: a management route with credentials, a JSON body or none */
int cli_client_json(struct cli_client *c, const char *method, const char *path, const char *json,
		    struct cli_resp *r, char *why, size_t whylen);
void cli_resp_free(struct cli_resp *r);
/* why the server refused: the "error" of a JSON body, else the body's start (one line) */
const char *cli_resp_reason(const struct cli_resp *r, char *buf, size_t len);
/* r->status is 2xx */
int cli_resp_ok(const struct cli_resp *r);

#endif
