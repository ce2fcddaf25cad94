/* `ember bench latency`: one invocation's cost, Ember next to the exit floor and native peers. */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"
#include "cli/cli.h"
#include "ember/ember.h"
#include "image/img.h"
#include "pool/pool.h"
#include "vm/vm.h"

struct lat {
	int iters;
	char dir[4096];
};

/* one row of the table: what it measures, on the backend given (NULL for a native peer) */
struct lat_row {
	const char *name;
	int (*measure)(const struct lat *l, const struct lat_row *r, const char *backend,
		       struct bench_row *out);
	const char *image; /* an Ember row's program, under the build folder */
	uint64_t mem;
	int no_snapshot;
	const char *syscalls;
	double (*once)(const char *hello); /* a native peer's one run */
};

static const char request[] = "Ember";

struct floor_args {
	struct vm *vm;
	double *us;
	int n, ok;
};

/* on the vCPU's own thread: enter, take the exit, enter again */
static void floor_loop(void *p)
{
	struct floor_args *a = p;
	struct vm_exit e;
	for (int i = 0; i < a->n; i++) {
		double t = bench_now_us();
		vm_run(a->vm, &e);
		a->us[i] = bench_now_us() - t;
		if (e.kind != VM_EXIT_HYPERCALL)
			return;
	}
	a->ok = 1;
}

static void nothing_on_vcpu(void *p)
{
	(void)p;
}

/* a machine for the rows that drive one directly */
static struct vm *lat_vm(const char *backend)
{
	char err[256];
	struct vm *vm;
	struct vm_config cfg = {.mem_size = EMBER_MEM_DEFAULT, .backend = VM_BACKEND_KVM};
	vm_backend_parse(backend, &cfg.backend);
	if (vm_create(&cfg, &vm, err, sizeof(err)) == VM_OK)
		return vm;
	fprintf(stderr, "ember bench: %s: %s\n", backend, err);
	return NULL;
}

static void set_row(struct bench_row *row, double *us, size_t n, double exits)
{
	row->p50_us = bench_quantile(us, n, 0.5);
	row->p99_us = bench_quantile(us, n, 0.99);
	row->exits = exits;
}

/* the hop from the caller's thread to the machine's own thread and back, which every invocation
 * takes once (the ptrace backend's vCPU thread; none on KVM, where it is a plain call) */
static int row_hop(const struct lat *l, const struct lat_row *r, const char *backend,
		   struct bench_row *row)
{
	(void)r;
	int n = l->iters * 10;
	struct vm *vm = lat_vm(backend);
	double *us = calloc((size_t)n, sizeof(double));
	for (int i = 0; vm && us && i < n; i++) {
		double t = bench_now_us();
		vm_call(vm, nothing_on_vcpu, NULL);
		us[i] = bench_now_us() - t;
	}
	int rc = vm && us ? 0 : -1;
	if (!rc)
		set_row(row, us, (size_t)n, 0);
	free(us);
	if (vm)
		vm_destroy(vm);
	return rc;
}

int bench_exit_floor(const char *dir, const char *backend, double *us, int n)
{
	char path[4200], err[256];
	snprintf(path, sizeof(path), "%s/guest/exitfloor.musl", dir);
	struct img *img;
	if (img_open(path, &img, err, sizeof(err))) {
		fprintf(stderr, "ember bench: exit floor: %s\n", err);
		return -1;
	}
	struct vm *vm = lat_vm(backend);
	struct img_layout lay;
	const char *argv[] = {"exitfloor", NULL}, *envp[] = {NULL};
	struct floor_args a = {vm, us, n, 0};
	if (vm && !img_load(img, NULL, vm, argv, envp, 0, &lay, err, sizeof(err))) {
		struct vm_regs regs = {.rip = lay.entry, .rsp = lay.sp, .rflags = 2};
		if (!vm_set_regs(vm, &regs))
			vm_call(vm, floor_loop, &a);
	}
	if (vm)
		vm_destroy(vm);
	img_close(img);
	return a.ok ? 0 : -1;
}

static int row_floor(const struct lat *l, const struct lat_row *r, const char *backend,
		     struct bench_row *row)
{
	(void)r;
	double *us = calloc((size_t)l->iters * 10, sizeof(double));
	int rc = us ? bench_exit_floor(l->dir, backend, us, l->iters * 10) : -1;
	if (!rc)
		set_row(row, us, (size_t)l->iters * 10, 1);
	free(us);
	return rc;
}

static int row_ember(const struct lat *l, const struct lat_row *r, const char *backend,
		     struct bench_row *row)
{
	const char *image = r->image;
	char path[4200], err[256];
	snprintf(path, sizeof(path), "%s/%s", l->dir, image);
	struct ember_config cfg = {.image = path,
				   .backend = backend,
				   .mem_bytes = r->mem,
				   .no_snapshot = r->no_snapshot,
				   .pool_size = 1,
				   .syscalls = r->syscalls};
	struct ember_function *fn;
	if (ember_load(&cfg, &fn, err, sizeof(err))) {
		fprintf(stderr, "ember bench: %s: %s\n", image, err);
		return -1;
	}
	double *us = calloc((size_t)l->iters, sizeof(double));
	double *reset = calloc((size_t)l->iters, sizeof(double));
	double *run = calloc((size_t)l->iters, sizeof(double));
	double exits = 0;
	int bad = !us || !reset || !run;
	for (int i = 0; !bad && i < l->iters + 5; i++) {
		struct ember_result res;
		double t = bench_now_us();
		ember_invoke(fn, request, sizeof(request) - 1, &res);
		double dt = bench_now_us() - t;
		bad = res.outcome != EMBER_OK;
		if (i >= 5) { /* the first few warm the pool and the shell cache */
			us[i - 5] = dt;
			reset[i - 5] = (double)res.reset_us;
			run[i - 5] = (double)res.run_us;
			exits += (double)res.exits;
		}
		if (bad)
			fprintf(stderr, "ember bench: %s: %s\n", image, res.message);
		ember_result_free(&res);
	}
	if (!bad) {
		set_row(row, us, (size_t)l->iters, exits / l->iters);
		if (!r->no_snapshot) {
			row->extra = bench_quantile(reset, (size_t)l->iters, 0.5) * 100.0 /
				     bench_quantile(run, (size_t)l->iters, 0.5);
			row->extra_name = "reset_pct_of_run";
		}
	}
	free(us);
	free(reset);
	free(run);
	ember_unload(fn);
	return bad ? -1 : 0;
}

static double spawn_once(const char *hello)
{
	return bench_spawn(hello, request, sizeof(request) - 1);
}

static double fork_once(const char *hello)
{
	(void)hello;
	double t = bench_now_us();
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	int st;
	waitpid(pid, &st, 0);
	return bench_now_us() - t;
}

static void *nothing(void *p)
{
	return p;
}

static double thread_once(const char *hello)
{
	(void)hello;
	double t = bench_now_us();
	pthread_t th;
	pthread_create(&th, NULL, nothing, NULL);
	pthread_join(th, NULL);
	return bench_now_us() - t;
}

static int row_native(const struct lat *l, const struct lat_row *r, const char *backend,
		      struct bench_row *row)
{
	(void)backend;
	char path[4200];
	snprintf(path, sizeof(path), "%s/guest/hello.musl", l->dir);
	double *us = calloc((size_t)l->iters, sizeof(double));
	int rc = us ? 0 : -1;
	for (int i = 0; !rc && i < l->iters; i++)
		rc = (us[i] = r->once(path)) < 0 ? -1 : 0;
	if (!rc)
		set_row(row, us, (size_t)l->iters, -1);
	free(us);
	return rc;
}

#define MIB (1ULL << 20)
static const struct lat_row lat_rows[] = {
    {"exit_floor", row_floor, NULL, 0, 0, NULL, NULL},
    {"vcpu_thread_hop", row_hop, NULL, 0, 0, NULL, NULL},
    {"ember_warm_hello", row_ember, "guest/hello.musl", 64 * MIB, 0, "trap", NULL},
    {"ember_warm_hello_1g", row_ember, "guest/hello.musl", 1024 * MIB, 0, "trap", NULL},
    {"ember_warm_sha256", row_ember, "functions/sha256", 64 * MIB, 0, "trap", NULL},
    {"ember_warm_hello_guest", row_ember, "guest/hello.musl", 64 * MIB, 0, "guest", NULL},
    {"ember_warm_sha256_guest", row_ember, "functions/sha256", 64 * MIB, 0, "guest", NULL},
    {"ember_shell_hello", row_ember, "guest/hello.musl", 64 * MIB, 1, "trap", NULL},
    {"posix_spawn_hello", row_native, NULL, 0, 0, NULL, spawn_once},
    {"fork_exit", row_native, NULL, 0, 0, NULL, fork_once},
    {"pthread_create", row_native, NULL, 0, 0, NULL, thread_once},
};
#define NROWS (sizeof(lat_rows) / sizeof(lat_rows[0]))

static const struct bench_ratio lat_ratios[] = {
    {"p50_us", offsetof(struct bench_row, p50_us)},
    {"p99_us", offsetof(struct bench_row, p99_us)},
};

/* both backends: each its own object as with one, and the ratios of the rows that run on them */
static void print_json(struct bench_row (*rows)[NROWS])
{
	const char *names[NROWS];
	size_t n = 0;
	for (; n < NROWS && !rows[0][n].native; n++)
		names[n] = rows[0][n].name;
	bench_print_backends(bench_rows_json(rows[0], NROWS, "exit_floor"),
			     bench_rows_json(rows[1], NROWS, "exit_floor"),
			     bench_ratio_json(names, n, rows[0], rows[1], sizeof(rows[0][0]),
					      lat_ratios,
					      sizeof(lat_ratios) / sizeof(lat_ratios[0])));
}

static const char lat_head[] =
    "usage: ember bench latency [--json] [--iterations N] [--backend both|kvm|ptrace|auto]\n"
    "\n"
    "Measures, in one run, p50 and p99 per invocation of: the exit floor (exit_floor: a guest\n"
    "that exits at once, re-entered), the hop to the machine's own thread that every\n"
    "invocation takes (ptrace backend; a plain call on KVM), a warm hello world from its\n"
    "snapshot (reset included; also with 1 GiB of guest RAM), a warm sha256 function,\n"
    "both again with the in-guest runtime (--syscalls guest: the _guest rows), a hello\n"
    "world on a clean shell without a snapshot, and as peers the same binary spawned\n"
    "natively, fork+exit+wait and a thread create+join. Each row gives its exits per\n"
    "invocation and its ratio to the floor of the same backend.\n"
    "\n" BENCH_HELP_BACKEND
    "With both, one table: each row's p50 and p99 on KVM and on ptrace, the ratio of the\n"
    "p50s, exits, ratio to the floor and reset share as kvm/ptrace pairs; the native peers\n"
    "once, at the end. --json gives {\"backends\": {\"kvm\": {\"results\": [...]}, \"ptrace\":\n"
    "{...}}, \"kvm_over_ptrace\": [{\"name\", \"p50_us\", \"p99_us\"}, ..., the medians]} (the\n"
    "native peers in both, measured once), and with one backend {\"results\": [...]}.\n"
    "\n"
    "Needs the build's guest/ and functions/ folders next to the ember binary.\n\n"
    "options:\n";

static const struct opt lat_opts[] = {
    OPT_GROUP(bench_common_opts),
    BENCH_OPT_ITERS(1000000, "samples per row (default 200; 10 at least are taken)"),
    OPT_END(),
};

static const struct opt_cmd lat_cmd = BENCH_CMD("bench latency", lat_head, lat_opts);

/* every row, on each backend in turn (a native peer once, copied to the others) */
static int measure_all(const struct lat *l, const struct bench_opts *o,
		       struct bench_row (*rows)[NROWS])
{
	for (size_t i = 0; i < NROWS; i++) {
		const struct lat_row *r = &lat_rows[i];
		int native = r->once != NULL;
		for (int b = 0; b < o->nbackends; b++) {
			struct bench_row *row = &rows[b][i];
			*row = (struct bench_row){r->name, 0, 0, -1, -1, NULL, native};
			if (native && b > 0)
				*row = rows[0][i];
			else if (r->measure(l, r, o->backends[b], row))
				return -1;
		}
	}
	return 0;
}

int cli_bench_latency(int argc, char **argv)
{
	struct bench_opts o = {.iters = 200};
	int rc = bench_parse(&lat_cmd, argc, argv, &o);
	if (rc >= 0)
		return rc;
	struct lat l = {.iters = o.iters < 10 ? 10 : o.iters};
	snprintf(l.dir, sizeof(l.dir), "%s", bench_build_dir());
	pool_shell_target(2);
	struct bench_row rows[2][NROWS];
	if (measure_all(&l, &o, rows))
		return CLI_EXIT_EMBER;
	if (o.nbackends == 1) {
		if (!o.json)
			printf("backend %s, %d invocations per row\n", o.backend, l.iters);
		bench_print(rows[0], NROWS, o.json, "exit_floor");
		return 0;
	}
	if (o.json)
		return print_json(rows), 0;
	bench_both_line("row");
	printf("%d invocations per row; kvm/ptrace: p50 over p50; k/p: kvm's, ptrace's; x floor: "
	       "p50 over that backend's exit_floor\n",
	       l.iters);
	bench_print_both(rows[0], rows[1], NROWS, "exit_floor");
	return 0;
}
