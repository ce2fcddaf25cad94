/* The peers of `ember bench all`: other sandboxes running the same static binary, each bounded by
 * a timeout, and the runner that times one start-to-output. */
#ifndef EMBER_CLI_BENCH_PEER_H
#define EMBER_CLI_BENCH_PEER_H

#include <stddef.h>

/* one run of a command: the request on stdin (or, with stdin_null, nothing: a file the command
 * reads instead), its stdout read until it holds want; with stop_at_want the command is killed
 * (its whole process group) there, else it must exit 0 */
struct peer_cmd {
	char *argv[24];
	const char *want;
	int stop_at_want;
	int stdin_null;
	int timeout_ms;
};

/* the microseconds from the spawn to want in the output (stop_at_want) or to the exit; -1 with
 * why in err (timed out, exit status, wrong output) */
double peer_run(const struct peer_cmd *c, const void *req, size_t len, char *err, size_t errlen);

/* where a peer's files go and what it runs */
struct peer_env {
	char tmp[4096];	     /* a private scratch folder (bundles, initramfs images) */
	char build[4096];    /* the build folder: bench/vminit, qemu/vmlinux */
	const char *vmlinux; /* the guest kernel, or NULL */
	int timeout_ms;
};

/* a peer row: run `prog` (a static binary) as name; the prepared command in cmd. prepare
 * returns -1 with why in err when the peer cannot run here (not installed, no kernel...) */
struct peer {
	const char *name; /* e.g. "bwrap" */
	int (*prepare)(const struct peer_env *e, const char *tag, const char *prog, const void *req,
		       size_t len, struct peer_cmd *cmd, char *err, size_t errlen);
	int slow; /* seconds-long starts: sampled less often (see bench_all_lat.c) */
};
extern const struct peer bench_peers[];
extern const size_t bench_npeers;

/* the first of PATH's directories holding an executable name, into out; -1 when none */
int peer_which(const char *name, char *out, size_t len);

#endif
