/* OpenFaaS stack files (stack.yml), read with libyaml into what ember deploy needs. */
#ifndef EMBER_CLI_STACK_H
#define EMBER_CLI_STACK_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define CLI_PATH_MAX 4096

enum cli_fn_kind {
	CLI_FN_JS,     /* lang js, javascript, node, nodeNN: handler.js, run by the js runtime */
	CLI_FN_LUA,    /* lang lua: handler.lua, run by the lua runtime */
	CLI_FN_PY,     /* lang python, python3: handler.py, run by the python runtime */
	CLI_FN_C,      /* lang c: built from the handler folder (a Makefile or one .c file) */
	CLI_FN_IMAGE,  /* no lang: image is an executable file, or an image already uploaded */
	CLI_FN_ROOTFS, /* no lang, fprocess: a program of its files (files:, or image: a tar) */
};

struct cli_stack_fn {
	char name[64];
	int line; /* where its entry starts in the file (1-based) */
	enum cli_fn_kind kind;
	char lang[32];		       /* as written; "" when none */
	char handler[CLI_PATH_MAX];    /* resolved against the stack file's folder; "" when none */
	char image[1024];	       /* as written (after substitution); "" when none */
	char image_path[CLI_PATH_MAX]; /* image resolved against the stack file's folder */
	char files[CLI_PATH_MAX];      /* its read-only files (a folder), resolved; "" when none */
	char fprocess[1024]; /* the command of a root filesystem's function (envProcess), or "" */
	json_t *env;	     /* environment, then environment_file's (objects of strings) */
	json_t *labels, *annotations;
	char memory[64]; /* limits.memory; "" when none */
	json_t *ember;	 /* Ember's own settings (timeout, minWarm, ...); NULL when none */
	json_t *secrets; /* the secrets' names (an array of strings); NULL when none */
};

struct cli_stack {
	char file[CLI_PATH_MAX]; /* as given, for messages */
	char dir[CLI_PATH_MAX];	 /* the stack file's folder: paths in it are relative to this */
	char gateway[1024];	 /* provider.gateway; "" when none */
	struct cli_stack_fn *fns;
	size_t nfns;
};

/* Reads and checks path: YAML syntax, the keys and their types, the languages, the names.
 * envsubst: replace $VAR, ${VAR} and ${VAR:-default} in values from the environment, as
 * faas-cli does by default. Warns on stderr about what Ember ignores. -1 with why ("FILE:LINE:
 * what is wrong") on the first error; nothing is kept then. */
int cli_stack_load(const char *path, int envsubst, struct cli_stack *st, char *why, size_t whylen);
void cli_stack_free(struct cli_stack *st);

/* What deploying one function takes: the deployment (POST/PUT /system/functions's body) and,
 * when it has one, an executable to upload first (PUT /system/images/upload_name). */
struct cli_deploy_src {
	json_t *deployment;
	uint8_t *upload; /* NULL: nothing to upload */
	size_t upload_len;
	char upload_name[64];
	char what[2 * CLI_PATH_MAX]; /* where the code comes from, for the step lines */
};
/* deploy_src.c: reads fn's handler (js, lua), builds it (c) or reads its image file; -1 with
 * why ("NAME: what is wrong") */
int cli_deploy_source(const struct cli_stack_fn *fn, struct cli_deploy_src *src, char *why,
		      size_t whylen);
void cli_deploy_source_free(struct cli_deploy_src *src);
/* deploy_files.c: fn's files checked (the server's rules), packed as a gzipped tar archive and
 * set as deployment's files, in base64; what gains a note; -1 with why ("NAME: files ...") */
int cli_deploy_files(const struct cli_stack_fn *fn, json_t *deployment, char *what, size_t whatlen,
		     char *why, size_t whylen);
/* deploy_build.c: builds a lang c handler (a Makefile's `handler`, or its .c files with
 * musl-gcc -static) and reads the executable into *buf; what says how */
int cli_build_c(const struct cli_stack_fn *fn, uint8_t **buf, size_t *len, char *what,
		size_t whatlen, char *why, size_t whylen);

/* stack_subst.c: in's $VAR, ${VAR}, ${VAR:-default}, ${VAR-default} and $$ (a '$') replaced from
 * the environment, into out; -1 with why when malformed or too long */
int cli_subst(const char *in, char *out, size_t outlen, char *why, size_t whylen);

#endif
