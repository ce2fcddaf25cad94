/* The entries of a stack file's provider: and functions:, key by key, from one table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "client/stack_yaml.h"
#include "server/srv_serve.h"

#define MAX_FUNCTIONS 1024

/* the function being read, and the environment its environment_file entries give */
struct fn_ctx {
	struct cli_stack *st;
	struct cli_stack_fn *fn;
	json_t *file_env;
};

static const struct {
	const char *lang;
	enum cli_fn_kind kind;
} langs[] = {
    {"js", CLI_FN_JS},	   {"javascript", CLI_FN_JS}, {"node", CLI_FN_JS}, {"lua", CLI_FN_LUA},
    {"python", CLI_FN_PY}, {"python3", CLI_FN_PY},    {"c", CLI_FN_C},
};

int cli_stack_provider(struct cli_yaml *y, const char *key, yaml_node_t *k, yaml_node_t *v,
		       void *arg)
{
	struct cli_stack *st = arg;
	char name[64];
	if (!strcmp(key, "gateway"))
		return cli_yaml_scalar(y, v, "provider.gateway", st->gateway, sizeof(st->gateway));
	if (strcmp(key, "name")) {
		cli_yaml_warn(y, k, "unknown key provider.%s, ignored", key);
		return 0;
	}
	if (cli_yaml_scalar(y, v, "provider.name", name, sizeof(name)))
		return -1;
	if (strcmp(name, "openfaas"))
		return cli_yaml_fail(
		    y, v, "provider.name must be openfaas (as for faas-cli), not '%s'", name);
	return 0;
}

/* a path in the stack file, relative to the file's folder */
static int path_in(struct cli_yaml *y, struct fn_ctx *f, yaml_node_t *v, const char *what,
		   char *out, size_t len)
{
	char p[CLI_PATH_MAX];
	if (cli_yaml_scalar(y, v, what, p, sizeof(p)))
		return -1;
	if (!p[0])
		return cli_yaml_fail(y, v, "%s is empty", what);
	const char *rel = p;
	while (rel[0] == '.' && rel[1] == '/') /* "./fn": the folder's fn */
		for (rel += 2; rel[0] == '/'; rel++)
			;
	int plain = p[0] == '/' || !strcmp(f->st->dir, ".");
	if ((size_t)snprintf(out, len, "%s%s%s", plain ? "" : f->st->dir, plain ? "" : "/",
			     plain ? p : rel) >= len)
		return cli_yaml_fail(y, v, "%s: path too long", what);
	return 0;
}

static int k_lang(struct cli_yaml *y, struct fn_ctx *f, yaml_node_t *v, const char *what)
{
	struct cli_stack_fn *fn = f->fn;
	if (cli_yaml_scalar(y, v, what, fn->lang, sizeof(fn->lang)))
		return -1;
	const char *l = fn->lang;
	for (size_t i = 0; i < sizeof(langs) / sizeof(langs[0]); i++)
		if (!strcmp(l, langs[i].lang))
			return fn->kind = langs[i].kind, 0;
	if (!strncmp(l, "node", 4) && l[4] && strspn(l + 4, "0123456789") == strlen(l + 4))
		return fn->kind = CLI_FN_JS, 0; /* node18, node20: faas-cli's template names */
	if (!strcasecmp(l, "dockerfile"))
		return cli_yaml_fail(
		    y, v,
		    "%s: dockerfile is not supported: Ember runs static x86-64 "
		    "executables, not container images (build the program and give "
		    "image: its path, or use lang: c)",
		    what);
	return cli_yaml_fail(
	    y, v,
	    "%s: '%s' is not a language Ember runs (js, javascript, node, lua, python, c; "
	    "or no lang, with image: an executable)",
	    what, l);
}

static int k_handler(struct cli_yaml *y, struct fn_ctx *f, yaml_node_t *v, const char *what)
{
	return path_in(y, f, v, what, f->fn->handler, sizeof(f->fn->handler));
}

static int k_image(struct cli_yaml *y, struct fn_ctx *f, yaml_node_t *v, const char *what)
{
	struct cli_stack_fn *fn = f->fn;
	if (cli_yaml_scalar(y, v, what, fn->image, sizeof(fn->image)) ||
	    path_in(y, f, v, what, fn->image_path, sizeof(fn->image_path)))
		return -1;
	return 0;
}

static int k_files(struct cli_yaml *y, struct fn_ctx *f, yaml_node_t *v, const char *what)
{
	return path_in(y, f, v, what, f->fn->files, sizeof(f->fn->files));
}

/* the watchdog's command: with files (or image: a tar or folder) and no lang, a root
 * filesystem's program and its arguments (the deployment's envProcess) */
static int k_fprocess(struct cli_yaml *y, struct fn_ctx *f, yaml_node_t *v, const char *what)
{
	return cli_yaml_scalar(y, v, what, f->fn->fprocess, sizeof(f->fn->fprocess));
}

static int k_environment(struct cli_yaml *y, struct fn_ctx *f, yaml_node_t *v, const char *what)
{
	return cli_yaml_strings(y, v, what, f->fn->env);
}

static int k_labels(struct cli_yaml *y, struct fn_ctx *f, yaml_node_t *v, const char *what)
{
	return cli_yaml_strings(y, v, what, f->fn->labels);
}

static int k_annotations(struct cli_yaml *y, struct fn_ctx *f, yaml_node_t *v, const char *what)
{
	return cli_yaml_strings(y, v, what, f->fn->annotations);
}

/* a list of files (faas-cli: later files override earlier ones and environment:) */
static int k_env_file(struct cli_yaml *y, struct fn_ctx *f, yaml_node_t *v, const char *what)
{
	if (v->type != YAML_SEQUENCE_NODE)
		return cli_yaml_fail(y, v, "%s must be a list of files", what);
	for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top;
	     i++) {
		yaml_node_t *item = yaml_document_get_node(&y->doc, *i);
		char name[CLI_PATH_MAX];
		if (cli_yaml_scalar(y, item, what, name, sizeof(name)) ||
		    cli_yaml_env_file(y, item, f->st->dir, name, f->file_env))
			return -1;
	}
	return 0;
}

static int limit_pair(struct cli_yaml *y, const char *key, yaml_node_t *k, yaml_node_t *v,
		      void *arg)
{
	struct cli_stack_fn *fn = arg;
	if (!strcmp(key, "memory"))
		return cli_yaml_scalar(y, v, "limits.memory", fn->memory, sizeof(fn->memory));
	/* faas-cli's cpu is a share of CPU time (100m), not a count of vCPUs: not read as
	 * ember.cpus */
	cli_yaml_warn(y, k, "functions.%s.limits.%s is ignored (Ember limits memory only%s)",
		      fn->name, key,
		      strcmp(key, "cpu") ? "" : "; ember.cpus gives each virtine more vCPUs");
	return 0;
}

static int k_limits(struct cli_yaml *y, struct fn_ctx *f, yaml_node_t *v, const char *what)
{
	return cli_yaml_pairs(y, v, what, limit_pair, f->fn);
}

/* a plain scalar as YAML 1.1 types it: integer, float, boolean, else a string */
static json_t *typed(const yaml_node_t *n, const char *s)
{
	char *end;
	if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || !s[0])
		return json_string(s);
	long long i = strtoll(s, &end, 10);
	if (!*end)
		return json_integer(i);
	double d = strtod(s, &end);
	if (!*end && strspn(s, "+-0123456789.eE") == strlen(s))
		return json_real(d);
	if (!strcmp(s, "true") || !strcmp(s, "false"))
		return json_boolean(s[0] == 't');
	return json_string(s);
}

static int ember_pair(struct cli_yaml *y, const char *key, yaml_node_t *k, yaml_node_t *v,
		      void *arg)
{
	(void)k;
	char what[128], val[1024];
	snprintf(what, sizeof(what), "ember.%s", key);
	if (cli_yaml_null(v))
		return 0;
	if (cli_yaml_scalar(y, v, what, val, sizeof(val)))
		return -1;
	return json_object_set_new(arg, key, typed(v, val)) ? cli_yaml_fail(y, v, "out of memory")
							    : 0;
}

static int k_ember(struct cli_yaml *y, struct fn_ctx *f, yaml_node_t *v, const char *what)
{
	if (!f->fn->ember && !(f->fn->ember = json_object()))
		return cli_yaml_fail(y, v, "out of memory");
	return cli_yaml_pairs(y, v, what, ember_pair, f->fn->ember);
}

/* the names of secrets made on the server (POST /system/secrets), as faas-cli's secrets: */
static int k_secrets(struct cli_yaml *y, struct fn_ctx *f, yaml_node_t *v, const char *what)
{
	if (v->type != YAML_SEQUENCE_NODE)
		return cli_yaml_fail(y, v, "%s must be a list of secret names", what);
	json_decref(f->fn->secrets);
	if (!(f->fn->secrets = json_array()))
		return cli_yaml_fail(y, v, "out of memory");
	for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top;
	     i++) {
		yaml_node_t *item = yaml_document_get_node(&y->doc, *i);
		char name[64];
		if (cli_yaml_scalar(y, item, what, name, sizeof(name)))
			return -1;
		if (!srv_name_ok(name))
			return cli_yaml_fail(
			    y, item, "%s: '%s' is no secret name ([a-z0-9][a-z0-9-_.]{0,62})", what,
			    name);
		if (json_array_append_new(f->fn->secrets, json_string(name)))
			return cli_yaml_fail(y, item, "out of memory");
	}
	return 0;
}

/* parse NULL: ignored, with a warning saying why when why is set (build-time keys: silently) */
static const struct {
	const char *key;
	int (*parse)(struct cli_yaml *y, struct fn_ctx *f, yaml_node_t *v, const char *what);
	const char *why;
} keys[] = {
    {"lang", k_lang, NULL},
    {"handler", k_handler, NULL},
    {"image", k_image, NULL},
    {"files", k_files, NULL},
    {"environment", k_environment, NULL},
    {"environment_file", k_env_file, NULL},
    {"labels", k_labels, NULL},
    {"annotations", k_annotations, NULL},
    {"limits", k_limits, NULL},
    {"ember", k_ember, NULL},
    {"secrets", k_secrets, NULL},
    {"requests", NULL, "Ember reserves limits.memory for each virtine"},
    {"constraints", NULL, "Ember runs functions on one host"},
    {"namespace", NULL, "Ember's functions share one space of names"},
    {"fprocess", k_fprocess, NULL},
    {"readonly_root_filesystem", NULL, "a function cannot write its files in Ember anyway"},
    {"skip_build", NULL, NULL},
    {"build_options", NULL, NULL},
    {"build_args", NULL, NULL},
    {"build_secrets", NULL, NULL},
    {"platforms", NULL, NULL},
};

static int fn_pair(struct cli_yaml *y, const char *key, yaml_node_t *k, yaml_node_t *v, void *arg)
{
	struct fn_ctx *f = arg;
	char what[256];
	snprintf(what, sizeof(what), "functions.%s.%s", f->fn->name, key);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (strcmp(key, keys[i].key))
			continue;
		if (keys[i].parse)
			return keys[i].parse(y, f, v, what);
		if (keys[i].why)
			cli_yaml_warn(y, k, "%s is ignored (%s)", what, keys[i].why);
		return 0;
	}
	cli_yaml_warn(y, k, "unknown key %s, ignored", what);
	return 0;
}

/* what each kind needs */
static int check(struct cli_yaml *y, const yaml_node_t *k, struct cli_stack_fn *fn)
{
	static const char *const files[] = {[CLI_FN_JS] = "handler.js",
					    [CLI_FN_LUA] = "handler.lua",
					    [CLI_FN_PY] = "handler.py",
					    [CLI_FN_C] = "a Makefile or one .c file"};
	if (!fn->lang[0] && fn->fprocess[0]) { /* a root filesystem: its files, or image: one */
		fn->kind = CLI_FN_ROOTFS;
		if (!fn->files[0] && fn->image[0])
			snprintf(fn->files, sizeof(fn->files), "%s", fn->image_path);
		if (!fn->files[0])
			return cli_yaml_fail(y, k,
					     "functions.%s: fprocess runs a program of the "
					     "function's files: give files (or image:) a root "
					     "filesystem, a folder or a tar",
					     fn->name);
		return 0;
	}
	if (fn->fprocess[0])
		cli_yaml_warn(y, k, "functions.%s.fprocess is ignored with lang (the handler runs)",
			      fn->name);
	if (!fn->lang[0]) {
		fn->kind = CLI_FN_IMAGE;
		if (!fn->image[0])
			return cli_yaml_fail(
			    y, k,
			    "functions.%s: give lang (js, lua, python or c) and handler, or "
			    "image: an executable file or an image uploaded before",
			    fn->name);
		if (fn->handler[0])
			cli_yaml_warn(y, k, "functions.%s.handler is ignored without lang",
				      fn->name);
		return 0;
	}
	if (!fn->handler[0])
		return cli_yaml_fail(y, k,
				     "functions.%s: handler is missing: lang %s needs the folder "
				     "holding %s",
				     fn->name, fn->lang, files[fn->kind]);
	return 0;
}

int cli_stack_function(struct cli_yaml *y, const char *key, yaml_node_t *k, yaml_node_t *v,
		       void *arg)
{
	struct cli_stack *st = arg;
	if (!srv_name_ok(key))
		return cli_yaml_fail(y, k,
				     "function name '%s' must match [a-z0-9][a-z0-9-_.]{0,62} and "
				     "not contain '..'",
				     key);
	if (st->nfns == MAX_FUNCTIONS)
		return cli_yaml_fail(y, k, "more than %d functions", MAX_FUNCTIONS);
	struct cli_stack_fn *fns = realloc(st->fns, (st->nfns + 1) * sizeof(*fns));
	if (!fns)
		return cli_yaml_fail(y, k, "out of memory");
	st->fns = fns;
	struct cli_stack_fn *fn = memset(&fns[st->nfns++], 0, sizeof(*fn));
	strcpy(fn->name, key);
	fn->line = (int)k->start_mark.line + 1;
	fn->env = json_object();
	fn->labels = json_object();
	fn->annotations = json_object();
	struct fn_ctx f = {st, fn, json_object()};
	char what[128];
	snprintf(what, sizeof(what), "functions.%s", key);
	int rc = !fn->env || !fn->labels || !fn->annotations || !f.file_env
		     ? cli_yaml_fail(y, k, "out of memory")
		     : cli_yaml_pairs(y, v, what, fn_pair, &f);
	if (!rc && json_object_update(fn->env, f.file_env))
		rc = cli_yaml_fail(y, k, "out of memory");
	json_decref(f.file_env);
	return rc ? rc : check(y, k, fn);
}
