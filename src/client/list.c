/* `ember list`: the deployed functions, one line each, as faas-cli list shows them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/opt.h"
#include "client/client.h"

/* what the command line sets */
struct list_args {
	struct cli_client_args gw; /* first: cli_client_opts' offsets are from the start */
	int quiet, raw;
};

static const char list_head[] =
    "usage: ember list [--gateway URL] [--secrets DIR] [-q | --json]\n"
    "\n"
    "Lists the functions deployed on the server (GET /system/functions), sorted by name: name,\n"
    "invocations, ready virtines out of all of them (availableReplicas/replicas; 0/0 while the\n"
    "function is not loaded), and the image or runtime it runs.\n"
    "\n"
    "options:\n";
static const char list_tail[] =
    "\n"
    "Exit status: 0, 1 when the server refused (its message on stderr), 125 on a bad option\n"
    "or when the server cannot be reached.\n";

static const struct opt list_opts[] = {
    OPT_GROUP(cli_client_opts),
    OPT_FLAG("quiet", 'q', struct list_args, quiet, "names only"),
    OPT_FLAG("json", 0, struct list_args, raw, "the server's answer as it is"),
    OPT_END(),
};

static const struct opt_cmd list_cmd =
    OPT_CMD("list", list_head, list_opts, list_tail, 21, 0, "unexpected argument");

static int by_name(const void *a, const void *b)
{
	return strcmp(json_string_value(json_object_get(*(json_t *const *)a, "name")),
		      json_string_value(json_object_get(*(json_t *const *)b, "name")));
}

static void table(json_t *a, int quiet)
{
	size_t n = json_array_size(a), width = 8;
	json_t **v = calloc(n ? n : 1, sizeof(*v));
	if (!v)
		return;
	for (size_t i = 0; i < n; i++) {
		v[i] = json_array_get(a, i);
		size_t l = strlen(json_string_value(json_object_get(v[i], "name")));
		width = l > width ? l : width;
	}
	qsort(v, n, sizeof(*v), by_name);
	if (!quiet)
		printf("%-*s  %11s  %7s  %s\n", (int)width, "Function", "Invocations", "Ready",
		       "Image");
	for (size_t i = 0; i < n; i++) {
		const char *name = json_string_value(json_object_get(v[i], "name"));
		if (quiet) {
			printf("%s\n", name);
			continue;
		}
		const char *img = json_string_value(json_object_get(v[i], "image"));
		const char *lang = json_string_value(json_object_get(v[i], "runtime"));
		char ready[48], src[96];
		snprintf(ready, sizeof(ready), "%lld/%lld",
			 json_integer_value(json_object_get(v[i], "availableReplicas")),
			 json_integer_value(json_object_get(v[i], "replicas")));
		snprintf(src, sizeof(src), "%s%s",
			 img	? img
			 : lang ? lang
				: "?",
			 img || !lang ? "" : " runtime");
		printf("%-*s  %11.0f  %7s  %s\n", (int)width, name,
		       json_number_value(json_object_get(v[i], "invocationCount")), ready, src);
	}
	free(v);
}

/* every element an object with a string name */
static int well_formed(const json_t *a)
{
	size_t i;
	json_t *e;
	if (!json_is_array(a))
		return 0;
	json_array_foreach(a, i, e) if (!json_is_string(json_object_get(e, "name"))) return 0;
	return 1;
}

int cli_list(int argc, char **argv)
{
	struct list_args args = {0};
	int optind, end = opt_parse(&list_cmd, &args, argc, argv, &optind);
	if (end >= 0)
		return end;
	const char *gateway = args.gw.gateway, *secrets = args.gw.secrets;
	int quiet = args.quiet, raw = args.raw;
	struct cli_client cl;
	struct cli_resp r;
	char why[1024], reason[1024];
	if (cli_client_open(&cl, gateway, secrets, why, sizeof(why)) ||
	    cli_client_json(&cl, "GET", "/system/functions", NULL, &r, why, sizeof(why))) {
		cli_client_close(&cl);
		return fprintf(stderr, "ember list: %s\n", why), CLI_EXIT_EMBER;
	}
	cli_client_close(&cl);
	json_t *a = cli_resp_ok(&r) ? json_loadb(r.body, r.len, 0, NULL) : NULL;
	int rc = 1;
	if (!cli_resp_ok(&r))
		fprintf(stderr, "ember list: the server answered %ld: %s\n", r.status,
			cli_resp_reason(&r, reason, sizeof(reason)));
	else if (!well_formed(a))
		fprintf(stderr, "ember list: the server's answer is not a list of functions\n");
	else
		rc = 0;
	if (!rc && raw)
		fwrite(r.body, 1, r.len, stdout);
	else if (!rc)
		table(a, quiet);
	json_decref(a);
	cli_resp_free(&r);
	return rc;
}
