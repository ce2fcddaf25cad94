/* `ember run`: one program, its request on stdin, its output on stdout and stderr. */
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/opt.h"
#include "cli/sandbox.h"
#include "cold/cold_land.h"
#include "ember/ember.h"
#include "pool/pool.h"
#include "vm/vm.h"

#define MAX_REQUEST (1ULL << 30)

/* what the command line sets */
struct run_args {
	struct cli_load_args load; /* first: cli_load_opts' offsets are from the start */
	int stats, no_sandbox, repeat;
};

static const char run_head[] =
    "usage: ember run [OPTIONS] PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM, an x86-64 Linux executable (static or dynamic), in a virtine. The\n"
    "request is read from stdin; the program's stdout and stderr are written to ours; the\n"
    "exit status is its own.\n"
    "\n"
    "options:\n";
static const char run_tail[] =
    "\n"
    "exit status: the program's own; 124 timeout; 125 Ember could not run it (bad usage,\n"
    "and what stderr names: a bad image, a bad configuration, a runtime whose source failed\n"
    "to load, no KVM, out of memory, files that cannot be read or written); 126 a limit was\n"
    "exceeded; 128+N the program died as of signal N\n"
    "(139 page fault or general protection fault, 136 divide error, 132 invalid opcode,\n"
    "134 abort).\n";

static const struct opt run_opts[] = {
    OPT_GROUP(cli_load_opts),
    OPT_DOUBLE("timeout", 0, struct run_args, load.cfg.timeout_s, "SECS", 0, 1e12,
	       "--timeout needs a positive number of seconds",
	       "wall-clock limit per invocation (default 10)"),
    OPT_SIZE("output-limit", 0, struct run_args, load.cfg.output_limit, "SIZE", 1, 0,
	     "--output-limit needs a size such as 6M", "stdout + stderr limit (default 6M)"),
    OPT_STRING("workdir", 0, struct run_args, load.cfg.workdir, "DIR",
	       "the folder of those files the program starts in (default /)"),
    OPT_INT("repeat", 0, struct run_args, repeat, "N", 1, 1000000,
	    "--repeat needs a count from 1 to 1000000",
	    "initialise once, then run N invocations with the same request,\n"
	    "each from the snapshot taken after initialisation (default 1)"),
    OPT_FLAG("no-snapshot", 0, struct run_args, load.cfg.no_snapshot,
	     "load and initialise the program again for every invocation"),
    OPT_STRING("state", 0, struct run_args, load.cfg.state_dir, "DIR",
	       "keep the snapshot on disk in DIR/snapshots/ and reuse it later\n"
	       "(and --files packed in DIR/bundles/, read back when unchanged)"),
    OPT_FLAG("cold", 0, struct run_args, load.cfg.cold,
	     "start the first invocation from the snapshot on disk, with its\n"
	     "files dropped from the page cache (needs --state)"),
    OPT_STRING("restore", 0, struct run_args, load.cfg.restore, "MODE",
	       "how a cold start brings memory in: reap (default; prefetch the\n"
	       "recorded working set in one read) or lazy (a page per fault)"),
    OPT_STRING("sharing", 0, struct run_args, load.cfg.sharing, "MODE",
	       "how virtines hold the snapshot's memory: upm (default; one copy\n"
	       "mapped copy-on-write), off (a private copy each) or ksm (private\n"
	       "copies KSM may merge); EMBER_SHARING sets the default"),
    OPT_UINT("cpus", 0, struct run_args, load.cfg.cpus, "N", 1, EMBER_CPUS_MAX,
	     "--cpus needs a count from 1 to 16",
	     "vCPUs of the virtine, 1 to 16 (default 1): up to N of the\n"
	     "program's threads run in parallel, more share them, preempted;\n"
	     "the ptrace backend runs 1"),
    OPT_UINT("threads", 0, struct run_args, load.cfg.threads, "N", 1, 4096,
	     "--threads needs a count from 1 to 4096",
	     "threads an invocation may have at once (default 256): past it\n"
	     "clone fails with EAGAIN"),
    OPT_UINT("pids", 0, struct run_args, load.cfg.pids, "N", 1, SYS_PIDS_MAX,
	     "--pids needs a count from 1 to 1024",
	     "processes an invocation may have at once, the first included\n"
	     "(default 64, at most 1024): past it fork fails with EAGAIN; every\n"
	     "process ends with the invocation"),
    OPT_FLAG("stats", 0, struct run_args, stats,
	     "write one JSON object with counters as the last line of stderr\n"
	     "(host_fds_leaked: descriptors left open once the function is\n"
	     "gone, 0)"),
    OPT_FLAG("no-sandbox", 0, struct run_args, no_sandbox,
	     "no seccomp allow-list on this process: for debugging only\n"
	     "(docs/security.md); the sandbox kills ember with SIGSYS and a line\n"
	     "naming the call when it makes a system call it never needs"),
    OPT_END(),
};

static const struct opt_cmd run_cmd =
    OPT_CMD("run", run_head, run_opts, run_tail, 20, OPT_STOP_AT_ARG, NULL);

/* counters of a whole `ember run`: summed over its invocations */
struct run_stats {
	uint64_t exits[EMBER_EXIT_KINDS], total_exits, run_us;
	uint64_t starts[EMBER_START_INIT + 1]; /* by enum ember_start */
	uint64_t served[1024], denied[1024], in_guest[1024];
	const char *names[1024];
	json_t *invocations;
};

/* where a cold start's time went (ember_result's breakdown), in the order it happens */
static json_t *cold_parts(const struct ember_result *r)
{
	return json_pack(
	    "{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:b}", "shell_us",
	    (json_int_t)r->wait_us, "snapshot_us", (json_int_t)r->snapshot_us, "open_us",
	    (json_int_t)r->open_us, "first_chunk_us", (json_int_t)r->first_chunk_us, "ws_read_us",
	    (json_int_t)r->ws_read_us, "ws_bytes", (json_int_t)r->prefetch_bytes, "install_us",
	    (json_int_t)r->install_us, "run_us", (json_int_t)r->run_us, "faults",
	    (json_int_t)r->faults, "fault_us", (json_int_t)r->fault_us, "fault_waits",
	    (json_int_t)r->fault_waits, "fault_wait_us", (json_int_t)r->fault_wait_us,
	    "outside_pages", (json_int_t)r->outside_pages, "mispredicted",
	    (json_int_t)r->mispredicted, "rerecorded", r->rerecorded);
}

static void add_result(struct run_stats *rs, const struct ember_result *r)
{
	for (int k = 0; k < EMBER_EXIT_KINDS; k++)
		rs->exits[k] += r->exits_by_reason[k];
	rs->total_exits += r->exits;
	rs->run_us += r->run_us;
	rs->starts[(unsigned)r->start <= EMBER_START_INIT ? r->start : EMBER_START_INIT]++;
	for (size_t i = 0; i < r->nsyscalls; i++) {
		int nr = r->syscalls[i].nr < 1023 ? r->syscalls[i].nr : 1023;
		rs->served[nr] += r->syscalls[i].served;
		rs->denied[nr] += r->syscalls[i].denied;
		rs->in_guest[nr] += r->syscalls[i].in_guest;
		rs->names[nr] = r->syscalls[i].name;
	}
	json_array_append_new(
	    rs->invocations,
	    json_pack("{s:I,s:I,s:I,s:I,s:I,s:s,s:b,s:i,s:b,s:I,s:I,s:I,s:I,s:b,s:b}", "exits",
		      (json_int_t)r->exits, "run_us", (json_int_t)r->run_us, "cpu_us",
		      (json_int_t)r->cpu_us, "reset_us", (json_int_t)r->reset_us, "wait_us",
		      (json_int_t)r->wait_us, "outcome", ember_outcome_name(r->outcome), "warm",
		      r->warm, "exit_code", r->exit_code, "cold", r->cold, "faults",
		      (json_int_t)r->faults, "prefetched_pages", (json_int_t)r->prefetched_pages,
		      "setup_us", (json_int_t)r->setup_us, "prefetch_us",
		      (json_int_t)r->prefetch_us, "recorded", r->recorded, "prefetch_buffered",
		      r->prefetch_buffered));
	json_object_set_new(json_array_get(rs->invocations, json_array_size(rs->invocations) - 1),
			    "start", json_string(ember_start_name(r->start)));
	json_t *last = json_array_get(rs->invocations, json_array_size(rs->invocations) - 1);
	json_object_set_new(last, "pages_touched", json_integer((json_int_t)r->pages_touched));
	json_object_set_new(last, "reset", json_string(r->dirty_log ? "dirty-log" : "compare"));
	if (r->cold)
		json_object_set_new(last, "cold_parts", cold_parts(r));
}

/* the host descriptors this process holds, but devices (/dev/kvm is opened once and kept for
 * the process): after the function is gone, as many as before it */
static int open_fds(void)
{
	int n = 0;
	struct stat s;
	for (int fd = 0; fd < 65536; fd++)
		n += !fstat(fd, &s) && !S_ISCHR(s.st_mode);
	return n;
}

/* a count over the ready virtines, per virtine; null without any */
static json_t *per_virtine(uint64_t total, unsigned virtines)
{
	return virtines ? json_real((double)total / virtines) : json_null();
}

static json_t *stats_json(struct ember_function *fn, struct run_stats *rs, int exit_code,
			  uint64_t load_us)
{
	struct ember_info info;
	ember_info_sites(fn, &info); /* counted too after a start from disk, which needed none */
	json_t *sys = json_array();
	for (int i = 0; i < 1024; i++) {
		if (!rs->served[i] && !rs->denied[i])
			continue;
		json_array_append_new(sys,
				      json_pack("{s:i,s:s?,s:I,s:I,s:I}", "nr", i, "name",
						rs->names[i], "served", (json_int_t)rs->served[i],
						"in_guest", (json_int_t)rs->in_guest[i], "denied",
						(json_int_t)rs->denied[i]));
	}
	json_t *exits =
	    json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}", "total", (json_int_t)rs->total_exits,
		      "hypercall", (json_int_t)rs->exits[0], "fault", (json_int_t)rs->exits[1],
		      "timeout", (json_int_t)rs->exits[2], "error", (json_int_t)rs->exits[3],
		      "interrupt", (json_int_t)rs->exits[4]);
	json_t *init = json_pack(
	    "{s:I,s:I,s:I,s:b,s:b,s:s?,s:s?,s:o}", "us", (json_int_t)info.init_us, "exits",
	    (json_int_t)info.init_exits, "snapshot_pages", (json_int_t)info.snapshot_pages,
	    "snapshot", info.snapshot, "from_disk", info.from_disk, "snapshot_path",
	    info.snapshot_path, "rebuilt", info.rebuilt, "load", cli_load_json(&info.load));
	json_t *starts = json_object();
	for (int k = EMBER_START_WARM; k <= EMBER_START_INIT; k++)
		json_object_set_new(starts, ember_start_name(k),
				    json_integer((json_int_t)rs->starts[k]));
	json_t *time = json_pack("{s:I,s:I,s:I}", "setup", (json_int_t)(load_us - info.init_us),
				 "load", (json_int_t)info.init_us, "run", (json_int_t)rs->run_us);
	struct ember_memory m;
	json_t *mem =
	    ember_memory(fn, &m)
		? json_null()
		: json_pack("{s:s,s:I,s:i,s:I,s:I,s:s?,s:I,s:I,s:I,s:o,s:o,s:o}", "sharing",
			    m.sharing, "snapshot_bytes", (json_int_t)m.snapshot_bytes, "virtines",
			    (int)m.virtines, "shared_bytes", (json_int_t)m.shared_bytes,
			    "private_bytes", (json_int_t)m.private_bytes, "domain", m.domain,
			    "domain_bytes", (json_int_t)m.domain_bytes, "merged_pages",
			    (json_int_t)m.merged_pages, "merge_ns", (json_int_t)m.merge_ns,
			    "vmas_per_instance", per_virtine(m.host_maps, m.virtines),
			    "fds_per_instance", per_virtine(m.host_fds, m.virtines),
			    "slot_kib_per_instance",
			    per_virtine(m.host_slot_bytes / 1024, m.virtines));
	return json_pack(
	    "{s:s,s:s,s:I,s:I,s:i,s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "backend", info.backend,
	    "syscalls_mode", info.syscalls, "sites_call", (json_int_t)info.sites_call, "sites_trap",
	    (json_int_t)info.sites_trap, "exit_code", exit_code, "rewritten_sites",
	    (json_int_t)info.rewritten_sites, "exits", exits, "syscalls", sys, "init", init,
	    "invocations", rs->invocations, "time_us", time, "starts", starts, "memory", mem);
}

int cli_run(int argc, char **argv)
{
	struct run_args a = {.repeat = 1};
	struct ember_config cfg;
	int optind, end = opt_parse(&run_cmd, &a, argc, argv, &optind);
	if (end >= 0)
		return end;
	if (optind >= argc)
		return opt_usage_error(&run_cmd, "no PROGRAM given");
	cfg = a.load.cfg;
	int stats = a.stats;
	a.load.env.v[a.load.env.n] = NULL;
	cfg.image = argv[optind];
	cfg.argv = (const char *const *)&argv[optind];
	cfg.envp = a.load.env.v;
	struct cli_program prog = {0};
	if (a.load.runtime) {
		char why[300];
		if (cli_program(a.load.runtime, argv[optind], &prog, why, sizeof(why))) {
			fprintf(stderr, "ember: %s\n", why);
			return CLI_EXIT_EMBER;
		}
		if (cli_program_config(&prog, &cfg, why, sizeof(why))) {
			fprintf(stderr, "ember: %s\n", why);
			free(prog.code);
			return CLI_EXIT_EMBER;
		}
	}
	char err[256], oci_root[4096];
	struct ember_function *fn;
	/* an OCI image layout as files: unpacked into a folder, before the sandbox forbids umoci */
	int oci =
	    cfg.files ? cli_oci_unpack(cfg.files, oci_root, sizeof(oci_root), err, sizeof(err)) : 0;
	if (oci < 0) {
		fprintf(stderr, "ember: --files %s\n", err);
		free(prog.code);
		return CLI_EXIT_EMBER;
	}
	if (oci)
		cfg.files = oci_root;
	if (!cfg.backend)
		cfg.backend = getenv("EMBER_BACKEND");
	if (!cfg.syscalls)
		cfg.syscalls = cli_env("EMBER_SYSCALLS");
	if (!cfg.sharing && getenv("EMBER_SHARING") && *getenv("EMBER_SHARING"))
		cfg.sharing = getenv("EMBER_SHARING");
	/* before the image is read: ELF parsing and disassembly of untrusted code run inside it */
	if (!a.no_sandbox && sbx_install(sbx_groups(cfg.backend), err, sizeof(err))) {
		fprintf(stderr, "ember: %s\n", err);
		free(prog.code);
		return CLI_EXIT_EMBER;
	}
	pool_shell_target(0); /* one program, run now: no shells to prepare ahead */
	cold_land_keep(0);    /* nor a landing for a second start from disk */
	if (stats)
		vm_dev_prepare(); /* what the process keeps is not the function's */
	int fds_before = stats ? open_fds() : 0;
	uint64_t t0 = base_now_ns();
	int rc = ember_load(&cfg, &fn, err, sizeof(err));
	uint64_t load_us = base_us_since(t0);
	free(prog.code);
	if (oci) /* the files are packed in memory (or in the state folder) now */
		cli_oci_done(oci_root);
	if (rc) {
		cli_load_error("ember", rc, err);
		return CLI_EXIT_EMBER;
	}
	uint8_t *req;
	size_t req_len;
	if (base_read_fd(0, MAX_REQUEST, &req, &req_len)) {
		ember_unload(fn);
		fprintf(stderr, "ember: cannot read the request from stdin\n");
		return CLI_EXIT_EMBER;
	}
	struct run_stats *rs = calloc(1, sizeof(*rs));
	if (!rs) {
		free(req);
		ember_unload(fn);
		return CLI_EXIT_EMBER;
	}
	rs->invocations = json_array();
	int code = 0;
	for (long i = 0; i < a.repeat; i++) {
		struct ember_result res;
		ember_invoke(fn, req, req_len, &res);
		base_write_all(1, res.out, res.out_len);
		base_write_all(2, res.log, res.log_len);
		if (res.outcome != EMBER_OK)
			fprintf(stderr, "ember: %s\n", res.message);
		if (res.prefetch_buffered)
			fprintf(stderr,
				"ember: warning: the file system of %s has no O_DIRECT: the "
				"working set was read through the page cache\n",
				cfg.state_dir);
		add_result(rs, &res);
		code = res.exit_code;
		ember_result_free(&res);
	}
	free(req);
	if (stats)
		ember_settle(fn); /* what a cold start checked after its response counts too */
	json_t *st = stats ? stats_json(fn, rs, code, load_us) : NULL;
	if (!stats)
		json_decref(rs->invocations);
	free(rs);
	ember_unload(fn);
	/* machines its processes left, kept for a next fork: not its own */
	pool_shell_drain();
	if (st) { /* what the function left open on the host once unloaded: 0 */
		json_object_set_new(st, "host_fds_leaked", json_integer(open_fds() - fds_before));
		cli_print_json(stderr, st);
	}
	return code;
}
