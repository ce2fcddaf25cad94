/* `ember bench suite`: every function of the suite, its init, warm invocations and native run. */
#include <fcntl.h>
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "cli/cli.h"
#include "ember/ember.h"
#include "pool/pool.h"

#define WARMUP 3 /* invocations run before the measured ones */

static const struct {
	const char *name;
	const char *runtime; /* NULL: a C function, built to <build>/functions/<name> */
} suite[] = {
    {"hello", NULL},
    {"sha256", NULL},
    {"aes", NULL},
    {"matmul", NULL},
    {"lr_training", NULL},
    {"image_rotate", NULL},
    {"compress", NULL},
    {"rnn", NULL},
    {"hello-js", "duktape"},
    {"aes-js", "duktape"},
    {"json", "duktape"},
    {"hello-lua", "lua"},
    {"template", "lua"},
    {"json-py", "python-static"},
    {"template-py", "python-static"},
    {"matmul-py", "python-static"},
    {"compress-py", "python-static"},
    {"model-py", "python-static"},
};
#define NSUITE (sizeof(suite) / sizeof(suite[0]))

struct suite_opts {
	const char *backend;
	const char *syscalls;
	int iters;
	int native;	  /* also run the C functions natively */
	char build[4096]; /* the build directory */
	char src[4200];	  /* the function suite's sources: functions/ of the repository */
};

struct suite_row {
	double load_ms, init_ms;
	uint64_t snapshot_pages;
	double p50_us, p99_us, exits, pages, native_us; /* native_us < 0: none */
};

/* the whole file at dir/name/file; -1 when it cannot be read */
static int read_file(const char *dir, const char *name, const char *file, uint8_t **buf,
		     size_t *len)
{
	char path[4400];
	snprintf(path, sizeof(path), "%s/%s/%s", dir, name, file);
	return base_read_file(path, 64 << 20, buf, len);
}

/* N warm invocations after the warm-up: latency, exits and pages touched per invocation */
static int measure(const struct suite_opts *o, const char *name, struct ember_function *fn,
		   const uint8_t *req, size_t len, struct suite_row *row)
{
	uint8_t *want = NULL;
	size_t want_len = 0;
	int check = !read_file(o->src, name, "small.out", &want, &want_len);
	double *us = calloc((size_t)o->iters, sizeof(double));
	int rc = us ? 0 : -1;
	for (int i = 0; !rc && i < o->iters + WARMUP; i++) {
		struct ember_result res;
		double t = bench_now_us();
		ember_invoke(fn, req, len, &res);
		double dt = bench_now_us() - t;
		if (res.outcome != EMBER_OK || res.status != 0) {
			fprintf(stderr, "ember bench: %s: exit code %d: %s\n", name, res.exit_code,
				res.message);
			rc = -1;
		} else if (check && (res.out_len != want_len || memcmp(res.out, want, want_len))) {
			fprintf(stderr, "ember bench: %s: the output differs from small.out\n",
				name);
			rc = -1;
		} else if (i >= WARMUP) {
			us[i - WARMUP] = dt;
			row->exits += (double)res.exits / o->iters;
			row->pages += (double)res.pages_touched / o->iters;
		}
		ember_result_free(&res);
	}
	if (!rc) {
		char key[160];
		snprintf(key, sizeof(key), "%s/%s/%s", name, o->backend, o->syscalls);
		bench_keep(key, us, (size_t)o->iters);
		row->p50_us = bench_quantile(us, (size_t)o->iters, 0.5);
		row->p99_us = bench_quantile(us, (size_t)o->iters, 0.99);
	}
	free(us);
	free(want);
	return rc;
}

/* the same C function as a native process, p50 of N spawns */
static int measure_native(const struct suite_opts *o, const char *name, const uint8_t *req,
			  size_t len, struct suite_row *row)
{
	char path[4400];
	snprintf(path, sizeof(path), "%s/functions/%s", o->build, name);
	double *us = calloc((size_t)o->iters, sizeof(double));
	int rc = us ? 0 : -1;
	for (int i = 0; !rc && i < o->iters; i++)
		if ((us[i] = bench_spawn(path, req, len)) < 0) {
			fprintf(stderr, "ember bench: %s: the native run failed\n", path);
			rc = -1;
		}
	if (!rc)
		row->native_us = bench_quantile(us, (size_t)o->iters, 0.5);
	free(us);
	return rc;
}

static int bench_one(const struct suite_opts *o, size_t k, struct suite_row *row)
{
	const char *name = suite[k].name, *lang = suite[k].runtime;
	char image[4400], source[4400], files[4400], err[300] = "";
	const char *argv[3] = {image, NULL, NULL};
	uint8_t *req = NULL;
	size_t len;
	struct ember_function *fn = NULL;
	struct cli_program p = {0};
	struct ember_config cfg = {.image = image,
				   .argv = argv,
				   .backend = o->backend,
				   .syscalls = o->syscalls,
				   .pool_size = 1};
	int rc = -1;
	if (read_file(o->src, name, "small.req", &req, &len)) {
		snprintf(err, sizeof(err), "cannot read small.req in %.200s", o->src);
		goto out;
	}
	if (lang) { /* the source, its runtime and the runtime's files, as ember run finds them */
		snprintf(source, sizeof(source), "%s/%s/handler.%s", o->src, name,
			 cli_runtime_ext(lang));
		if (cli_program(lang, source, &p, err, sizeof(err)) ||
		    cli_program_config(&p, &cfg, err, sizeof(err)))
			goto out;
	} else {
		snprintf(image, sizeof(image), "%s/functions/%s", o->build, name);
	}
	/* the files the build made for it (functions/<name>/files.py), as test_suite_virtine */
	cfg.files = cli_suite_files(o->build, name, files, sizeof(files));
	double t = bench_now_us();
	if (ember_load(&cfg, &fn, err, sizeof(err)))
		goto out;
	row->load_ms = (bench_now_us() - t) / 1000;
	struct ember_info info;
	ember_info(fn, &info);
	row->init_ms = (double)info.init_us / 1000;
	row->snapshot_pages = info.snapshot_pages;
	row->native_us = -1;
	rc = measure(o, name, fn, req, len, row);
	if (!rc && !lang && o->native)
		rc = measure_native(o, name, req, len, row);
out:
	if (err[0])
		fprintf(stderr, "ember bench: %s: %s\n", name, err);
	if (fn)
		ember_unload(fn);
	free(p.code);
	free(req);
	return rc;
}

static json_t *row_json(const struct suite_row *r)
{
	return json_pack("{s:f,s:I,s:f,s:f,s:f,s:f}", "init_ms", r->init_ms, "snapshot_pages",
			 (json_int_t)r->snapshot_pages, "warm_p50_us", r->p50_us, "warm_p99_us",
			 r->p99_us, "exits_per_invocation", r->exits, "pages_touched", r->pages);
}

/* one mode: rows[0] only; both: rows[0] trap, rows[1] guest, and their ratio */
static json_t *suite_json(struct suite_row (*rows)[2], size_t n, int both)
{
	json_t *res = json_array();
	for (size_t i = 0; i < n; i++) {
		const struct suite_row *r = rows[i];
		json_t *e = json_pack("{s:s,s:o}", "name", suite[i].name, "native_us",
				      r->native_us >= 0 ? json_real(r->native_us) : json_null());
		if (both) {
			json_object_set_new(e, "trap", row_json(&r[0]));
			json_object_set_new(e, "guest", row_json(&r[1]));
			json_object_set_new(e, "guest_over_trap_p50",
					    json_real(r[1].p50_us / r[0].p50_us));
		} else {
			json_object_update(e, row_json(&r[0]));
		}
		json_array_append_new(res, e);
	}
	return json_pack("{s:o}", "results", res);
}

/* both modes side by side: latency and exits, and guest over trap */
static void print_both(struct suite_row (*rows)[2], size_t n)
{
	printf("%-13s %10s %10s %6s %10s %10s %6s %11s %10s\n", "name", "trap_p50", "trap_p99",
	       "exits", "guest_p50", "guest_p99", "exits", "guest/trap", "native_us");
	for (size_t i = 0; i < n; i++) {
		const struct suite_row *t = &rows[i][0], *g = &rows[i][1];
		char native[32] = "-";
		if (t->native_us >= 0)
			snprintf(native, sizeof(native), "%.1f", t->native_us);
		printf("%-13s %10.1f %10.1f %6.1f %10.1f %10.1f %6.1f %11.2f %10s\n", suite[i].name,
		       t->p50_us, t->p99_us, t->exits, g->p50_us, g->p99_us, g->exits,
		       g->p50_us / t->p50_us, native);
	}
}

static void print_table(struct suite_row (*rows)[2], size_t n)
{
	printf("%-13s %8s %8s %10s %12s %12s %10s %10s %10s\n", "name", "load_ms", "init_ms",
	       "snap_pages", "warm_p50_us", "warm_p99_us", "exits/inv", "pages/inv", "native_us");
	for (size_t i = 0; i < n; i++) {
		const struct suite_row *r = &rows[i][0];
		char native[32] = "-";
		if (r->native_us >= 0)
			snprintf(native, sizeof(native), "%.1f", r->native_us);
		printf("%-13s %8.1f %8.1f %10llu %12.1f %12.1f %10.1f %10.1f %10s\n", suite[i].name,
		       r->load_ms, r->init_ms, (unsigned long long)r->snapshot_pages, r->p50_us,
		       r->p99_us, r->exits, r->pages, native);
	}
}

#define AT(mode, field) (sizeof(struct suite_row) * (mode) + offsetof(struct suite_row, field))
/* KVM over ptrace, per function: with both modes (trap, guest), and with one */
static const struct bench_ratio ratios_both[] = {
    {"init_ms", AT(0, init_ms)},  {"trap_p50", AT(0, p50_us)},	{"trap_p99", AT(0, p99_us)},
    {"guest_p50", AT(1, p50_us)}, {"guest_p99", AT(1, p99_us)},
};
static const struct bench_ratio ratios_one[] = {
    {"load_ms", AT(0, load_ms)},
    {"init_ms", AT(0, init_ms)},
    {"warm_p50", AT(0, p50_us)},
    {"warm_p99", AT(0, p99_us)},
};

/* one backend's table (rows[fn][mode]) as with one backend alone */
static void print_one(const struct suite_opts *o, const char *mode, int both,
		      struct suite_row (*rows)[2], size_t n)
{
	printf("backend %s, syscalls %s, %d warm invocations per function (after %d to warm up)\n",
	       o->backend, mode, o->iters, WARMUP);
	if (both)
		print_both(rows, n);
	else
		print_table(rows, n);
}

/* both backends (rows[backend][fn][mode]): kvm's table, ptrace's, and their ratios */
static void print_backends(const struct bench_opts *bo, struct suite_opts o, const char *mode,
			   int both, struct suite_row (*rows)[NSUITE][2])
{
	const char *names[NSUITE];
	for (size_t i = 0; i < NSUITE; i++)
		names[i] = suite[i].name;
	const struct bench_ratio *cols = both ? ratios_both : ratios_one;
	size_t ncols = both ? sizeof(ratios_both) / sizeof(ratios_both[0])
			    : sizeof(ratios_one) / sizeof(ratios_one[0]);
	if (bo->json) {
		bench_print_backends(suite_json(rows[0], NSUITE, both),
				     suite_json(rows[1], NSUITE, both),
				     bench_ratio_json(names, NSUITE, rows[0], rows[1],
						      sizeof(rows[0][0]), cols, ncols));
		return;
	}
	bench_both_line("function");
	for (int b = 0; b < 2; b++) {
		o.backend = bo->backends[b];
		print_one(&o, mode, both, rows[b], NSUITE);
		printf("\n");
	}
	printf("KVM over ptrace (each figure's kvm / ptrace; native_us is measured once)\n");
	bench_ratio_print(names, NSUITE, rows[0], rows[1], sizeof(rows[0][0]), cols, ncols);
}

static const char suite_head[] =
    "usage: ember bench suite [--json] [--iterations N] [--backend both|kvm|ptrace|auto]\n"
    "                         [--syscalls both|trap|guest] [--functions DIR]\n"
    "\n"
    "For every function of the suite (C, JavaScript, Lua and Python): p50 and p99 of N warm\n"
    "invocations with its small request (after 3 more to warm up; default N = 50) and the\n"
    "exits per invocation, with every syscall trapping and with the in-guest runtime side\n"
    "by side and their ratio (--syscalls both, the default), and for C functions the p50 of\n"
    "the same binary spawned natively with the request on a pipe. With one mode, also the\n"
    "load (wall time), its initialisation, the pages its snapshot holds and the guest pages\n"
    "touched per invocation. Each invocation's output is checked against small.out.\n"
    "\n" BENCH_HELP_BACKEND
    "With both, that table for KVM, then for ptrace (the native run is measured once and\n"
    "shown in both), then KVM over ptrace per function (init_ms, and p50 and p99 per mode;\n"
    "load_ms too with one mode) and each column's median; --json gives {\"backends\": {\"kvm\":\n"
    "{\"results\": [...]}, \"ptrace\": {...}}, \"kvm_over_ptrace\": [...]}, and with one backend\n"
    "{\"results\": [...]}.\n"
    "\n"
    "Needs the build's functions/ and runtimes/ folders next to the ember binary, and the\n"
    "suite's sources (DIR, default functions/ of the repository holding the build folder).\n"
    "A function whose files the build made (functions/NAME/files) runs with them as its\n"
    "--files.\n\n"
    "options:\n";

static const struct opt suite_opts[] = {
    OPT_GROUP(bench_common_opts),
    BENCH_OPT_ITERS(1000000, "warm invocations per function and mode (default 50)"),
    OPT_STRING("syscalls", 0, struct bench_opts, syscalls, "MODE",
	       "both (default), trap or guest: the modes measured"),
    OPT_STRING("functions", 0, struct bench_opts, functions, "DIR",
	       "the suite's sources (default functions/ of the repository)"),
    OPT_END(),
};

static const struct opt_cmd suite_cmd = BENCH_CMD("bench suite", suite_head, suite_opts);

int cli_bench_suite(int argc, char **argv)
{
	struct bench_opts bo = {.iters = 50};
	int rc = bench_parse(&suite_cmd, argc, argv, &bo);
	if (rc >= 0)
		return rc;
	const char *mode = bo.syscalls ? bo.syscalls : "both";
	int both = !strcmp(mode, "both");
	if (!both && strcmp(mode, "trap") && strcmp(mode, "guest"))
		return fprintf(stderr, "ember bench: --syscalls both, trap or guest, not '%s'\n",
			       mode),
		       CLI_EXIT_EMBER;
	struct suite_opts o = {.backend = bo.backend,
			       .syscalls = both ? "trap" : mode,
			       .iters = bo.iters,
			       .native = 1};
	const char *src = bo.functions;
	snprintf(o.build, sizeof(o.build), "%s", bench_build_dir());
	if (src)
		snprintf(o.src, sizeof(o.src), "%s", src);
	else
		snprintf(o.src, sizeof(o.src), "%s/../functions", o.build);
	pool_shell_target(0); /* warm invocations only: no shells to prepare in the background */
	struct suite_row rows[2][NSUITE][2];
	memset(rows, 0, sizeof(rows));
	for (size_t i = 0; i < NSUITE; i++) {
		for (int b = 0; b < bo.nbackends; b++) {
			struct suite_opts t = o, g = o;
			t.backend = g.backend = bo.backends[b];
			t.native = b == 0; /* the native run is the same on every backend */
			g.syscalls = "guest";
			g.native = 0;
			if (bench_one(&t, i, &rows[b][i][0]) ||
			    (both && bench_one(&g, i, &rows[b][i][1])))
				return CLI_EXIT_EMBER;
			rows[b][i][0].native_us = rows[0][i][0].native_us;
		}
	}
	if (bo.nbackends == 2)
		print_backends(&bo, o, mode, both, rows);
	else if (bo.json)
		cli_print_json(stdout, suite_json(rows[0], NSUITE, both));
	else
		print_one(&o, mode, both, rows[0], NSUITE);
	return 0;
}
