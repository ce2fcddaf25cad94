/* `ember invoke`: one request to a deployed function, the request on stdin, the answer on stdout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/opt.h"
#include "client/client.h"
#include "server/srv_serve.h"

#define MAX_HEADERS 32
#define MAX_REQUEST (1ULL << 30)

struct headers {
	const char *v[MAX_HEADERS + 1];
	int n;
};

struct opts {
	struct cli_client_args gw; /* first: cli_client_opts' offsets are from the start */
	const char *method, *ctype;
	struct headers headers;
	int auth;
	char query[4096];
};

/* -H 'Name: value', at most MAX_HEADERS */
static const char *add_header(void *at, const char *h)
{
	struct headers *hs = at;
	if (hs->n == MAX_HEADERS || !strchr(h, ':'))
		return "-H takes 'Name: value' (at most 32 of them)";
	hs->v[hs->n++] = h;
	return NULL;
}

/* --query K=V, added to the query string */
static const char *add_query(void *at, const char *kv)
{
	char *query = at;
	size_t n = strlen(query), room = sizeof(((struct opts *)0)->query) - n;
	if (!strchr(kv, '=') || kv[0] == '=')
		return "--query takes KEY=VALUE";
	if ((size_t)snprintf(query + n, room, "%c%s", n ? '&' : '?', kv) >= room)
		return "the query is too long";
	return NULL;
}

static const char invoke_head[] =
    "usage: ember invoke NAME [--gateway URL] [--method M] [-H 'Name: value']...\n"
    "                   [--content-type TYPE] [--query K=V]... [--auth [--secrets DIR]]\n"
    "\n"
    "Sends the request read from stdin to the function NAME (POST /function/NAME) and writes\n"
    "the response body to stdout, as faas-cli invoke does.\n"
    "\n"
    "options:\n";
static const char invoke_tail[] =
    "\n"
    "Exit status: 0 on a 2xx answer; 1 on any other, with the status and the body on stderr\n"
    "(nothing on stdout); 125 on a bad option or when the server cannot be reached.\n";

static const struct opt invoke_opts[] = {
    OPT_GROUP(cli_client_opts),
    OPT_STRING("method", 'm', struct opts, method, "M", "the HTTP method (default POST)"),
    OPT_CALL("header", 'H', struct opts, headers, "'N: V'", add_header,
	     "a request header (repeatable)"),
    OPT_STRING("content-type", 0, struct opts, ctype, "TYPE",
	       "the request's Content-Type (default text/plain)"),
    OPT_CALL("query", 0, struct opts, query, "K=V", add_query, "a query parameter (repeatable)"),
    OPT_FLAG("auth", 0, struct opts, auth,
	     "send the management credentials too, for a function deployed\n"
	     "with ember.auth (the server keeps them from its metadata); never\n"
	     "sent otherwise: other functions read every request header"),
    OPT_END(),
};

static const struct opt_cmd invoke_cmd =
    OPT_CMD("invoke", invoke_head, invoke_opts, invoke_tail, 24, 0, NULL);

/* 0, 1 (help shown) or CLI_EXIT_EMBER (an error, said) */
static int parse(int argc, char **argv, struct opts *o, const char **name)
{
	*o = (struct opts){.method = "POST", .ctype = "text/plain"};
	int optind, end = opt_parse(&invoke_cmd, o, argc, argv, &optind);
	if (end >= 0)
		return end ? end : 1;
	if (optind != argc - 1)
		return opt_usage_error(&invoke_cmd, "give one function NAME");
	*name = argv[optind];
	if (!srv_name_ok(*name))
		return opt_usage_error(&invoke_cmd, "NAME must match [a-z0-9][a-z0-9-_.]{0,62}");
	return 0;
}

int cli_invoke(int argc, char **argv)
{
	struct opts o;
	const char *name = NULL;
	int p = parse(argc, argv, &o, &name);
	if (p)
		return p == 1 ? 0 : p;
	struct cli_client c;
	char why[1024], path[4096 + 128];
	uint8_t *req = NULL;
	size_t len = 0;
	if (cli_client_open(&c, o.gw.gateway, o.auth ? o.gw.secrets : NULL, why, sizeof(why)))
		return fprintf(stderr, "ember invoke: %s\n", why), CLI_EXIT_EMBER;
	if (isatty(0))
		fprintf(stderr, "ember invoke: reading the request from stdin (Ctrl-D ends it)\n");
	if (base_read_fd(0, MAX_REQUEST, &req, &len)) {
		cli_client_close(&c);
		return fprintf(stderr, "ember invoke: cannot read stdin\n"), CLI_EXIT_EMBER;
	}
	snprintf(path, sizeof(path), "/function/%s%s", name, o.query);
	struct cli_call call = {.method = o.method,
				.path = path,
				.ctype = o.ctype,
				.body = req,
				.len = len,
				.headers = o.headers.v,
				.auth = o.auth};
	struct cli_resp r;
	int rc = cli_client_call(&c, &call, &r, why, sizeof(why));
	free(req);
	cli_client_close(&c);
	if (rc)
		return fprintf(stderr, "ember invoke: %s\n", why), CLI_EXIT_EMBER;
	if (cli_resp_ok(&r)) {
		rc = base_write_all(1, r.body, r.len) ? CLI_EXIT_EMBER : 0;
	} else {
		fprintf(stderr, "ember invoke: %s: status %ld\n", name, r.status);
		base_write_all(2, r.body, r.len);
		if (r.len && r.body[r.len - 1] != '\n')
			fputc('\n', stderr);
		rc = 1;
	}
	cli_resp_free(&r);
	return rc;
}
