/* `ember bench latency`: one invocation's cost, Ember next to the exit floor and native peers. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/bench.h"
#include "cli/cli.h"
#include "ember/ember.h"
#include "image/img.h"
#include "pool/pool.h"
#include "vm/vm.h"

struct lat {
	const char *backend;
	int iters;
	char dir[4096];
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

/* the hop from the caller's thread to the machine's own thread and back, which every invocation
 * takes once (the ptrace backend's vCPU thread; none on KVM, where it is a plain call) */
static void row_hop(struct vm *vm, int n, struct bench_row *row)
{
	double *us = calloc((size_t)n, sizeof(double));
	if (!us)
		return;
	for (int i = 0; i < n; i++) {
		double t = bench_now_us();
		vm_call(vm, nothing_on_vcpu, NULL);
		us[i] = bench_now_us() - t;
	}
	row->p50_us = bench_quantile(us, (size_t)n, 0.5);
	row->p99_us = bench_quantile(us, (size_t)n, 0.99);
	row->exits = 0;
	free(us);
}

static int row_floor(const struct lat *l, struct bench_row *row, struct bench_row *hop)
{
	char path[4200], err[256];
	snprintf(path, sizeof(path), "%s/guest/exitfloor.musl", l->dir);
	struct img *img;
	struct vm *vm;
	struct vm_config cfg = {.mem_size = 64ULL << 20, .backend = VM_BACKEND_KVM};
	vm_backend_parse(l->backend, &cfg.backend);
	if (img_open(path, &img, err, sizeof(err)) ||
	    vm_create(&cfg, &vm, err, sizeof(err)) != VM_OK) {
		fprintf(stderr, "ember bench: exit floor: %s\n", err);
		return -1;
	}
	struct img_layout lay;
	const char *argv[] = {"exitfloor", NULL}, *envp[] = {NULL};
	int rc = img_load(img, vm, argv, envp, 0, &lay, err, sizeof(err));
	struct vm_regs r = {.rip = lay.entry, .rsp = lay.sp, .rflags = 2};
	struct floor_args a = {vm, calloc((size_t)l->iters * 10, sizeof(double)), l->iters * 10, 0};
	if (!rc && a.us && !vm_set_regs(vm, &r))
		vm_call(vm, floor_loop, &a);
	if (a.ok) {
		row->p50_us = bench_quantile(a.us, (size_t)a.n, 0.5);
		row->p99_us = bench_quantile(a.us, (size_t)a.n, 0.99);
		row->exits = 1;
		row_hop(vm, a.n, hop);
	}
	free(a.us);
	vm_destroy(vm);
	img_close(img);
	return a.ok ? 0 : -1;
}

static int row_ember(const struct lat *l, struct bench_row *row, const char *image, uint64_t mem,
		     int no_snapshot, const char *syscalls)
{
	char path[4200], err[256];
	snprintf(path, sizeof(path), "%s/%s", l->dir, image);
	struct ember_config cfg = {.image = path,
				   .backend = l->backend,
				   .mem_bytes = mem,
				   .no_snapshot = no_snapshot,
				   .pool_size = 1,
				   .syscalls = syscalls};
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
		row->p50_us = bench_quantile(us, (size_t)l->iters, 0.5);
		row->p99_us = bench_quantile(us, (size_t)l->iters, 0.99);
		row->exits = exits / l->iters;
		if (!no_snapshot) {
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

static double fork_once(void)
{
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

static double thread_once(void)
{
	double t = bench_now_us();
	pthread_t th;
	pthread_create(&th, NULL, nothing, NULL);
	pthread_join(th, NULL);
	return bench_now_us() - t;
}

static int row_native(const struct lat *l, struct bench_row *row, int kind)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/guest/hello.musl", l->dir);
	double *us = calloc((size_t)l->iters, sizeof(double));
	if (!us)
		return -1;
	for (int i = 0; i < l->iters; i++) {
		us[i] = kind == 0   ? bench_spawn(path, request, sizeof(request) - 1)
			: kind == 1 ? fork_once()
				    : thread_once();
		if (us[i] < 0) {
			free(us);
			return -1;
		}
	}
	row->p50_us = bench_quantile(us, (size_t)l->iters, 0.5);
	row->p99_us = bench_quantile(us, (size_t)l->iters, 0.99);
	free(us);
	return 0;
}

static const char lat_help[] =
    "usage: ember bench latency [--json] [--iterations N] [--backend kvm|ptrace|auto]\n"
    "\n"
    "Measures, in one run, p50 and p99 per invocation of: the exit floor (a guest that\n"
    "exits at once, re-entered), the hop to the machine's own thread that every\n"
    "invocation takes (ptrace backend; a plain call on KVM), a warm hello world from its\n"
    "snapshot (reset included; also with 1 GiB of guest RAM), a warm sha256 function,\n"
    "both again with the in-guest runtime (--syscalls guest: the _guest rows), a hello\n"
    "world on a clean shell without a snapshot, and as peers the same binary spawned\n"
    "natively, fork+exit+wait and a thread create+join. Each row gives its ratio to the\n"
    "floor. Needs the build's guest/ and functions/ folders next to the ember binary.\n";

int cli_bench_latency(int argc, char **argv)
{
	struct bench_opts o = {.iters = 200};
	int rc = bench_parse(argc, argv, &o, 1000000, 0, lat_help);
	if (rc >= 0)
		return rc;
	struct lat l = {.backend = o.backend, .iters = o.iters < 10 ? 10 : o.iters};
	int json = o.json;
	snprintf(l.dir, sizeof(l.dir), "%s", bench_build_dir());
	pool_shell_target(2);
	struct bench_row rows[] = {
	    {"kvm_exit_floor", 0, 0, -1, -1, NULL},
	    {"vcpu_thread_hop", 0, 0, -1, -1, NULL},
	    {"ember_warm_hello", 0, 0, -1, -1, NULL},
	    {"ember_warm_hello_1g", 0, 0, -1, -1, NULL},
	    {"ember_warm_sha256", 0, 0, -1, -1, NULL},
	    {"ember_warm_hello_guest", 0, 0, -1, -1, NULL},
	    {"ember_warm_sha256_guest", 0, 0, -1, -1, NULL},
	    {"ember_shell_hello", 0, 0, -1, -1, NULL},
	    {"posix_spawn_hello", 0, 0, -1, -1, NULL},
	    {"fork_exit", 0, 0, -1, -1, NULL},
	    {"pthread_create", 0, 0, -1, -1, NULL},
	};
	rc = row_floor(&l, &rows[0], &rows[1]) ||
	     row_ember(&l, &rows[2], "guest/hello.musl", 64ULL << 20, 0, "trap") ||
	     row_ember(&l, &rows[3], "guest/hello.musl", 1ULL << 30, 0, "trap") ||
	     row_ember(&l, &rows[4], "functions/sha256", 64ULL << 20, 0, "trap") ||
	     row_ember(&l, &rows[5], "guest/hello.musl", 64ULL << 20, 0, "guest") ||
	     row_ember(&l, &rows[6], "functions/sha256", 64ULL << 20, 0, "guest") ||
	     row_ember(&l, &rows[7], "guest/hello.musl", 64ULL << 20, 1, "trap") ||
	     row_native(&l, &rows[8], 0) || row_native(&l, &rows[9], 1) ||
	     row_native(&l, &rows[10], 2);
	if (rc)
		return CLI_EXIT_EMBER;
	if (!json)
		printf("backend %s, %d invocations per row\n", l.backend, l.iters);
	bench_print(rows, sizeof(rows) / sizeof(rows[0]), json, "kvm_exit_floor");
	return 0;
}
