/* `ember deploy`: the functions of an OpenFaaS stack file, deployed through the HTTP API. */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/opt.h"
#include "client/client.h"
#include "client/stack.h"

struct opts {
	const char *file, *filter, *gateway, *secrets;
	int envsubst;
};

static const char deploy_head[] =
    "usage: ember deploy [-f FILE] [--filter GLOB] [--gateway URL[,URL...]]\n"
    "                    [--secrets DIR] [--no-envsubst]\n"
    "\n"
    "Deploys the functions of an OpenFaaS stack file (faas-cli's stack.yml) to ember serve,\n"
    "in the file's order: each is created, or updated when it exists (PUT /system/functions,\n"
    "then POST when the answer is 404, as faas-cli does). Every function is read, and built,\n"
    "before anything is deployed, so a mistake in the file deploys nothing; a function the\n"
    "server refuses stops the deploy there (those before it stay deployed).\n"
    "\n"
    "functions.NAME:\n"
    "  lang       js (or javascript, node, nodeNN): HANDLER/handler.js, defining a global\n"
    "             function handler(input, env) (Ember's js runtime, not Node.js)\n"
    "             lua: HANDLER/handler.lua; python (or python3): HANDLER/handler.py\n"
    "             c: HANDLER's Makefile, which must build HANDLER/handler, else HANDLER's .c\n"
    "             files built with musl-gcc -static ($EMBER_CC); uploaded as image NAME\n"
    "             none: image is an executable file (uploaded as image NAME), or an image\n"
    "             uploaded before, by name or as a reference (registry/org/NAME:tag)\n"
    "             dockerfile and faas-cli's other templates are refused\n"
    "  handler    a folder, or the source file itself; relative to the stack file\n"
    "  files      the function's read-only files, seen at /: a folder relative to the stack\n"
    "             file (or a tar or zip archive), checked as the server would, then sent\n"
    "             packed as a tar archive in the deployment\n"
    "  image, environment, environment_file, labels, annotations, limits.memory: as for\n"
    "             faas-cli (paths relative to the stack file)\n"
    "  ember      Ember's own settings: timeout, minWarm, maxConcurrency, queue, keepAlive,\n"
    "             syscalls, cpus (vCPUs of each virtine), threads, pids (see\n"
    "             docs/server.md)\n"
    "  secrets    names of secrets made on the server first (faas-cli secret create, or\n"
    "             POST /system/secrets): the function reads each at\n"
    "             /var/openfaas/secrets/NAME\n"
    "  fprocess   without lang: the command of a root filesystem given as files:\n"
    "  requests, constraints, namespace, limits.cpu: ignored, with a warning\n"
    "\n"
    "options:\n";
static const char deploy_tail[] =
    "\n"
    "One line per step on stdout; warnings and errors on stderr. Exit status: 0 when every\n"
    "function was deployed (to every node), 1 at the first failure (with its reason: the\n"
    "server's message, the file and line; with several nodes, once every node was tried),\n"
    "125 on a bad option. See docs/openfaas.md.\n";

static const struct opt deploy_opts[] = {
    OPT_STRING("yaml", 'f', struct opts, file, "FILE",
	       "the stack file (default stack.yml, else stack.yaml)"),
    OPT_STRING("filter", 0, struct opts, filter, "GLOB",
	       "only the functions whose names match GLOB (shell wildcards)"),
    OPT_STRING("gateway", 'g', struct opts, gateway, "URL",
	       "the server (default: provider.gateway, else $OPENFAAS_URL, else\n"
	       "" CLI_DEFAULT_GATEWAY "); URL,URL,... deploys to each node of\n"
	       "a cluster in turn (a node that fails does not stop the others;\n"
	       "docs/cluster.md)"),
    OPT_STRING("secrets", 0, struct opts, secrets, "DIR",
	       "credentials for the management routes: DIR/basic-auth-user and\n"
	       "DIR/basic-auth-password, as ember serve keeps them (default:\n"
	       "$EMBER_GATEWAY_USER and $EMBER_GATEWAY_PASSWORD), sent as basic auth"),
    OPT_FLAG_SET("no-envsubst", 0, struct opts, envsubst, 0,
		 "keep $VAR and ${VAR:-default} in the file's values as they are"),
    OPT_END(),
};

static const struct opt_cmd deploy_cmd =
    OPT_CMD("deploy", deploy_head, deploy_opts, deploy_tail, 21, 0, NULL);

/* 0, 1 (help shown) or -1 (an error, said) */
static int parse(int argc, char **argv, struct opts *o)
{
	*o = (struct opts){.envsubst = 1};
	int optind, end = opt_parse(&deploy_cmd, o, argc, argv, &optind);
	if (end >= 0)
		return end ? -1 : 1;
	if (!o->file)
		o->file = access("stack.yml", F_OK) && !access("stack.yaml", F_OK) ? "stack.yaml"
										   : "stack.yml";
	return 0;
}

/* PUT /system/images/NAME with the executable */
static int upload(struct cli_client *c, const struct cli_deploy_src *src)
{
	char path[128], why[1024], reason[1024];
	struct cli_resp r;
	snprintf(path, sizeof(path), "/system/images/%s", src->upload_name);
	struct cli_call call = {.method = "PUT",
				.path = path,
				.ctype = "application/octet-stream",
				.body = src->upload,
				.len = src->upload_len,
				.auth = 1};
	if (cli_client_call(c, &call, &r, why, sizeof(why)))
		return fprintf(stderr, "ember deploy: %s: uploading the image: %s\n",
			       src->upload_name, why),
		       -1;
	int ok = cli_resp_ok(&r);
	if (!ok)
		fprintf(stderr, "ember deploy: %s: the server refused the image (%ld): %s\n",
			src->upload_name, r.status, cli_resp_reason(&r, reason, sizeof(reason)));
	json_t *j = ok ? json_loadb(r.body, r.len, 0, NULL) : NULL;
	if (ok)
		printf("%s: uploaded image %s (%lld bytes, %lld system call sites rewritten)\n",
		       src->upload_name, src->upload_name,
		       json_integer_value(json_object_get(j, "bytes")),
		       json_integer_value(json_object_get(j, "rewrittenSites")));
	json_decref(j);
	cli_resp_free(&r);
	return ok ? 0 : -1;
}

/* create or update, as faas-cli does: PUT, then POST when the function is not there */
static int deploy_one(struct cli_client *c, const char *name, const struct cli_deploy_src *src)
{
	char why[1024], reason[1024];
	struct cli_resp r;
	char *json = json_dumps(src->deployment, JSON_COMPACT);
	if (!json)
		return fprintf(stderr, "ember deploy: %s: out of memory\n", name), -1;
	const char *method = "PUT";
	int rc = cli_client_json(c, method, "/system/functions", json, &r, why, sizeof(why));
	if (!rc && r.status == 404) {
		cli_resp_free(&r);
		method = "POST";
		rc = cli_client_json(c, method, "/system/functions", json, &r, why, sizeof(why));
	}
	free(json);
	if (rc)
		return fprintf(stderr, "ember deploy: %s: %s\n", name, why), -1;
	if (!cli_resp_ok(&r)) {
		fprintf(stderr, "ember deploy: %s: the server refused the deployment (%ld): %s\n",
			name, r.status, cli_resp_reason(&r, reason, sizeof(reason)));
		cli_resp_free(&r);
		return -1;
	}
	cli_resp_free(&r);
	printf("%s: %s, %s/function/%s\n", name, method[1] == 'U' ? "updated" : "deployed", c->base,
	       name);
	return 0;
}

/* the functions --filter selects, each read and built: an error here deploys nothing */
static int prepare(const struct cli_stack *st, const char *filter, struct cli_deploy_src *srcs,
		   const struct cli_stack_fn **fns, size_t *n)
{
	char why[CLI_PATH_MAX + 512];
	*n = 0;
	for (size_t i = 0; i < st->nfns; i++) {
		const struct cli_stack_fn *fn = &st->fns[i];
		if (filter && fnmatch(filter, fn->name, 0))
			continue;
		if (cli_deploy_source(fn, &srcs[*n], why, sizeof(why)))
			return fprintf(stderr, "ember deploy: %s\nember deploy: nothing deployed\n",
				       why),
			       -1;
		printf("%s: %s\n", fn->name, srcs[*n].what);
		fns[(*n)++] = fn;
	}
	if (!*n)
		return fprintf(stderr, "ember deploy: no function in %s matches --filter '%s'\n",
			       st->file, filter),
		       -1;
	return 0;
}

/* every function to one node (gw NULL: the default): 0, or -1 when one failed (said) */
static int deploy_node(const char *gw, const char *secrets, const struct cli_deploy_src *srcs,
		       const struct cli_stack_fn **fns, size_t n)
{
	struct cli_client c = {0};
	char why[1024];
	size_t done = 0;
	if (cli_client_open(&c, gw, secrets, why, sizeof(why)))
		return fprintf(stderr, "ember deploy: %s\n", why), -1;
	for (; done < n; done++)
		if ((srcs[done].upload && upload(&c, &srcs[done])) ||
		    deploy_one(&c, fns[done]->name, &srcs[done]))
			break;
	if (done < n)
		fprintf(stderr,
			"ember deploy: %s: stopped at %s: %zu deployed before it, %zu not tried\n",
			c.base, fns[done]->name, done, n - done - 1);
	else
		printf("deployed %zu function%s to %s\n", n, n == 1 ? "" : "s", c.base);
	cli_client_close(&c);
	return done < n ? -1 : 0;
}

/* to each node of gws, "URL,URL,..." (NULL: the default one), in turn; a node that fails does
 * not stop the others. 0, or 1 when one failed */
static int deploy_all(const char *gws, const char *secrets, const struct cli_deploy_src *srcs,
		      const struct cli_stack_fn **fns, size_t n)
{
	if (!gws || !strchr(gws, ','))
		return deploy_node(gws, secrets, srcs, fns, n) ? 1 : 0;
	char *list = strdup(gws), *save = NULL;
	size_t nodes = 0, failed = 0;
	if (!list)
		return fprintf(stderr, "ember deploy: out of memory\n"), 1;
	for (char *url = strtok_r(list, ",", &save); url; url = strtok_r(NULL, ",", &save)) {
		nodes++;
		failed += deploy_node(url, secrets, srcs, fns, n) != 0;
	}
	free(list);
	if (failed)
		fprintf(stderr,
			"ember deploy: %zu of %zu nodes failed (deploy again: each function is "
			"created or updated)\n",
			failed, nodes);
	else
		printf("deployed to %zu nodes\n", nodes);
	return failed ? 1 : 0;
}

int cli_deploy(int argc, char **argv)
{
	struct opts o;
	setvbuf(stdout, NULL, _IOLBF, 0); /* each step's line as it happens, beside stderr's */
	int p = parse(argc, argv, &o);
	if (p)
		return p > 0 ? 0 : CLI_EXIT_EMBER;
	struct cli_stack st;
	char why[CLI_PATH_MAX + 512];
	if (cli_stack_load(o.file, o.envsubst, &st, why, sizeof(why)))
		return fprintf(stderr, "ember deploy: %s\n", why), 1;
	struct cli_deploy_src *srcs = calloc(st.nfns, sizeof(*srcs));
	const struct cli_stack_fn **fns = calloc(st.nfns, sizeof(*fns));
	size_t n = 0;
	int rc = 1;
	if (!srcs || !fns) {
		fprintf(stderr, "ember deploy: out of memory\n");
		goto out;
	}
	if (prepare(&st, o.filter, srcs, fns, &n))
		goto out;
	const char *gw = o.gateway ? o.gateway : st.gateway[0] ? st.gateway : NULL;
	rc = deploy_all(gw, o.secrets, srcs, fns, n);
out:
	for (size_t i = 0; srcs && i < n; i++)
		cli_deploy_source_free(&srcs[i]);
	free(srcs);
	free(fns);
	cli_stack_free(&st);
	return rc;
}
