/* `ember bench`: subcommands that measure Ember next to its floor and its peers. */
#include <getopt.h>
#include <jansson.h>
#include <libgen.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/bench.h"
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
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
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

void bench_print(const struct bench_row *rows, size_t n, int json, const char *floor_name)
{
	double floor = NAN;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(rows[i].name, floor_name))
			floor = rows[i].p50_us;
	if (json) {
		json_t *res = json_array();
		for (size_t i = 0; i < n; i++) {
			json_t *r = json_pack("{s:s,s:f,s:f,s:f}", "name", rows[i].name, "p50_us",
					      rows[i].p50_us, "p99_us", rows[i].p99_us,
					      "ratio_to_floor", rows[i].p50_us / floor);
			json_object_set_new(r, "exits_per_invocation",
					    rows[i].exits >= 0 ? json_real(rows[i].exits)
							       : json_null());
			if (rows[i].extra >= 0)
				json_object_set_new(r, rows[i].extra_name,
						    json_real(rows[i].extra));
			json_array_append_new(res, r);
		}
		cli_print_json(stdout, json_pack("{s:o}", "results", res));
		return;
	}
	printf("%-26s %12s %12s %10s %12s  %s\n", "name", "p50_us", "p99_us", "exits/inv",
	       "x floor", "note");
	for (size_t i = 0; i < n; i++) {
		char exits[32] = "-", note[64] = "";
		if (rows[i].exits >= 0)
			snprintf(exits, sizeof(exits), "%.1f", rows[i].exits);
		if (rows[i].extra >= 0)
			snprintf(note, sizeof(note), "%s %.1f", rows[i].extra_name, rows[i].extra);
		printf("%-26s %12.1f %12.1f %10s %12.2f  %s\n", rows[i].name, rows[i].p50_us,
		       rows[i].p99_us, exits, rows[i].p50_us / floor, note);
	}
}

double bench_spawn(const char *path, const void *req, size_t len)
{
	int in[2], out[2];
	if (pipe(in))
		return -1;
	if (pipe(out)) {
		close(in[0]);
		close(in[1]);
		return -1;
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	posix_spawn_file_actions_addclose(&fa, in[1]);
	posix_spawn_file_actions_addclose(&fa, out[0]);
	char *argv[] = {(char *)path, NULL};
	double t = bench_now_us();
	pid_t pid;
	int spawned = !posix_spawn(&pid, path, &fa, NULL, argv, environ);
	close(in[0]);
	close(out[1]);
	int wrote = spawned && !cli_write_all(in[1], req, len);
	close(in[1]);
	char buf[4096];
	while (read(out[0], buf, sizeof(buf)) > 0)
		;
	int st = -1;
	if (spawned)
		waitpid(pid, &st, 0);
	double dt = bench_now_us() - t;
	close(out[0]);
	posix_spawn_file_actions_destroy(&fa);
	return wrote && st == 0 ? dt : -1;
}

int bench_parse(int argc, char **argv, struct bench_opts *o, int max_iters, int extras,
		const char *help)
{
	static const struct option opts[] = {
	    {"json", no_argument, NULL, 'j'},
	    {"iterations", required_argument, NULL, 'i'},
	    {"backend", required_argument, NULL, 'b'},
	    {"syscalls", required_argument, NULL, 's'},
	    {"functions", required_argument, NULL, 'f'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	o->backend = getenv("EMBER_BACKEND");
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'j')
			o->json = 1;
		else if (c == 'i')
			o->iters = atoi(optarg);
		else if (c == 'b')
			o->backend = optarg;
		else if (c == 's')
			o->syscalls = optarg;
		else if (c == 'f')
			o->functions = optarg;
		else if (c == 'h')
			return fputs(help, stdout), 0;
		else
			return fputs(help, stderr), CLI_EXIT_EMBER;
	}
	if (!extras && (o->syscalls || o->functions))
		return fputs(help, stderr), CLI_EXIT_EMBER; /* not options of this benchmark */
	if (o->iters < 1 || o->iters > max_iters)
		return fprintf(stderr, "ember bench: --iterations from 1 to %d\n", max_iters),
		       CLI_EXIT_EMBER;
	if (!o->backend)
		o->backend = "kvm";
	return -1;
}

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} benches[] = {
    {"latency", cli_bench_latency, "per-invocation latency: Ember next to its floor and peers"},
    {"suite", cli_bench_suite, "the function suite: init, warm latency, exits, pages, native"},
    {"cold", cli_bench_cold, "cold starts from snapshots on disk: lazy next to REAP"},
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
		fprintf(f, "  %-10s %s\n", benches[i].name, benches[i].help);
	return f == stdout ? 0 : CLI_EXIT_EMBER;
}
