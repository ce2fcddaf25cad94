/* The stack file reader's YAML helpers, shared by stack.c (the file) and stack_fn.c (functions). */
#ifndef EMBER_CLI_STACK_YAML_H
#define EMBER_CLI_STACK_YAML_H

#include <jansson.h>
#include <yaml.h>

#include "client/stack.h"

/* one YAML file being read: its document, its name for messages, where errors go */
struct cli_yaml {
	yaml_document_t doc;
	const char *file;
	int envsubst;
	char *why;
	size_t whylen;
};

/* why = "FILE:LINE: message" (n's line); returns -1 */
int cli_yaml_fail(struct cli_yaml *y, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "FILE:LINE: warning: message" on stderr */
void cli_yaml_warn(struct cli_yaml *y, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* a plain ~, null or empty scalar */
int cli_yaml_null(const yaml_node_t *n);
/* a scalar's text (null: ""), substituted when y->envsubst, into out */
int cli_yaml_scalar(struct cli_yaml *y, const yaml_node_t *n, const char *what, char *out,
		    size_t len);
/* fn for each key: value of mapping n (null: none); duplicate and merge (<<) keys refused */
typedef int (*cli_yaml_pair_fn)(struct cli_yaml *y, const char *key, yaml_node_t *k, yaml_node_t *v,
				void *arg);
int cli_yaml_pairs(struct cli_yaml *y, yaml_node_t *n, const char *what, cli_yaml_pair_fn fn,
		   void *arg);
/* a mapping of strings (environment, labels, annotations) into obj, an object */
int cli_yaml_strings(struct cli_yaml *y, yaml_node_t *n, const char *what, json_t *obj);
/* the `environment:` of the YAML file name (relative to dir) into env */
int cli_yaml_env_file(struct cli_yaml *y, const yaml_node_t *at, const char *dir, const char *name,
		      json_t *env);

/* stack_fn.c: one entry of provider:, one of functions: (arg: the stack) */
int cli_stack_provider(struct cli_yaml *y, const char *key, yaml_node_t *k, yaml_node_t *v,
		       void *arg);
int cli_stack_function(struct cli_yaml *y, const char *key, yaml_node_t *k, yaml_node_t *v,
		       void *arg);

#endif
