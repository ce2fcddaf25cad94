/* `ember bench cold`: cold starts from snapshots on disk, lazy next to REAP, for every function. */
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/bench_cold.h"
#include "cli/cli.h"
#include "ember/ember.h"
#include "pool/pool.h"

static const struct {
	const char *name;
	const char *src;     /* its folder in the suite: requests and expected outputs */
	const char *runtime; /* NULL: a C program */
	int big;	     /* its cold starts take large.req (its large working set) */
} fns[] = {
    {"hello.musl", "hello", NULL, 0},
    {"hello", "hello", NULL, 0},
    {"sha256", "sha256", NULL, 0},
    {"aes", "aes", NULL, 0},
    {"matmul", "matmul", NULL, 0},
    {"lr_training", "lr_training", NULL, 0},
    {"image_rotate", "image_rotate", NULL, 0},
    {"compress", "compress", NULL, 0},
    {"rnn", "rnn", NULL, 0},
    {"hello-js", "hello-js", "duktape", 0},
    {"aes-js", "aes-js", "duktape", 0},
    {"json", "json", "duktape", 0},
    {"hello-lua", "hello-lua", "lua", 0},
    {"template", "template", "lua", 0},
    {"json-py", "json-py", "python-static", 0},
    {"template-py", "template-py", "python-static", 0},
    {"matmul-py", "matmul-py", "python-static", 0},
    {"compress-py", "compress-py", "python-static", 0},
    {"model-py", "model-py", "python-static", 0},
    /* working sets of several to tens of MiB: the whole 8 MiB table, 32 MiB, a 16 MiB JS heap,
     * a Python heap of 60,000 dicts */
    {"model", "model", NULL, 1},
    {"scan", "scan", NULL, 0},
    {"index-js", "index-js", "duktape", 0},
    {"index-py", "index-py", "python-static", 0},
    /* Node.js and CPython as Debian ships them: dynamic programs with their files */
    {"hello-node", "hello-node", "js", 0},
    {"hello-python", "hello-python", "python", 0},
};
#define NFNS (sizeof(fns) / sizeof(fns[0]))

static int read_in(const struct cold_ctx *x, const char *dir, const char *file, uint8_t **buf,
		   size_t *len)
{
	char path[4400];
	snprintf(path, sizeof(path), "%s/%s/%s", x->src, dir, file);
	return base_read_file(path, 64 << 20, buf, len);
}

static int fn_open(const struct cold_ctx *x, size_t k, struct cold_fn *f, char *err, size_t errlen)
{
	char prog[4400];
	memset(f, 0, sizeof(*f));
	f->name = fns[k].name;
	if (!fns[k].runtime && !strcmp(fns[k].name, "hello.musl"))
		snprintf(prog, sizeof(prog), "%s/guest/hello.musl", x->build);
	else if (!fns[k].runtime)
		snprintf(prog, sizeof(prog), "%s/functions/%s", x->build, fns[k].name);
	else
		snprintf(prog, sizeof(prog), "%s/%s/handler.%s", x->src, fns[k].src,
			 cli_runtime_ext(fns[k].runtime));
	if (cli_program(fns[k].runtime, prog, &f->p, err, errlen))
		return -1;
	if (!cli_suite_files(x->build, fns[k].src, f->files, sizeof(f->files)))
		f->files[0] = 0;
	const char *one = fns[k].big ? "large" : "small", *two = fns[k].big ? "small" : "large";
	char req[16], out[16];
	snprintf(req, sizeof(req), "%s.req", one);
	snprintf(out, sizeof(out), "%s.out", one);
	if (read_in(x, fns[k].src, req, &f->small, &f->small_len) ||
	    (snprintf(req, sizeof(req), "%s.req", two),
	     read_in(x, fns[k].src, req, &f->large, &f->large_len)))
		return snprintf(err, errlen, "cannot read its requests in %.200s", x->src), -1;
	if (read_in(x, fns[k].src, out, &f->want, &f->want_len))
		f->want = NULL;
	return 0;
}

static void fn_close(struct cold_fn *f)
{
	free(f->p.code);
	free(f->small);
	free(f->large);
	free(f->want);
}

static int bench_fn(const struct cold_ctx *x, const struct cold_fn *f, struct cold_row *row)
{
	char small[4200], large[4200];
	snprintf(small, sizeof(small), "%s/%s", x->tmp, f->name);
	snprintf(large, sizeof(large), "%s/%s.large", x->tmp, f->name);
	double rec_ms, large_ms, lazy[3], reap[3],
	    *ms = calloc((size_t)x->iters * 3, sizeof(double));
	uint64_t *a = NULL, *b = NULL;
	size_t na = 0, nb = 0;
	int rc = -1;
	if (!ms || cold_record(x, f, small, 0, &rec_ms) ||
	    cold_series(x, f, small, "lazy", ms, lazy, &row->faults_lazy, row) ||
	    cold_series(x, f, small, "reap", ms, reap, &row->faults_reap, row))
		goto out;
	row->lazy_p50_ms = lazy[0];
	row->reap_p50_ms = reap[0];
	row->lazy_resp_ms = lazy[1];
	row->reap_resp_ms = reap[1];
	row->lazy_start_ms = lazy[2];
	row->reap_start_ms = reap[2];
	row->ws_mib = row->ws_pages * 4096 / (1 << 20);
	row->speedup = row->lazy_p50_ms / row->reap_p50_ms;
	row->record_overhead = rec_ms / row->reap_p50_ms;
	if (cold_warm_series(x, f, ms))
		goto out;
	row->warm_p50_ms = bench_quantile(ms, (size_t)x->iters, 0.5);
	if (cold_restore_series(x, f, ms, &row->restore_p50_ms))
		goto out;
	row->reap_over_restore = row->reap_start_ms / row->restore_p50_ms;
	row->cold_over_restore = row->reap_p50_ms / row->restore_p50_ms;
	if (cold_record(x, f, large, 1, &large_ms))
		goto out;
	if (bench_ws_pages(small, &a, &na) || bench_ws_pages(large, &b, &nb)) {
		fprintf(stderr, "ember bench: %s: cannot read the working-set files\n", f->name);
		goto out;
	}
	row->ws_common = cold_jaccard(a, na, b, nb);
	rc = 0;
out:
	cold_rm_rf(small);
	cold_rm_rf(large);
	free(a);
	free(b);
	free(ms);
	return rc;
}

static const char cold_head[] =
    "usage: ember bench cold [--json] [--iterations N] [--backend both|kvm|ptrace|auto]\n"
    "                        [--only NAME,NAME...]\n"
    "\n"
    "Cold starts from snapshots on disk, for hello.musl and every function of the suite, in a\n"
    "temporary state folder under $TMPDIR (default /var/tmp): the snapshot is made, one REAP\n"
    "cold start records the working set (rec_x: its latency over REAP's p50), then N cold starts\n"
    "in lazy mode and N with REAP (default N = 10), each with the snapshot's files dropped\n"
    "from the page cache and a clean shell ready before the request, timed from the load to\n"
    "the end of the first invocation. Shows p50s, on-demand faults per start and the share REAP\n"
    "eliminated, the working set (pages), REAP's prefetch rate (its wall time, beside the run)\n"
    "next to the disk's own (a 256 MiB O_DIRECT read), the warm p50, and ws_jacc: |A∩B|/|A∪B|\n"
    "of the working sets recorded with small.req and large.req. model, scan, index-js and\n"
    "index-py have working sets of several to 32 MiB (model's cold starts take its large.req,\n"
    "the whole table).\n"
    "A second table times the request's own start (getting the shell, restoring, running: no\n"
    "load): N restores from the snapshot in memory into a fresh virtine (restore), the lazy and\n"
    "REAP cold starts (st_lazy, st_reap), reap/rs = st_reap / restore, the working set in MiB,\n"
    "its reads' rate alone (rd_MB/s) and over the disk's (rd/dk), and REAP's mean breakdown in\n"
    "µs: shell, snap (the state file and, on KVM, the working set's page list: read once at\n"
    "the load), open (memory file, registering guest memory), first (until the first chunk is\n"
    "in: the vCPU starts), read and install (the working set's, mostly beside the run), fault\n"
    "(served on demand), waits (faults that waited for a page on its way), run and mis (REAP\n"
    "on KVM, which reads the snapshot whole and maps it: the pages outside the working set the\n"
    "run touched; its faults are 0).\n"
    "A third table is the load before a REAP start (ember_load, mean µs over the N starts):\n"
    "c/rs (cold_over_restore) = reap_ms / restore, the whole cold start, load and all, over a\n"
    "restore from memory; load, and its parts: image (reading and checking the program, the\n"
    "runtime's for a handler), sites (finding its syscall sites, or reading their kept\n"
    "table), interp (a dynamic program's ld.so), bundle (its files), state (the snapshot's\n"
    "state file), plan (the working set's page list); image_by (scanned, table, shared) and\n"
    "files_by (packed, kept, checked) say how the image and files were had.\n"
    "--json adds these to each function's object (cold_over_restore, reap_load_us).\n"
    "--only NAME,NAME measures those functions of the suite alone.\n"
    "A function whose files the build made (functions/NAME/files) starts with them as its\n"
    "--files.\n"
    "\n" BENCH_HELP_BACKEND
    "With both (each function on KVM, then on ptrace; the disk measured once), those tables for\n"
    "KVM, then for ptrace, then KVM over ptrace per function (lazy and REAP p50s to the return\n"
    "and to the response, REAP's speedup, the warm p50) and each column's median; --json gives\n"
    "{\"backends\": {\"kvm\": {...}, \"ptrace\": {...}}, \"kvm_over_ptrace\": [...]}, each\n"
    "backend's object the one a single backend prints.\n\n"
    "options:\n";

static const struct opt cold_opts[] = {
    OPT_GROUP(bench_common_opts),
    BENCH_OPT_ITERS(100000, "cold starts per function and mode (default 10)"),
    OPT_STRING("only", 0, struct bench_opts, only, "NAME,NAME...",
	       "those functions of the suite alone"),
    OPT_END(),
};

static const struct opt_cmd cold_cmd = BENCH_CMD("bench cold", cold_head, cold_opts);

static const struct bench_ratio cold_ratios[] = {
    {"lazy_ms", offsetof(struct cold_row, lazy_p50_ms)},
    {"reap_ms", offsetof(struct cold_row, reap_p50_ms)},
    {"resp_lazy", offsetof(struct cold_row, lazy_resp_ms)},
    {"resp_reap", offsetof(struct cold_row, reap_resp_ms)},
    {"speedup", offsetof(struct cold_row, speedup)},
    {"warm_ms", offsetof(struct cold_row, warm_p50_ms)},
};
#define NRATIOS (sizeof(cold_ratios) / sizeof(cold_ratios[0]))

/* one function on every backend asked for, into rows[backend][k]; mean: REAP's mean speedup */
static int bench_all(struct cold_ctx *x, const struct bench_opts *o, size_t k, size_t j,
		     struct cold_row (*rows)[NFNS], double *mean)
{
	struct cold_fn f;
	char err[300];
	int rc = 0;
	if (fn_open(x, k, &f, err, sizeof(err))) {
		fprintf(stderr, "ember bench: %s: %s\n", fns[k].name, err);
		rc = CLI_EXIT_EMBER;
	}
	for (int b = 0; !rc && b < o->nbackends; b++) {
		x->backend = o->backends[b];
		if (bench_fn(x, &f, &rows[b][j]))
			rc = CLI_EXIT_EMBER;
		mean[b] += rows[b][j].speedup;
	}
	fn_close(&f);
	return rc;
}

/* the rows of names[0..n) */
static void print_all(const struct bench_opts *o, int iters, double disk, const char *const *names,
		      size_t n, struct cold_row (*rows)[NFNS], const double *mean)
{
	if (o->nbackends == 1 && o->json) {
		cli_print_json(stdout, cold_json(names, disk, rows[0], n, mean[0]));
	} else if (o->nbackends == 1) {
		cold_print_table(names, o->backend, iters, disk, rows[0], n, mean[0]);
		cold_print_parts(names, disk, rows[0], n);
		cold_print_load(names, rows[0], n);
	} else if (o->json) {
		bench_print_backends(cold_json(names, disk, rows[0], n, mean[0]),
				     cold_json(names, disk, rows[1], n, mean[1]),
				     bench_ratio_json(names, n, rows[0], rows[1],
						      sizeof(rows[0][0]), cold_ratios, NRATIOS));
	} else {
		bench_both_line("function");
		for (int b = 0; b < 2; b++) {
			cold_print_table(names, o->backends[b], iters, disk, rows[b], n, mean[b]);
			cold_print_parts(names, disk, rows[b], n);
			cold_print_load(names, rows[b], n);
			printf("\n");
		}
		printf("KVM over ptrace (each figure's kvm / ptrace)\n");
		bench_ratio_print(names, n, rows[0], rows[1], sizeof(rows[0][0]), cold_ratios,
				  NRATIOS);
	}
}

/* the functions --only names (every one without it) into sel: how many, or 0 with a name that
 * is none of the suite's */
static size_t select_fns(const char *only, size_t *sel)
{
	size_t n = 0;
	for (size_t i = 0; i < NFNS; i++) {
		size_t len = strlen(fns[i].name);
		const char *p = only;
		while (p && *p && !(!strncmp(p, fns[i].name, len) && (p[len] == ',' || !p[len])))
			p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL;
		if (!only || (p && *p))
			sel[n++] = i;
	}
	return n;
}

int cli_bench_cold(int argc, char **argv)
{
	struct bench_opts o = {.iters = 10};
	int rc = bench_parse(&cold_cmd, argc, argv, &o);
	if (rc >= 0)
		return rc;
	size_t sel[NFNS], nsel = select_fns(o.only, sel);
	if (!nsel)
		return fprintf(stderr, "ember bench: --only names none of the suite's functions\n"),
		       CLI_EXIT_EMBER;
	struct cold_ctx x = {.backend = o.backend, .iters = o.iters};
	snprintf(x.build, sizeof(x.build), "%s", bench_build_dir());
	snprintf(x.src, sizeof(x.src), "%s/../functions", x.build);
	const char *base = getenv("TMPDIR");
	snprintf(x.tmp, sizeof(x.tmp), "%s/ember-cold-XXXXXX", base && *base ? base : "/var/tmp");
	if (!mkdtemp(x.tmp))
		return perror("ember bench: mkdtemp"), CLI_EXIT_EMBER;
	pool_shell_target(1); /* a clean shell ready before each start (cold_wait_shell) */
	struct cold_row rows[2][NFNS];
	memset(rows, 0, sizeof(rows));
	double disk = cold_disk_mb_s(x.tmp), mean[2] = {0, 0};
	rc = disk < 0 ? (fprintf(stderr, "ember bench: cannot measure the disk in %s\n", x.tmp),
			 CLI_EXIT_EMBER)
		      : 0;
	const char *names[NFNS];
	for (size_t i = 0; !rc && i < nsel; i++) {
		names[i] = fns[sel[i]].name;
		rc = bench_all(&x, &o, sel[i], i, rows, mean);
	}
	cold_rm_rf(x.tmp);
	for (int b = 0; b < 2; b++)
		mean[b] /= (double)nsel;
	if (!rc)
		print_all(&o, x.iters, disk, names, nsel, rows, mean);
	return rc;
}
