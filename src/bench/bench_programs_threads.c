/* `ember bench programs`: threads in a virtine: create+join, and parallel work on two vCPUs. */
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/bench_programs.h"
#include "bench/bench_samples.h"

#define WARMUP 3

/* the sample sets of a row, one per figure */
struct sets {
	struct bench_set s[8];
	size_t n;
};

static void sets_init(struct sets *s, size_t n, const char *name, const char *backend)
{
	s->n = n;
	for (size_t i = 0; i < n; i++)
		bench_set_init(&s->s[i], name, backend);
}

static void sets_free(struct sets *s)
{
	for (size_t i = 0; i < s->n; i++)
		bench_set_free(&s->s[i]);
}

static double p50(const struct bench_set *s)
{
	struct bench_stats st;
	bench_set_stats(s, &st);
	return st.p50;
}

static double p99(const struct bench_set *s)
{
	struct bench_stats st;
	bench_set_stats(s, &st);
	return st.p99;
}

static void add(struct bench_set *s, double us, struct prog_result *out)
{
	if (bench_set_add(s, us))
		snprintf(out->failed, sizeof(out->failed), "out of memory");
}

/* threadbench's line "threads K ns T": T in *ns; -1 (and why in out) when it is not that */
static int threads_ns(const char *buf, long k, double *ns, struct prog_result *out)
{
	long got;
	long long t;
	if (sscanf(buf, "threads %ld ns %lld", &got, &t) == 2 && got == k && t >= 0)
		return *ns = (double)t, 0;
	snprintf(out->failed, sizeof(out->failed), "threadbench printed '%.64s'", buf);
	return -1;
}

/* the figures of thread_create_join, one set each */
enum { T_OP, T_FIRST, T_WALL_K, T_WALL_0, N_OP, N_FIRST, N_WALL_K, N_WALL_0, T_SETS };

/* one round: Ember and the native process, each with K, 1 and 0 threads */
static void threads_round(const struct prog_run *r, struct ember_function *fn, const char *path,
			  struct sets *s, double exits[2], int keep, struct prog_result *out)
{
	const long ks[3] = {r->threads_k, 1, 0};
	for (int i = 0; i < 3 && !out->failed[0]; i++) {
		char req[32], buf[128];
		struct prog_sample e;
		double ns, nus, nns;
		snprintf(req, sizeof(req), "%ld", ks[i]);
		if (prog_invoke(fn, req, &e, buf, sizeof(buf), out) ||
		    threads_ns(buf, ks[i], &ns, out))
			return;
		nus = bench_spawn_out(path, req, strlen(req), buf, sizeof(buf));
		if (nus < 0 || threads_ns(buf, ks[i], &nns, out)) {
			snprintf(out->failed, sizeof(out->failed), "the native run failed: '%.64s'",
				 buf);
			return;
		}
		if (!keep)
			continue;
		if (i == 0) {
			add(&s->s[T_OP], ns / 1e3 / (double)ks[0], out);
			add(&s->s[N_OP], nns / 1e3 / (double)ks[0], out);
			add(&s->s[T_WALL_K], e.us, out);
			add(&s->s[N_WALL_K], nus, out);
			exits[0] += e.exits;
		} else if (i == 1) {
			add(&s->s[T_FIRST], ns / 1e3, out);
			add(&s->s[N_FIRST], nns / 1e3, out);
		} else {
			add(&s->s[T_WALL_0], e.us, out);
			add(&s->s[N_WALL_0], nus, out);
			exits[1] += e.exits;
		}
	}
}

/* Per create+join, timed by the program itself on its monotonic clock around K creates and
 * joins in a row (the in-guest runtime's clock in a virtine, the vDSO's natively), in a virtine
 * and natively. The same from outside as a check: (invocation with K - invocation with 0) / K;
 * and the first create+join of an invocation alone (K = 1). */
void prog_threads(const struct prog_run *r, const struct prog_row *row, const char *backend,
		  struct prog_result *out)
{
	struct ember_function *fn;
	if (prog_load(r, row, backend, 1, &fn, out))
		return;
	char path[4200];
	snprintf(path, sizeof(path), "%s/%s", r->dir, row->image);
	struct sets s;
	sets_init(&s, T_SETS, row->name, backend);
	double exits[2] = {0, 0};
	for (int i = -WARMUP; i < r->iters && !out->failed[0]; i++)
		threads_round(r, fn, path, &s, exits, i >= 0, out);
	if (!out->failed[0]) {
		double k = (double)r->threads_k;
		out->p50_us = p50(&s.s[T_OP]);
		out->p99_us = p99(&s.s[T_OP]);
		out->native_p50_us = p50(&s.s[N_OP]);
		out->native_p99_us = p99(&s.s[N_OP]);
		out->ratio = out->p50_us / out->native_p50_us;
		out->exits = exits[0] / r->iters;
		prog_extra(out, "exits_per_create_join", (exits[0] - exits[1]) / r->iters / k);
		prog_extra(out, "outside_p50_us", (p50(&s.s[T_WALL_K]) - p50(&s.s[T_WALL_0])) / k);
		prog_extra(out, "native_outside_p50_us",
			   (p50(&s.s[N_WALL_K]) - p50(&s.s[N_WALL_0])) / k);
		prog_extra(out, "first_p50_us", p50(&s.s[T_FIRST]));
		prog_extra(out, "native_first_p50_us", p50(&s.s[N_FIRST]));
	}
	sets_free(&s);
	ember_unload(fn);
}

/* the first n CPUs this thread may run on, in set; how many there were */
static int first_cpus(const cpu_set_t *all, int n, cpu_set_t *set)
{
	CPU_ZERO(set);
	int got = 0;
	for (int c = 0; c < CPU_SETSIZE && got < n; c++)
		if (CPU_ISSET(c, all))
			CPU_SET(c, set), got++;
	return got;
}

/* the native run on the CPUs of set (the child inherits this thread's affinity, which is put
 * back before any invocation: on KVM this thread runs the first vCPU) */
static double native_on(const char *path, const char *req, const cpu_set_t *set,
			const cpu_set_t *all, char *buf, size_t cap)
{
	if (sched_setaffinity(0, sizeof(*set), set))
		return -1;
	double us = bench_spawn_out(path, req, strlen(req), buf, cap);
	return sched_setaffinity(0, sizeof(*all), all) ? -1 : us;
}

/* the figures of parallel_cpus2 */
enum { P_CPUS1, P_CPUS2, P_NAT1, P_NAT2, P_SETS };

/* one round: Ember on 1 vCPU, natively on 1 CPU, Ember on 2 vCPUs, natively on 2 CPUs */
static void parallel_round(struct ember_function *fn[2], const char *path, const char *req,
			   const char *want, struct sets *s, double exits[2], int keep,
			   struct prog_result *out)
{
	cpu_set_t all, cpus[2];
	sched_getaffinity(0, sizeof(all), &all);
	first_cpus(&all, 1, &cpus[0]);
	first_cpus(&all, 2, &cpus[1]);
	for (int c = 0; c < 2 && !out->failed[0]; c++) {
		char buf[128];
		struct prog_sample e;
		if (prog_invoke(fn[c], req, &e, buf, sizeof(buf), out))
			return;
		if (strcmp(buf, want)) {
			snprintf(out->failed, sizeof(out->failed), "cpus %d printed '%.64s'", c + 1,
				 buf);
			return;
		}
		double nus = native_on(path, req, &cpus[c], &all, buf, sizeof(buf));
		if (nus < 0 || strcmp(buf, want)) {
			snprintf(out->failed, sizeof(out->failed), "the native run failed");
			return;
		}
		if (keep) {
			add(&s->s[P_CPUS1 + c], e.us, out);
			add(&s->s[P_NAT1 + c], nus, out);
			exits[c] += e.exits;
		}
	}
}

/* A CPU-bound function, two threads each running the same rounds, in a virtine with 2 vCPUs and
 * with 1, and natively on 2 CPUs and on 1: the speedup is the p50 on 1 over the p50 on 2, every
 * output the native one's. */
static void parallel_rows(const struct prog_run *r, const struct prog_row *row, const char *backend,
			  struct ember_function *fn[2], struct prog_result *out)
{
	char path[4200], req[32], want[128];
	snprintf(path, sizeof(path), "%s/%s", r->dir, row->image);
	snprintf(req, sizeof(req), "%lld", r->work);
	if (bench_spawn_out(path, req, strlen(req), want, sizeof(want)) < 0 || !want[0]) {
		snprintf(out->failed, sizeof(out->failed), "the native run failed");
		return;
	}
	cpu_set_t all, two;
	sched_getaffinity(0, sizeof(all), &all);
	int ncpus = first_cpus(&all, 2, &two);
	struct sets s;
	sets_init(&s, P_SETS, row->name, backend);
	double exits[2] = {0, 0};
	for (int i = -WARMUP; i < r->iters && !out->failed[0]; i++)
		parallel_round(fn, path, req, want, &s, exits, i >= 0, out);
	if (!out->failed[0]) {
		out->p50_us = p50(&s.s[P_CPUS2]);
		out->p99_us = p99(&s.s[P_CPUS2]);
		out->native_p50_us = p50(&s.s[P_NAT2]);
		out->native_p99_us = p99(&s.s[P_NAT2]);
		out->ratio = p50(&s.s[P_CPUS1]) / out->p50_us;
		out->exits = exits[1] / r->iters;
		prog_extra(out, "cpus1_p50_us", p50(&s.s[P_CPUS1]));
		prog_extra(out, "cpus1_exits", exits[0] / r->iters);
		prog_extra(out, "native_1cpu_p50_us", p50(&s.s[P_NAT1]));
		prog_extra(out, "native_speedup", p50(&s.s[P_NAT1]) / out->native_p50_us);
		prog_extra(out, "host_cpus", ncpus);
	}
	sets_free(&s);
}

void prog_parallel(const struct prog_run *r, const struct prog_row *row, const char *backend,
		   struct prog_result *out)
{
	struct ember_function *fn[2] = {NULL, NULL}; /* on 1 vCPU, on 2 */
	if (!prog_load(r, row, backend, 2, &fn[1], out) &&
	    !prog_load(r, row, backend, 1, &fn[0], out))
		parallel_rows(r, row, backend, fn, out);
	for (int c = 0; c < 2; c++)
		if (fn[c])
			ember_unload(fn[c]);
}
