/* `ember bench all`: every part in one run, each writing JSON with raw samples and PNG plots,
 * then DIR/summary.md. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/bench_all.h"
#include "bench/bench_cold.h"
#include "bench/bench_peer.h"
#include "cli/cli.h"

void all_progress(const char *part, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "bench all: %s: ", part);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

FILE *all_open(const struct all_ctx *c, const char *name)
{
	char path[4400];
	snprintf(path, sizeof(path), "%s/%s", c->out, name);
	char *slash = strrchr(path, '/');
	if (slash > path + strlen(c->out)) { /* a sub-folder of DIR */
		*slash = 0;
		mkdir(path, 0755);
		*slash = '/';
	}
	FILE *f = fopen(path, "w");
	if (!f)
		fprintf(stderr, "ember bench all: %s: %s\n", path, strerror(errno));
	return f;
}

int all_write_json(const struct all_ctx *c, const char *name, json_t *o)
{
	FILE *f = all_open(c, name);
	int rc = f ? json_dumpf(o, f, JSON_INDENT(1) | JSON_REAL_PRECISION(7)) : -1;
	if (f && fclose(f))
		rc = -1;
	json_decref(o);
	return rc ? -1 : 0;
}

int all_gnuplot(const struct all_ctx *c, const char *name)
{
	char gp[4096], line[16500];
	if (peer_which("gnuplot", gp, sizeof(gp))) {
		all_progress("plot", "%s.png not drawn: gnuplot is missing (Debian gnuplot-nox)",
			     name);
		return -1;
	}
	snprintf(line, sizeof(line), "'%s' '%s/%s.gp' 2>'%s/%s.gp.err'", gp, c->out, name, c->out,
		 name);
	if (system(line)) {
		all_progress("plot", "gnuplot failed on %s/%s.gp (see %s.gp.err)", c->out, name,
			     name);
		return -1;
	}
	return 0;
}

json_t *all_capture(const struct all_ctx *c, int (*fn)(int, char **), char **argv, json_t *samples)
{
	(void)c;
	int argc = 0;
	while (argv[argc])
		argc++;
	FILE *tmp = tmpfile();
	fflush(stdout);
	int saved = tmp ? dup(1) : -1;
	if (saved < 0 || dup2(fileno(tmp), 1) < 0) {
		if (tmp)
			fclose(tmp);
		return NULL;
	}
	bench_keep_to(samples);
	int rc = fn(argc, argv);
	bench_keep_to(NULL);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	rewind(tmp);
	json_error_t je;
	json_t *o = rc ? NULL : json_loadf(tmp, 0, &je);
	fclose(tmp);
	return o;
}

static const struct {
	const char *name;
	int (*run)(struct all_ctx *c);
} parts[] = {
    {"latency", all_latency}, {"suite", all_suite},   {"cold", all_cold},
    {"http", all_http},	      {"memory", all_memory},
};
#define NPARTS (sizeof(parts) / sizeof(parts[0]))

static const char all_head[] =
    "usage: ember bench all [--out DIR] [--quick] [--iterations N] [--parts LIST]\n"
    "                       [--peers LIST] [--peer-timeout SECS] [--http-seconds S]\n"
    "                       [--concurrency LIST] [--backend both|kvm|ptrace|auto]\n"
    "\n"
    "Runs, in one process, every part below and writes DIR (default bench-all) with one JSON\n"
    "per part holding the raw samples (microseconds, in the order taken), PNG plots drawn with\n"
    "gnuplot, and summary.md: medians, p99, sample counts, ratios to the machine's floors (the\n"
    "exit floor, the disk's O_DIRECT bandwidth) and the goals of issue 16, met or missed.\n"
    "Progress goes to stderr. About 4 minutes with the defaults on this project's 2-core\n"
    "machines, 80 s of it the two KVM peers timing out where KVM is PVM. --quick (5 rounds,\n"
    "2 suite and 1 cold iteration, HTTP at 1 and 4 connections for 1 s, memory at 1 and 8\n"
    "virtines, peer timeout 8 s) takes about three minutes, most of it the cold part making\n"
    "two snapshots of each of its 23 functions.\n"
    "\n"
    "  latency  latency.json, latency_cdf_hello.png, latency_cdf_sha256.png: the static hello\n"
    "           and the sha256 function with the request on stdin, on Ember (warm trap and\n"
    "           guest, a clean shell, a cold REAP start from disk, per backend) and on every\n"
    "           peer: posix_spawn, fork from this warm process (hello only), bwrap\n"
    "           --unshare-all, runc run of a bundle whose root holds only the binary, gVisor\n"
    "           runsc do (ptrace and KVM platforms), QEMU microvm booting build/qemu/vmlinux\n"
    "           with the binary as init (KVM and TCG; boot to the first output line). Rows are\n"
    "           interleaved round by round (N rounds, default 100); slow peers sample less\n"
    "           often (runsc 2+N/5, microVMs 1+N/25). Warm-up excluded: 5 invocations per\n"
    "           Ember row, one run per peer (which also tells whether it works: a peer that\n"
    "           cannot run, or exceeds the timeout, is a row with its reason, not a number).\n"
    "           Cold rows: the library drops the snapshot's files from the page cache\n"
    "           (posix_fadvise DONTNEED) before each start. The exit floor of each backend is\n"
    "           measured before and after the rounds.\n"
    "  suite    suite.json, exits.png: `ember bench suite` (trap and guest) with raw samples.\n"
    "  cold     cold.json, cold_starts.png, cold_bandwidth.png: `ember bench cold` (lazy and\n"
    "           REAP, page cache dropped) with raw samples, prefetch bandwidth against the\n"
    "           disk's O_DIRECT read.\n"
    "  http     http.json, http.png: bench/http_sweep.sh: ember serve (hello, per backend),\n"
    "           bench/forkserver with posix_spawn (a process per request) and with fork (the\n"
    "           classic watchdog's model), closed loop by bench/loadgen at each concurrency\n"
    "           (default 1,2,4,8,16, 3 s each): throughput, p50, p99, every latency.\n"
    "  memory   memory.json, density.png: `ember bench memory --no-max` on the first backend\n"
    "           (N = 1, 8, 64): PSS per warm virtine per sharing mode (needs root for KSM).\n"
    "\n"
    "--parts  a comma list of the parts above (default all). --peers a comma list of peer\n"
    "names (posix_spawn,bwrap,runc,runsc_ptrace,runsc_kvm,microvm_kvm,microvm_tcg; default\n"
    "all). --peer-timeout bounds every peer run (default 20 s). The peers come from Debian\n"
    "(scripts/setup.sh --bench installs them and the guest kernel); make test needs none.\n"
    "\n" BENCH_HELP_BACKEND "\n"
    "options:\n";

/* what the command line sets */
struct all_args {
	const char *out, *parts, *peers, *concs, *backend;
	int quick, iters, timeout;
	double secs;
};

static const struct opt all_opts[] = {
    OPT_STRING("out", 0, struct all_args, out, "DIR", "where it writes (default bench-all)"),
    OPT_FLAG("quick", 0, struct all_args, quick, "the short run above"),
    OPT_INT("iterations", 0, struct all_args, iters, "N", 1, 100000,
	    "--iterations needs a count from 1 to 100000",
	    "latency rounds (default 100, 5 with --quick)"),
    OPT_STRING("parts", 0, struct all_args, parts, "LIST", "the parts to run (above)"),
    OPT_STRING("peers", 0, struct all_args, peers, "LIST", "the peers to run (above)"),
    OPT_INT("peer-timeout", 0, struct all_args, timeout, "SECS", 1, 86400,
	    "--peer-timeout needs seconds from 1 to 86400",
	    "the bound of every peer run (default 20, 8 with --quick)"),
    OPT_DOUBLE("http-seconds", 0, struct all_args, secs, "S", 0, 86400,
	       "--http-seconds needs a positive number of seconds",
	       "seconds per HTTP point (default 3, 1 with --quick)"),
    OPT_STRING("concurrency", 0, struct all_args, concs, "LIST",
	       "the HTTP concurrency levels (default 1,2,4,8,16; 1,4 with --quick)"),
    OPT_STRING("backend", 0, struct all_args, backend, "B",
	       "both, kvm, ptrace or auto (above; default $EMBER_BACKEND, else both)"),
    OPT_END(),
};

static const struct opt_cmd all_cmd = {.no_args = "no arguments beside the options",
				       .name = "bench all",
				       .head = all_head,
				       .opts = all_opts,
				       .col = 23};

int all_in_list(const char *list, const char *name)
{
	if (!list)
		return 1;
	size_t n = strlen(name);
	for (const char *s = list; (s = strstr(s, name)); s += n)
		if ((s == list || s[-1] == ',') && (s[n] == ',' || !s[n]))
			return 1;
	return 0;
}

/* every word of a comma list is one of the names (stride bytes apart from names); else says
 * which is not */
static int list_ok(const char *opt, const char *list, const char *const *names, size_t n,
		   size_t stride)
{
	char *dup = strdup(list), *save = NULL;
	int ok = dup != NULL;
	for (char *w = strtok_r(dup, ",", &save); ok && w; w = strtok_r(NULL, ",", &save)) {
		ok = 0;
		for (size_t i = 0; i < n && !ok; i++)
			ok = !strcmp(w, *(const char *const *)((const char *)names + i * stride));
		if (!ok)
			fprintf(stderr, "ember bench all: %s: no '%s' (see --help)\n", opt, w);
	}
	free(dup);
	return ok;
}

/* the options; -1 to run, else the exit status */
static int parse(int argc, char **argv, struct all_ctx *c, const char **parts_opt)
{
	struct all_args a = {.out = "bench-all", .backend = getenv("EMBER_BACKEND")};
	int first, rc = opt_parse(&all_cmd, &a, argc, argv, &first);
	if (rc >= 0)
		return rc;
	const char *out = a.out, *backend = a.backend;
	int iters = a.iters, timeout = a.timeout;
	double secs = a.secs;
	c->quick = a.quick;
	c->peers = a.peers;
	c->concs = a.concs;
	*parts_opt = a.parts;
	if ((*parts_opt &&
	     !list_ok("--parts", *parts_opt, &parts[0].name, NPARTS, sizeof(parts[0]))) ||
	    (c->peers && !list_ok("--peers", c->peers, &bench_peers[0].name, bench_npeers,
				  sizeof(bench_peers[0]))))
		return CLI_EXIT_EMBER;
	c->iters = iters ? iters : c->quick ? 5 : 100;
	c->suite_iters = c->quick ? 2 : 20;
	c->cold_iters = c->quick ? 1 : 5;
	c->http_secs = secs > 0 ? secs : c->quick ? 1 : 3;
	c->concs = c->concs ? c->concs : c->quick ? "1,4" : "1,2,4,8,16";
	if (!*c->concs || strspn(c->concs, "0123456789,") != strlen(c->concs))
		return fprintf(stderr,
			       "ember bench all: --concurrency: numbers and commas, not '%s'\n",
			       c->concs),
		       CLI_EXIT_EMBER;
	c->peer_timeout_ms = (timeout ? timeout : c->quick ? 8 : 20) * 1000;
	snprintf(c->out, sizeof(c->out), "%s", out);
	struct bench_opts o = {.iters = 1, .backend = backend ? backend : "both"};
	if ((rc = bench_backends(&o)) >= 0)
		return rc;
	c->backends[0] = o.backends[0];
	c->backends[1] = o.backends[1];
	c->nbackends = o.nbackends;
	return -1;
}

int cli_bench_all(int argc, char **argv)
{
	struct all_ctx *c = calloc(1, sizeof(*c));
	const char *parts_opt = NULL;
	int rc = c ? parse(argc, argv, c, &parts_opt) : CLI_EXIT_EMBER;
	if (rc >= 0)
		goto out;
	rc = CLI_EXIT_EMBER;
	if (mkdir(c->out, 0755) && errno != EEXIST) {
		fprintf(stderr, "ember bench all: %s: %s\n", c->out, strerror(errno));
		goto out;
	}
	snprintf(c->build, sizeof(c->build), "%s", bench_build_dir());
	const char *qd = getenv("QEMU_DIR");
	snprintf(c->vmlinux, sizeof(c->vmlinux), "%s/vmlinux", qd ? qd : "");
	if (!qd)
		snprintf(c->vmlinux, sizeof(c->vmlinux), "%s/qemu/vmlinux", c->build);
	if (access(c->vmlinux, R_OK))
		c->vmlinux[0] = 0;
	const char *base = getenv("TMPDIR");
	snprintf(c->tmp, sizeof(c->tmp), "%s/ember-all-XXXXXX", base && *base ? base : "/var/tmp");
	if (!mkdtemp(c->tmp)) {
		perror("ember bench all: mkdtemp");
		goto out;
	}
	c->summary = json_object();
	all_loadavg(c->load0, sizeof(c->load0));
	double t0 = bench_now_us();
	rc = 0;
	for (size_t i = 0; i < NPARTS; i++) {
		if (!all_in_list(parts_opt, parts[i].name))
			continue;
		all_progress(parts[i].name, "starting (%.0f s into the run)",
			     (bench_now_us() - t0) / 1e6);
		if (parts[i].run(c)) {
			all_progress(parts[i].name, "FAILED");
			rc = CLI_EXIT_EMBER;
		}
	}
	all_summary_md(c, (bench_now_us() - t0) / 1e6);
	all_progress("done", "%s/summary.md (%.0f s)", c->out, (bench_now_us() - t0) / 1e6);
	cold_rm_rf(c->tmp);
	json_decref(c->summary);
out:
	free(c);
	return rc;
}
