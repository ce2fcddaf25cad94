/* `ember bench programs`: real programs (C, Go, threads, processes) in virtines next to the same
 * natively. */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/bench_programs.h"
#include "cli/cli.h"

#define GIB	      (1ULL << 30)
#define THREADS_K     100     /* creates and joins per invocation of thread_create_join */
#define WORK_ROUNDS   8000000 /* parallel_cpus2: ~13 ms of one core per thread here */
#define PROCS_K	      10 /* fork_exec_wait, fork_wait: forks per invocation (~5 ms each on KVM) */
#define ITERS_DEFAULT 100

/* Debian's dynamic programs, as a function would use them: a JSON request through a jq filter;
 * an SQL query over a table made in memory */
static const char *const jq_args[] = {"-c", "{n: (.n|add), up: (.name|ascii_upcase)}", NULL};
static const char jq_req[] = "{\"name\":\"Ember\",\"n\":[1,2,3]}";
static const char *const sql_args[] = {":memory:", NULL};
static const char sql_req[] =
    "create table t(x); insert into t values (1), (2), (3); select sum(x), count(*) from t;\n";

static const char *const node_rt[] = {"js", NULL};
static const char *const python_rt[] = {"python", NULL};

static const struct prog_row rows[] = {
    {"exit_floor", prog_floor, "guest/exitfloor.musl", 0, NULL, NULL, GOAL_NONE, 0, NULL, NULL,
     NULL},
    {"hello_warm", prog_warm, "guest/hello.musl", 0, NULL, NULL, GOAL_EXITS_EQ, 1, NULL, NULL,
     NULL},
    /* Go's runtime reserves its heap arenas up front: more than the default 64 MiB */
    {"go_hello_warm", prog_warm, "corpus/go_hello", GIB, NULL, NULL, GOAL_RATIO_LE, 0.1, NULL, NULL,
     NULL},
    {"thread_create_join", prog_threads, "guest/threadbench.musl", 0, NULL,
     "p50_us / native_p50_us, per create+join timed inside the program", GOAL_RATIO_LE, 2, NULL,
     NULL, NULL},
    {"parallel_cpus2", prog_parallel, "guest/parwork.musl", 0, "speedup",
     "cpus1_p50_us / p50_us: 1 vCPU over 2, the same work", GOAL_RATIO_GE, 1.7, NULL, NULL, NULL},
    {"jq_warm", prog_warm, "/usr/bin/jq", 0, NULL, NULL, GOAL_RATIO_LE, 1, jq_args, jq_req,
     "{\"n\":6,\"up\":\"EMBER\"}"},
    {"sqlite3_warm", prog_warm, "/usr/bin/sqlite3", 0, NULL, NULL, GOAL_RATIO_LE, 1, sql_args,
     sql_req, "6|3"},
    /* the request is forkbench's mode, its count added per invocation */
    {"fork_exec_wait", prog_procs, "guest/forkbench.musl", 0, NULL,
     "p50_us / native_p50_us, per fork+execve+wait4 timed inside the program", GOAL_RATIO_LE, 1,
     NULL, "exec", NULL},
    {"fork_wait", prog_procs, "guest/forkbench.musl", 0, NULL,
     "p50_us / native_p50_us, per fork+_exit+wait4 timed inside the program", GOAL_NONE, 0, NULL,
     "fork", NULL},
    /* Debian's Node.js and CPython: a warm invocation >= 20x faster than a process start */
    {"node_hello", prog_runtime, "functions/hello-node/handler.js", 0, NULL,
     "p50_us / native_p50_us: a warm invocation over a node process for the same handler",
     GOAL_RATIO_LE, 0.05, node_rt, "Ember", "Hello, Ember!"},
    {"python_hello", prog_runtime, "functions/hello-python/handler.py", 0, NULL,
     "p50_us / native_p50_us: a warm invocation over a python3.11 process for the same handler",
     GOAL_RATIO_LE, 0.05, python_rt, "Ember", "Hello, Ember!"},
    {"numpy_matmul", prog_runtime, "functions/matmul-numpy/handler.py", 0, NULL, NULL, GOAL_NONE, 0,
     python_rt, "Ember", "trace "},
};
#define NROWS (sizeof(rows) / sizeof(rows[0]))

static const char programs_head[] =
    "usage: ember bench programs [--json] [--iterations N] [--backend both|kvm|ptrace|auto]\n"
    "                            [--syscalls guest|trap]\n"
    "\n"
    "Real programs in warm virtines next to the same binaries run natively, in one run. Each\n"
    "row takes N rounds (default 100, after a few to warm up); a round takes one sample of\n"
    "every figure of the row in turn (Ember's and the native ones), so both see the same\n"
    "machine. p50 and p99 per row, its ratio, its exits per invocation, its goal:\n"
    "\n"
    "  exit_floor          a guest that exits at once, re-entered (10 N samples, 100 at\n"
    "                      least): the price of one exit on this machine, which the goals\n"
    "                      below depend on\n"
    "  hello_warm          build/guest/hello.musl, a warm invocation (its reset included)\n"
    "                      against posix_spawn of the same binary with the request on a pipe,\n"
    "                      read to its end and waited for. Goal: 1 exit per invocation (in\n"
    "                      guest mode; trap mode exits once per system call)\n"
    "  go_hello_warm       build/corpus/go_hello (Go 1.19, static) the same way, 1 GiB of guest\n"
    "                      memory. Goal: ratio <= 0.1\n"
    "  thread_create_join  build/guest/threadbench.musl: 100 pthread create+joins in a row,\n"
    "                      timed by the program on its own monotonic clock, per create+join, in\n"
    "                      a virtine and natively. Also: the same from outside ((invocation\n"
    "                      with 100 - with 0) / 100), the first create+join alone, exits per\n"
    "                      create+join. Goal: ratio <= 2\n"
    "  parallel_cpus2      build/guest/parwork.musl: two threads each running the same\n"
    "                      CPU-bound loop (~13 ms of a core); p50 and p99 with 2 vCPUs, ratio =\n"
    "                      speedup = p50 with 1 vCPU / p50 with 2; natively on 2 CPUs and on 1\n"
    "                      (native_speedup). Goal: speedup >= 1.7. The ptrace backend runs one\n"
    "                      vCPU: there the row is skipped, with Ember's reason\n"
    "  jq_warm             Debian's /usr/bin/jq (dynamic: its closure of this host's ld.so\n"
    "                      and libraries) with a filter, a JSON request, warm, against\n"
    "                      posix_spawn of the same with the same arguments. Goal: ratio <= 1\n"
    "  sqlite3_warm        Debian's /usr/bin/sqlite3 :memory: reading SQL from the request\n"
    "                      (make a table of three rows, sum it), the same way. Goal: ratio <= 1\n"
    "  fork_exec_wait      build/guest/forkbench.musl: 10 rounds in a row of fork, the child's\n"
    "                      execve of /proc/self/exe (the same program, which exits 0 at once)\n"
    "                      and wait4, timed by the program on its own monotonic clock, per\n"
    "                      round, in a warm virtine (each process a virtine of its own) and\n"
    "                      natively. Also: the same from outside ((invocation with 10 - with\n"
    "                      0) / 10), exits per round (exits_per_round; exits is per\n"
    "                      invocation, as elsewhere). Goal: ratio <= 1\n"
    "  fork_wait           the same without the execve: the child calls _exit(0) at once;\n"
    "                      against fork_exec_wait it separates the exec's cost. No goal\n"
    "  node_hello          functions/hello-node/handler.js (OpenFaaS's node18 form) in the\n"
    "                      js runtime (Debian's Node.js) warm, against /usr/bin/node started\n"
    "                      with the same loader and source for each request (a process per\n"
    "                      request). Also: init_ms (load to snapshot; goal <= 300),\n"
    "                      init_exits. Goal: ratio <= 0.05 (20 times faster)\n"
    "  python_hello        functions/hello-python/handler.py (python3-http's form) in the\n"
    "                      python runtime (Debian's CPython 3.11), the same way. Also:\n"
    "                      init_ms (goal <= 100). Goal: ratio <= 0.05\n"
    "  numpy_matmul        functions/matmul-numpy/handler.py: a 256x256 matrix product with\n"
    "                      Debian's numpy, warm, against the same handler in a python3.11\n"
    "                      process. No goal\n"
    "\n"
    "ratio is p50 / native p50 unless said otherwise. Ember's rows run in --syscalls MODE\n"
    "(default $EMBER_SYSCALLS, else Ember's own default: guest where it can run); each row\n"
    "says the mode it ran in (mode).\n"
    "\n" BENCH_HELP_BACKEND "\n"
    "Prints a table (each row on KVM, then on ptrace), then each row's own figures, with the\n"
    "machine's load average at the start and the end; --json gives {\"iterations\",\n"
    "\"threads_k\", \"work_rounds\", \"procs_k\", \"load_start\", \"load_end\", \"results\":\n"
    "[{\"name\", \"backend\", \"syscalls\", \"p50_us\", \"p99_us\", \"native_p50_us\",\n"
    "\"native_p99_us\", \"ratio\", \"ratio_is\", \"exits\", the row's own figures, \"goal\",\n"
    "\"goal_met\" (null where it does not apply), and \"skipped\" or \"failed\" with the\n"
    "reason}, ...]}: one object per row and backend, figures that do not apply null. Progress\n"
    "goes to stderr. Exit status 0, or 125 when a row failed (a skipped row is no failure).\n"
    "\n"
    "Needs the build's guest/ and corpus/ folders next to the ember binary (make all), and the\n"
    "repository's functions/ (from its root, or beside the build folder).\n\n"
    "options:\n";

static const struct opt programs_opts[] = {
    OPT_GROUP(bench_common_opts),
    BENCH_OPT_ITERS(100000, "rounds per row (default 100)"),
    OPT_STRING("syscalls", 0, struct bench_opts, syscalls, "MODE",
	       "guest or trap: the mode Ember's rows run in (default\n"
	       "$EMBER_SYSCALLS, else Ember's own)"),
    OPT_END(),
};

static const struct opt_cmd programs_cmd =
    BENCH_CMD("bench programs", programs_head, programs_opts);

/* the backend a row runs on: auto named as what it picks (kvm where /dev/kvm opens) */
static const char *resolved(const char *backend)
{
	if (strcmp(backend, "auto"))
		return backend;
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return "ptrace";
	close(fd);
	return "kvm";
}

/* the 1-minute load average: these machines are shared, and a busy one moves every figure */
static double loadavg(void)
{
	double v = NAN;
	FILE *f = fopen("/proc/loadavg", "r");
	if (f && fscanf(f, "%lf", &v) != 1)
		v = NAN;
	if (f)
		fclose(f);
	return v;
}

/* the goals' tally, after the table */
static void goals_line(const struct prog_result *res, size_t n)
{
	int met = 0, judged = 0;
	char goal[64];
	for (size_t i = 0; i < n; i++) {
		int m = prog_goal_met(&res[i], goal, sizeof(goal));
		judged += m >= 0;
		met += m == 1;
	}
	printf("\ngoals met: %d of %d judged (a skipped or failed row, or a goal that does not "
	       "apply, is not judged)\n",
	       met, judged);
}

/* every row, each on one backend and then the other, into res; whether one failed */
static int measure_all(const struct prog_run *r, const struct bench_opts *o,
		       struct prog_result *res)
{
	int failed = 0;
	for (size_t i = 0, n = 0; i < NROWS; i++) {
		for (int b = 0; b < o->nbackends; b++, n++) {
			struct prog_result *out = &res[n];
			*out = (struct prog_result){.row = &rows[i],
						    .backend = resolved(o->backends[b])};
			out->p50_us = out->p99_us = out->native_p50_us = NAN;
			out->native_p99_us = out->ratio = out->exits = NAN;
			fprintf(stderr, "bench programs: %s on %s\n", rows[i].name, out->backend);
			rows[i].measure(r, &rows[i], out->backend, out);
			failed |= out->failed[0] != 0;
			if (out->failed[0])
				fprintf(stderr, "bench programs: %s on %s failed: %s\n",
					rows[i].name, out->backend, out->failed);
		}
	}
	return failed;
}

int cli_bench_programs(int argc, char **argv)
{
	struct bench_opts o = {.iters = ITERS_DEFAULT};
	int rc = bench_parse(&programs_cmd, argc, argv, &o);
	if (rc >= 0)
		return rc;
	const char *mode = o.syscalls ? o.syscalls : cli_env("EMBER_SYSCALLS");
	if (mode && strcmp(mode, "guest") && strcmp(mode, "trap"))
		return opt_usage_error(&programs_cmd, "--syscalls guest or trap");
	struct prog_run r = {.iters = o.iters,
			     .threads_k = THREADS_K,
			     .work = WORK_ROUNDS,
			     .procs_k = PROCS_K,
			     .syscalls = mode};
	snprintf(r.dir, sizeof(r.dir), "%s", bench_build_dir());
	struct prog_result res[NROWS * 2];
	size_t n = NROWS * (size_t)o.nbackends;
	r.load[0] = loadavg();
	int failed = measure_all(&r, &o, res);
	r.load[1] = loadavg();
	if (o.json) {
		cli_print_json(stdout, prog_json(&r, res, n));
		return failed ? CLI_EXIT_EMBER : 0;
	}
	if (o.nbackends == 2)
		bench_both_line("row");
	printf("%d rounds per row, each taking Ember's and the native samples in turn; ratio: p50 "
	       "over native p50 (parallel_cpus2: the speedup, p50 on 1 vCPU over p50 on 2); load "
	       "average %.2f at the start, %.2f at the end\n",
	       r.iters, r.load[0], r.load[1]);
	prog_table(res, n);
	goals_line(res, n);
	return failed ? CLI_EXIT_EMBER : 0;
}
