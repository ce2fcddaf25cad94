/* `ember bench`: subcommands that measure Ember next to its floor and its peers. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "ember/abi.h"
#include "cli/cli.h"

extern char **environ;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double bench_quantile(double *us, size_t n, double q)
{
	if (n == 0)
		return NAN;
	qsort(us, n, sizeof(*us), cmp_double);
	size_t i = (size_t)(q * (double)(n - 1) + 0.5);
	return us[i < n ? i : n - 1];
}

double bench_now_us(void)
{
	return (double)base_now_ns() / 1e3;
}

const char *bench_build_dir(void)
{
	static char dir[4096];
	ssize_t n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
	if (n <= 0)
		return ".";
	dir[n] = 0;
	return dirname(dir);
}

double bench_spawn_out(const char *path, const void *req, size_t len, char *out, size_t cap)
{
	return bench_spawn_argv(path, NULL, req, len, out, cap);
}

double bench_spawn_argv(const char *path, const char *const *args, const void *req, size_t len,
			char *out, size_t cap)
{
	return bench_spawn_code(path, args, NULL, req, len, out, cap);
}

double bench_spawn_code(const char *path, const char *const *args, const char *code,
			const void *req, size_t len, char *out, size_t cap)
{
	int in[2], pout[2];
	if (out && cap)
		out[0] = 0;
	if (pipe(in))
		return -1;
	if (pipe(pout)) {
		close(in[0]);
		close(in[1]);
		return -1;
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	posix_spawn_file_actions_adddup2(&fa, pout[1], 1);
	posix_spawn_file_actions_addclose(&fa, in[1]);
	posix_spawn_file_actions_addclose(&fa, pout[0]);
	if (code) /* a runtime's source, where Ember gives it */
		posix_spawn_file_actions_addopen(&fa, EMBER_CODE_FD, code, O_RDONLY, 0);
	char *argv[16] = {(char *)path};
	for (int i = 0; args && args[i] && i < 14; i++)
		argv[i + 1] = (char *)args[i];
	double t = bench_now_us();
	pid_t pid;
	int spawned = !posix_spawn(&pid, path, &fa, NULL, argv, environ);
	close(in[0]);
	close(pout[1]);
	int wrote = spawned && !base_write_all(in[1], req, len);
	close(in[1]);
	char buf[4096];
	size_t got = 0;
	ssize_t n;
	while ((n = read(pout[0], buf, sizeof(buf))) > 0) {
		size_t keep = out && got + 1 < cap ? cap - 1 - got : 0;
		keep = keep < (size_t)n ? keep : (size_t)n;
		if (keep) /* the start of the output; the rest is drained */
			memcpy(out + got, buf, keep);
		got += keep;
	}
	int st = -1;
	if (spawned)
		waitpid(pid, &st, 0);
	double dt = bench_now_us() - t;
	close(pout[0]);
	posix_spawn_file_actions_destroy(&fa);
	if (out && cap)
		out[got] = 0;
	return wrote && st == 0 ? dt : -1;
}

double bench_spawn(const char *path, const void *req, size_t len)
{
	return bench_spawn_out(path, req, len, NULL, 0);
}

static json_t *keep_sink;

void bench_keep_to(json_t *sink)
{
	keep_sink = sink;
}

void bench_keep(const char *key, const double *us, size_t n)
{
	if (!keep_sink)
		return;
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, bench_json_num(us[i]));
	json_object_set_new(keep_sink, key, a);
}

static const struct {
	const char *name;
	const char *run[2];
	int n;
} backend_choices[] = {
    {"both", {"kvm", "ptrace"}, 2},
    {"kvm", {"kvm", NULL}, 1},
    {"ptrace", {"ptrace", NULL}, 1},
    {"auto", {"auto", NULL}, 1},
};

/* both without KVM: ptrace alone, and why (on stderr under --json, which stays one object) */
static void no_kvm(struct bench_opts *o)
{
	fprintf(o->json ? stderr : stdout, "kvm: /dev/kvm: %s — only ptrace measured\n",
		strerror(errno));
	o->backend = o->backends[0] = "ptrace";
	o->backends[1] = NULL;
	o->nbackends = 1;
}

/* what --backend asks for: both (the default) needs a /dev/kvm that opens, else ptrace alone */
int bench_backends(struct bench_opts *o)
{
	if (!o->backend)
		o->backend = "both";
	for (size_t i = 0; i < sizeof(backend_choices) / sizeof(backend_choices[0]); i++) {
		if (strcmp(o->backend, backend_choices[i].name))
			continue;
		o->backends[0] = backend_choices[i].run[0];
		o->backends[1] = backend_choices[i].run[1];
		o->nbackends = backend_choices[i].n;
		int fd = o->nbackends == 2 ? open("/dev/kvm", O_RDWR | O_CLOEXEC) : -1;
		if (fd >= 0)
			close(fd);
		else if (o->nbackends == 2)
			no_kvm(o);
		return -1;
	}
	fprintf(stderr, "ember bench: --backend both, kvm, ptrace or auto, not '%s'\n", o->backend);
	return CLI_EXIT_EMBER;
}

const struct opt bench_common_opts[] = {
    OPT_FLAG("json", 0, struct bench_opts, json, "JSON on stdout, not tables"),
    OPT_STRING("backend", 0, struct bench_opts, backend, "B",
	       "both, kvm, ptrace or auto (above; default $EMBER_BACKEND, else both)"),
    OPT_END(),
};

int bench_parse(const struct opt_cmd *c, int argc, char **argv, struct bench_opts *o)
{
	int first, rc;
	o->backend = getenv("EMBER_BACKEND");
	if ((rc = opt_parse(c, o, argc, argv, &first)) >= 0)
		return rc;
	return bench_backends(o);
}

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} benches[] = {
    {"latency", cli_bench_latency, "one invocation next to its floor and peers, KVM and ptrace"},
    {"suite", cli_bench_suite,
     "the function suite: init, warm latency, exits, native; KVM next to ptrace"},
    {"cold", cli_bench_cold, "cold starts from disk: lazy next to REAP, KVM next to ptrace"},
    {"memory", cli_bench_memory,
     "warm virtines' PSS per sharing mode (off, ksm, upm); how many fit"},
    {"all", cli_bench_all,
     "everything above and the peers (bwrap, runc, gVisor, a microVM): JSON and plots"},
    {"programs", cli_bench_programs,
     "programs (C, Go, threads, 2 vCPUs) warm next to native; KVM next to ptrace"},
    {"conformance", cli_bench_conformance,
     "Go's, CPython's and gVisor's own tests, case by case, natively and in Ember"},
};

int cli_bench(int argc, char **argv)
{
	if (argc >= 2) {
		for (size_t i = 0; i < sizeof(benches) / sizeof(benches[0]); i++)
			if (!strcmp(argv[1], benches[i].name))
				return benches[i].fn(argc - 1, argv + 1);
	}
	FILE *f = argc >= 2 && strcmp(argv[1], "--help") ? stderr : stdout;
	fprintf(f, "usage: ember bench NAME [--json] [OPTIONS]\n\nbenchmarks:\n");
	for (size_t i = 0; i < sizeof(benches) / sizeof(benches[0]); i++)
		fprintf(f, "  %-12s %s\n", benches[i].name, benches[i].help);
	return f == stdout ? 0 : CLI_EXIT_EMBER;
}
