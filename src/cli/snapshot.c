/* `ember snapshot`: builds (or checks) functions' snapshots on disk ahead of their first request.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/opt.h"
#include "ember/ember.h"
#include "pool/pool.h"

static const char snapshot_head[] =
    "usage: ember snapshot [OPTIONS] PROGRAM...\n"
    "\n"
    "Initialises each PROGRAM (run with no arguments) up to its snapshot point and keeps the\n"
    "snapshot on disk in DIR/snapshots/, where `ember run --state DIR` with the same options\n"
    "finds it: its first request then starts from disk instead of running the initialisation.\n"
    "A snapshot already there and intact is reused; a damaged, outdated or foreign one is\n"
    "rebuilt. Prints one line per PROGRAM:\n"
    "  PROGRAM: snapshot PATH (N pages, init T ms)       made now\n"
    "  PROGRAM: snapshot PATH (N pages) reused            found intact on disk\n"
    "  PROGRAM: snapshot PATH (N pages, init T ms) rebuilt: WHY\n"
    "A PROGRAM whose initialisation crashes, times out or exits non-zero before it reads a\n"
    "request gets none, and stderr says why.\n"
    "\n"
    "options:\n";
static const char snapshot_tail[] =
    "\nexit status: 0 when every snapshot is on disk; 125 otherwise.\n";

static const struct opt snapshot_opts[] = {
    OPT_STRING("state", 0, struct cli_load_args, cfg.state_dir, "DIR",
	       "where snapshots are kept (default ./var)"),
    OPT_GROUP(cli_load_opts),
    OPT_END(),
};

static const struct opt_cmd snapshot_cmd =
    OPT_CMD("snapshot", snapshot_head, snapshot_opts, snapshot_tail, 20, OPT_STOP_AT_ARG, NULL);

/* one PROGRAM: load it with the state folder set, say what happened, unload it */
static int snapshot_one(struct ember_config cfg, const char *runtime, const char *program)
{
	struct cli_program p;
	char err[300] = "";
	struct ember_function *fn = NULL;
	if (cli_program(runtime, program, &p, err, sizeof(err))) {
		fprintf(stderr, "ember snapshot: %s\n", err);
		return -1;
	}
	if (cli_program_config(&p, &cfg, err, sizeof(err))) {
		fprintf(stderr, "ember snapshot: %s\n", err);
		free(p.code);
		return -1;
	}
	int rc = ember_load(&cfg, &fn, err, sizeof(err));
	free(p.code);
	if (rc) {
		char prefix[300];
		snprintf(prefix, sizeof(prefix), "ember snapshot: %s", program);
		cli_load_error(prefix, rc, err);
		return -1;
	}
	struct ember_info info;
	ember_info(fn, &info);
	rc = 0;
	if (!info.snapshot) {
		fprintf(stderr,
			"ember snapshot: %s: no snapshot: the program ended during its "
			"initialisation without reading a request\n",
			program);
		rc = -1;
	} else if (info.from_disk) {
		printf("%s: snapshot %s (%llu pages) reused\n", program, info.snapshot_path,
		       (unsigned long long)info.snapshot_pages);
	} else {
		printf("%s: snapshot %s (%llu pages, init %.1f ms)%s%s\n", program,
		       info.snapshot_path, (unsigned long long)info.snapshot_pages,
		       (double)info.init_us / 1000, info.rebuilt ? " rebuilt: " : "",
		       info.rebuilt ? info.rebuilt : "");
	}
	fflush(stdout);
	ember_unload(fn);
	return rc;
}

int cli_snapshot(int argc, char **argv)
{
	/* strict: an initialisation that fails is the reason there is no snapshot */
	struct cli_load_args a = {.cfg = {.state_dir = "var", .pool_size = 1, .strict_init = 1}};
	int optind, end = opt_parse(&snapshot_cmd, &a, argc, argv, &optind);
	if (end >= 0)
		return end;
	if (optind >= argc)
		return opt_usage_error(&snapshot_cmd, "no PROGRAM given");
	struct ember_config cfg = a.cfg;
	a.env.v[a.env.n] = NULL;
	cfg.envp = a.env.v;
	if (!cfg.backend)
		cfg.backend = getenv("EMBER_BACKEND");
	if (!cfg.syscalls) /* the mode is part of the snapshot: make the one `ember run` will use */
		cfg.syscalls = cli_env("EMBER_SYSCALLS");
	pool_shell_target(0); /* nothing is invoked: no shells to prepare ahead */
	char root[4096], owhy[512];
	int oci = cfg.files ? cli_oci_unpack(cfg.files, root, sizeof(root), owhy, sizeof(owhy)) : 0;
	if (oci < 0) {
		fprintf(stderr, "ember snapshot: --files %s\n", owhy);
		return CLI_EXIT_EMBER;
	}
	if (oci) /* an OCI image layout: its root tree */
		cfg.files = root;
	int failed = 0;
	for (int i = optind; i < argc; i++)
		failed |= snapshot_one(cfg, a.runtime, argv[i]) != 0;
	if (oci)
		cli_oci_done(root);
	return failed ? CLI_EXIT_EMBER : 0;
}
