/* The ember command: one function per subcommand, and the helpers they share. */
#ifndef EMBER_CLI_H
#define EMBER_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <jansson.h>

#include "base/base.h"
#include "cli/opt.h"
#include "ember/ember.h"

/* exit statuses of Ember's own outcomes (shell conventions) */
#define CLI_EXIT_TIMEOUT 124
#define CLI_EXIT_EMBER	 125
#define CLI_EXIT_LIMIT	 126

int cli_run(int argc, char **argv);
int cli_serve(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_snapshot(int argc, char **argv);
int cli_deploy(int argc, char **argv);
int cli_invoke(int argc, char **argv);
int cli_list(int argc, char **argv);
int cli_lb_config(int argc, char **argv);

/* the file at path (at most max bytes) into a malloc'd buffer; -1 with why */
int cli_read_file(const char *path, size_t max, uint8_t **buf, size_t *len, char *why,
		  size_t whylen);
/* the environment variable name, NULL when it is unset or empty (an empty one means the default) */
const char *cli_env(const char *name);

/* what ember_load needs to run PROGRAM: the program itself, or with runtime set, the runtime's
 * image with PROGRAM's source as its code (argv points into the struct: do not copy it) */
struct ember_config;

struct cli_program {
	char image[4096];
	char source[256]; /* the source's file name, the runtime's last argument */
	char path[4096];  /* the source's path as given */
	const char *argv[6];
	uint8_t *code; /* malloc'd; free it after ember_load */
	size_t code_len;
	char files[4096]; /* the runtime's own files (python: its standard library), or "" */
	uint64_t mem;	  /* the runtime's default guest memory, 0: Ember's */
};
int cli_program(const char *runtime, const char *program, struct cli_program *p, char *why,
		size_t whylen);
/* oci.c: path an OCI image layout (a folder with oci-layout), or LAYOUT:TAG: unpacked with
 * Debian's umoci into a new folder under $TMPDIR, whose root tree is root; 1 then, 0 when path is
 * no such layout, -1 with why. cli_oci_done removes what it made. Before the sandbox: it spawns */
int cli_oci_unpack(const char *path, char *root, size_t rootlen, char *why, size_t whylen);
void cli_oci_done(const char *root);
/* the extension of a runtime's handler file: js, lua, py */
const char *cli_runtime_ext(const char *runtime);
/* the files the build made for the suite's function name (functions/NAME/files.py), the folder
 * build/functions/NAME/files: its path in buf, or NULL when there is none */
const char *cli_suite_files(const char *build, const char *name, char *buf, size_t len);
/* p's image, arguments, code and the runtime's files in cfg; 0, or -1 with why */
int cli_program_config(const struct cli_program *p, struct ember_config *cfg, char *why,
		       size_t whylen);
/* the --env NAME=VALUE options of a command, NULL-terminated once parsed */
#define CLI_MAX_ENV 1024
struct cli_envs {
	const char *v[CLI_MAX_ENV + 1];
	int n;
};
/* what ember run and ember snapshot load, as their command lines say: cli_load_opts (an option
 * table of opt.h, with offsets from the start of this struct: put it first in a larger one) fills
 * cfg's mem_bytes, backend, files and syscalls, env (--env, repeatable) and runtime */
struct cli_load_args {
	struct ember_config cfg;
	struct cli_envs env;
	const char *runtime;
};
extern const struct opt cli_load_opts[];
/* a failed ember_load (rc, err) on stderr: "PREFIX: what went wrong: err", one line, plus the
 * way out for a missing KVM */
void cli_load_error(const char *prefix, int rc, const char *err);
/* prints o as one compact line to f and releases it */
void cli_print_json(FILE *f, json_t *o);
/* where a load's time went (ember_info.load) as --stats and ember bench print it */
struct ember_load_parts;
json_t *cli_load_json(const struct ember_load_parts *p);

/* user.c: ember serve --user. find: the user, not root, by name (needs root now); state: a
 * missing state folder made the user's, an existing one checked to be all the user's; become:
 * its groups, group and user, for good (checked) */
struct cli_user {
	char name[64];
	uid_t uid;
	gid_t gid;
};
int cli_user_find(const char *name, struct cli_user *u, char *why, size_t whylen);
int cli_user_state(const struct cli_user *u, const char *dir, char *why, size_t whylen);
int cli_user_become(const struct cli_user *u, char *why, size_t whylen);

#endif
