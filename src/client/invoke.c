/* `ember invoke`: one request to a deployed function, the request on stdin, the answer on stdout.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "client/client.h"
#include "server/srv_serve.h"

#define MAX_HEADERS 32
#define MAX_REQUEST (1ULL << 30)

static const char invoke_help[] =
    "usage: ember invoke NAME [--gateway URL] [--method M] [-H 'Name: value']...\n"
    "                   [--content-type TYPE] [--query K=V]... [--auth [--secrets DIR]]\n"
    "\n"
    "Sends the request read from stdin to the function NAME (POST /function/NAME) and writes\n"
    "the response body to stdout, as faas-cli invoke does.\n"
    "\n"
    "options:\n"
    "  -g, --gateway URL     the server (default $OPENFAAS_URL, else " CLI_DEFAULT_GATEWAY ")\n"
    "  -m, --method M        the HTTP method (default POST)\n"
    "  -H, --header 'N: V'   a request header (repeatable)\n"
    "  --content-type TYPE   the request's Content-Type (default text/plain)\n"
    "  --query K=V           a query parameter (repeatable)\n"
    "  --auth                send the management credentials too, for a function deployed\n"
    "                        with ember.auth (the server keeps them from its metadata); never\n"
    "                        sent otherwise: other functions read every request header\n"
    "  --secrets DIR         the credentials: DIR/basic-auth-user, DIR/basic-auth-password\n"
    "                        (default $EMBER_GATEWAY_USER and $EMBER_GATEWAY_PASSWORD)\n"
    "  -h, --help            show this help\n"
    "\n"
    "Exit status: 0 on a 2xx answer; 1 on any other, with the status and the body on stderr\n"
    "(nothing on stdout); 125 on a bad option or when the server cannot be reached.\n";

struct opts {
	const char *gateway, *secrets, *method, *ctype;
	const char *headers[MAX_HEADERS + 1];
	int nheaders, auth;
	char query[4096];
};

static int add_query(struct opts *o, const char *kv)
{
	size_t n = strlen(o->query);
	if (!strchr(kv, '=') || kv[0] == '=')
		return cli_usage_error("invoke", "--query takes KEY=VALUE");
	if ((size_t)snprintf(o->query + n, sizeof(o->query) - n, "%c%s", n ? '&' : '?', kv) >=
	    sizeof(o->query) - n)
		return cli_usage_error("invoke", "the query is too long");
	return 0;
}

/* 0, 1 (help shown) or CLI_EXIT_EMBER (an error, said) */
static int parse(int argc, char **argv, struct opts *o, const char **name)
{
	static const struct option longopts[] = {
	    {"gateway", required_argument, NULL, 'g'},
	    {"method", required_argument, NULL, 'm'},
	    {"header", required_argument, NULL, 'H'},
	    {"content-type", required_argument, NULL, 'T'},
	    {"query", required_argument, NULL, 'Q'},
	    {"auth", no_argument, NULL, 'A'},
	    {"secrets", required_argument, NULL, 's'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;
	*o = (struct opts){.method = "POST", .ctype = "text/plain"};
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "g:m:H:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'g':
			o->gateway = optarg;
			break;
		case 'm':
			o->method = optarg;
			break;
		case 'T':
			o->ctype = optarg;
			break;
		case 'A':
			o->auth = 1;
			break;
		case 's':
			o->secrets = optarg;
			break;
		case 'Q':
			if (add_query(o, optarg))
				return CLI_EXIT_EMBER;
			break;
		case 'H':
			if (o->nheaders == MAX_HEADERS || !strchr(optarg, ':'))
				return cli_usage_error(
				    "invoke", "-H takes 'Name: value' (at most 32 of them)");
			o->headers[o->nheaders++] = optarg;
			break;
		case 'h':
			fputs(invoke_help, stdout);
			return 1;
		default:
			return cli_usage_error("invoke",
					       "an option is unknown or missing its value");
		}
	}
	if (optind != argc - 1)
		return cli_usage_error("invoke", "give one function NAME");
	*name = argv[optind];
	if (!srv_name_ok(*name))
		return cli_usage_error("invoke", "NAME must match [a-z0-9][a-z0-9-_.]{0,62}");
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
	if (cli_client_open(&c, o.gateway, o.auth ? o.secrets : NULL, why, sizeof(why)))
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
				.headers = o.headers,
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
