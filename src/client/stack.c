/* OpenFaaS stack files read with libyaml: the file, its top level, and the YAML helpers. */
#include <errno.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/stack_yaml.h"

#define MAX_VALUE 65536

int cli_yaml_fail(struct cli_yaml *y, const yaml_node_t *n, const char *fmt, ...)
{
	int k = snprintf(y->why, y->whylen, "%s:%zu: ", y->file, n ? n->start_mark.line + 1 : 1);
	va_list ap;
	va_start(ap, fmt);
	if (k > 0 && (size_t)k < y->whylen)
		vsnprintf(y->why + k, y->whylen - (size_t)k, fmt, ap);
	va_end(ap);
	return -1;
}

void cli_yaml_warn(struct cli_yaml *y, const yaml_node_t *n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s:%zu: warning: ", y->file, n->start_mark.line + 1);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static const char *kind_name(const yaml_node_t *n)
{
	return n->type == YAML_MAPPING_NODE    ? "a mapping"
	       : n->type == YAML_SEQUENCE_NODE ? "a list"
					       : "a scalar";
}

int cli_yaml_null(const yaml_node_t *n)
{
	static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};
	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return 0;
	for (size_t i = 0; i < sizeof(nulls) / sizeof(nulls[0]); i++)
		if (!strcmp((const char *)n->data.scalar.value, nulls[i]))
			return 1;
	return 0;
}

int cli_yaml_scalar(struct cli_yaml *y, const yaml_node_t *n, const char *what, char *out,
		    size_t len)
{
	if (n->type != YAML_SCALAR_NODE)
		return cli_yaml_fail(y, n, "%s must be a string, not %s", what, kind_name(n));
	const char *v = cli_yaml_null(n) ? "" : (const char *)n->data.scalar.value;
	char why[256];
	if (!cli_yaml_null(n) && strlen(v) != n->data.scalar.length)
		return cli_yaml_fail(y, n, "%s holds a NUL byte", what);
	if (y->envsubst && cli_subst(v, out, len, why, sizeof(why)))
		return cli_yaml_fail(y, n, "%s: %s", what, why);
	if (y->envsubst)
		return 0;
	if (strlen(v) >= len)
		return cli_yaml_fail(y, n, "%s is longer than %zu bytes", what, len - 1);
	strcpy(out, v);
	return 0;
}

int cli_yaml_pairs(struct cli_yaml *y, yaml_node_t *n, const char *what, cli_yaml_pair_fn fn,
		   void *arg)
{
	if (cli_yaml_null(n))
		return 0;
	if (n->type != YAML_MAPPING_NODE)
		return cli_yaml_fail(y, n, "%s must be a mapping, not %s", what, kind_name(n));
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = yaml_document_get_node(&y->doc, p->key);
		yaml_node_t *v = yaml_document_get_node(&y->doc, p->value);
		if (k->type != YAML_SCALAR_NODE)
			return cli_yaml_fail(y, k, "%s: a key must be a string, not %s", what,
					     kind_name(k));
		const char *key = (const char *)k->data.scalar.value;
		if (!strcmp(key, "<<") && k->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
			return cli_yaml_fail(y, k, "%s: merge keys (<<) are not supported", what);
		for (yaml_node_pair_t *q = n->data.mapping.pairs.start; q < p; q++) {
			yaml_node_t *qk = yaml_document_get_node(&y->doc, q->key);
			if (!strcmp((const char *)qk->data.scalar.value, key))
				return cli_yaml_fail(y, k,
						     "%s: '%s' is given twice (first on line %zu)",
						     what, key, qk->start_mark.line + 1);
		}
		if (fn(y, key, k, v, arg))
			return -1;
	}
	return 0;
}

struct strings {
	json_t *obj;
	const char *what;
};

static int put_string(struct cli_yaml *y, const char *key, yaml_node_t *k, yaml_node_t *v,
		      void *arg)
{
	(void)k;
	struct strings *m = arg;
	char what[256], *val = malloc(MAX_VALUE);
	if (!val)
		return cli_yaml_fail(y, v, "out of memory");
	snprintf(what, sizeof(what), "%s.%s", m->what, key);
	int rc = cli_yaml_scalar(y, v, what, val, MAX_VALUE);
	if (!rc && json_object_set_new(m->obj, key, json_string(val)))
		rc = cli_yaml_fail(y, v, "%s is not valid UTF-8", what);
	free(val);
	return rc;
}

int cli_yaml_strings(struct cli_yaml *y, yaml_node_t *n, const char *what, json_t *obj)
{
	struct strings m = {obj, what};
	return cli_yaml_pairs(y, n, what, put_string, &m);
}

/* one YAML file into y->doc, or y->why saying why not */
static int load(struct cli_yaml *y, FILE *f)
{
	yaml_parser_t p;
	yaml_parser_initialize(&p);
	yaml_parser_set_input_file(&p, f);
	int ok = yaml_parser_load(&p, &y->doc);
	char ctx[160] = "";
	if (!ok && p.context)
		snprintf(ctx, sizeof(ctx), " (%s that starts on line %zu)", p.context,
			 p.context_mark.line + 1);
	if (!ok)
		snprintf(y->why, y->whylen, "%s:%zu:%zu: malformed YAML: %s%s", y->file,
			 p.problem_mark.line + 1, p.problem_mark.column + 1,
			 p.problem ? p.problem : "?", ctx);
	yaml_parser_delete(&p);
	return ok ? 0 : -1;
}

/* the file's top-level mapping through fn; -1 with why */
static int read_file(struct cli_yaml *y, const char *what, cli_yaml_pair_fn fn, void *arg)
{
	FILE *f = fopen(y->file, "rb");
	if (!f)
		return snprintf(y->why, y->whylen, "%s: %s", y->file, strerror(errno)), -1;
	int rc = load(y, f);
	fclose(f);
	if (rc)
		return -1;
	yaml_node_t *root = yaml_document_get_root_node(&y->doc);
	rc = -1;
	if (!root)
		snprintf(y->why, y->whylen, "%s: empty", y->file);
	else
		rc = cli_yaml_pairs(y, root, what, fn, arg);
	yaml_document_delete(&y->doc);
	return rc;
}

static int env_file_pair(struct cli_yaml *y, const char *key, yaml_node_t *k, yaml_node_t *v,
			 void *arg)
{
	(void)k;
	return strcmp(key, "environment") ? 0 : cli_yaml_strings(y, v, "environment", arg);
}

int cli_yaml_env_file(struct cli_yaml *y, const yaml_node_t *at, const char *dir, const char *name,
		      json_t *env)
{
	char path[CLI_PATH_MAX];
	int abs = name[0] == '/';
	if ((size_t)snprintf(path, sizeof(path), "%s%s%s", abs ? "" : dir, abs ? "" : "/", name) >=
	    sizeof(path))
		return cli_yaml_fail(y, at, "environment_file: path too long");
	struct cli_yaml f = {.file = path, .why = y->why, .whylen = y->whylen};
	return read_file(&f, "an environment_file", env_file_pair, env);
}

/* the top level: version, provider, functions, configuration */
static int top_pair(struct cli_yaml *y, const char *key, yaml_node_t *k, yaml_node_t *v, void *arg)
{
	char val[64];
	if (!strcmp(key, "version")) {
		if (cli_yaml_scalar(y, v, "version", val, sizeof(val)))
			return -1;
		if (strcmp(val, "1.0"))
			return cli_yaml_fail(y, v, "version must be 1.0, not '%s'", val);
		return 0;
	}
	if (!strcmp(key, "provider"))
		return cli_yaml_pairs(y, v, "provider", cli_stack_provider, arg);
	if (!strcmp(key, "functions"))
		return cli_yaml_pairs(y, v, "functions", cli_stack_function, arg);
	if (strcmp(key, "configuration")) /* faas-cli's templates: nothing to deploy */
		cli_yaml_warn(y, k, "unknown key '%s', ignored", key);
	return 0;
}

int cli_stack_load(const char *path, int envsubst, struct cli_stack *st, char *why, size_t whylen)
{
	memset(st, 0, sizeof(*st));
	why[0] = 0;
	if (strlen(path) >= sizeof(st->file))
		return snprintf(why, whylen, "the stack file's path is too long"), -1;
	strcpy(st->file, path);
	char tmp[CLI_PATH_MAX];
	strcpy(tmp, path);
	strcpy(st->dir, dirname(tmp));
	struct cli_yaml y = {.file = path, .envsubst = envsubst, .why = why, .whylen = whylen};
	int rc = read_file(&y, "the stack file", top_pair, st);
	if (!rc && !st->nfns) {
		snprintf(why, whylen, "%s: no functions in it", path);
		rc = -1;
	}
	if (rc)
		cli_stack_free(st);
	return rc;
}

void cli_stack_free(struct cli_stack *st)
{
	for (size_t i = 0; i < st->nfns; i++) {
		struct cli_stack_fn *fn = &st->fns[i];
		json_decref(fn->env);
		json_decref(fn->labels);
		json_decref(fn->annotations);
		json_decref(fn->secrets);
		json_decref(fn->ember);
	}
	free(st->fns);
	st->fns = NULL;
	st->nfns = 0;
}
