/* `ember bench programs`: the exit floor, and warm invocations next to a native process start. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/bench_programs.h"
#include "bench/bench_samples.h"

#define WARMUP 5 /* rounds before the samples: the pool, the page cache, the binary's pages */

static const char request[] = "Ember";
static const char greeting[] = "Hello, Ember!";

void prog_extra(struct prog_result *out, const char *name, double v)
{
	if (out->nextra < PROG_EXTRAS) {
		out->extra[out->nextra].name = name;
		out->extra[out->nextra++].v = v;
	}
}

void prog_path(const struct prog_run *r, const struct prog_row *row, char *path, size_t len)
{
	if (row->image[0] == '/')
		snprintf(path, len, "%s", row->image);
	else
		snprintf(path, len, "%s/%s", r->dir, row->image);
}

int prog_load(const struct prog_run *r, const struct prog_row *row, const char *backend,
	      unsigned cpus, struct ember_function **fn, struct prog_result *out)
{
	char path[4200], err[EMBER_ERR_MAX];
	prog_path(r, row, path, sizeof(path));
	if (access(path, X_OK)) {
		snprintf(out->failed, sizeof(out->failed), "%.300s: %s", path,
			 row->image[0] == '/' ? "not installed (scripts/setup.sh)"
					      : "not built (make all)");
		return EMBER_ERR_IMAGE;
	}
	const char *argv[16] = {path};
	for (int i = 0; row->args && row->args[i] && i < 14; i++)
		argv[i + 1] = row->args[i];
	struct ember_config cfg = {.image = path,
				   .argv = argv,
				   .backend = backend,
				   .mem_bytes = row->mem,
				   .pool_size = 1,
				   .syscalls = r->syscalls,
				   .cpus = cpus};
	int rc = ember_load(&cfg, fn, err, sizeof(err));
	/* more vCPUs than the backend runs is a refusal to report, not a failure */
	if (rc == EMBER_ERR_CONFIG && cpus > 1)
		snprintf(out->skipped, sizeof(out->skipped), "cpus %u refused on %s: %s", cpus,
			 backend, err);
	else if (rc)
		snprintf(out->failed, sizeof(out->failed), "%s: %s", ember_error_name(rc), err);
	if (rc)
		*fn = NULL;
	if (!rc) {
		struct ember_info info;
		ember_info(*fn, &info);
		out->syscalls = info.syscalls;
	}
	return rc;
}

int prog_invoke(struct ember_function *fn, const char *req, struct prog_sample *s, char *buf,
		size_t cap, struct prog_result *out)
{
	struct ember_result res;
	double t = bench_now_us();
	ember_invoke(fn, req, strlen(req), &res);
	s->us = bench_now_us() - t;
	int ok = res.outcome == EMBER_OK && res.status == 0;
	if (!ok && res.outcome == EMBER_OK)
		snprintf(out->failed, sizeof(out->failed), "exit status %d", res.status);
	else if (!ok)
		snprintf(out->failed, sizeof(out->failed), "%s: %s",
			 ember_outcome_name(res.outcome), res.message);
	size_t n = res.out_len < cap - 1 ? res.out_len : cap - 1;
	if (n)
		memcpy(buf, res.out, n);
	buf[n] = 0;
	s->exits = (double)res.exits;
	s->run_us = (double)res.run_us;
	s->reset_us = (double)res.reset_us;
	ember_result_free(&res);
	return ok ? 0 : -1;
}

/* p50 and p99 of a set, NAN when it has none */
static void stats(const struct bench_set *s, double *p50, double *p99)
{
	struct bench_stats st;
	bench_set_stats(s, &st);
	*p50 = st.p50;
	*p99 = st.p99;
}

void prog_floor(const struct prog_run *r, const struct prog_row *row, const char *backend,
		struct prog_result *out)
{
	(void)row;
	int n = r->iters * 10 < 100 ? 100 : r->iters * 10;
	double *us = calloc((size_t)n, sizeof(double));
	if (!us || bench_exit_floor(r->dir, backend, us, n)) {
		snprintf(out->failed, sizeof(out->failed), "the exit floor could not run");
	} else {
		out->p50_us = bench_quantile(us, (size_t)n, 0.5);
		out->p99_us = bench_quantile(us, (size_t)n, 0.99);
		out->exits = 1;
	}
	free(us);
}

/* the figures of a warm row, one set each */
enum { W_EMBER, W_NATIVE, W_RUN, W_RESET, W_SETS };

/* A warm invocation (from the snapshot in a pooled virtine, its reset included) and the same
 * binary started natively (posix_spawn, the request on a pipe, its output read, waited for),
 * one of each per round; both must greet the request. Ember's run and reset beside them. */
void prog_warm(const struct prog_run *r, const struct prog_row *row, const char *backend,
	       struct prog_result *out)
{
	struct ember_function *fn;
	if (prog_load(r, row, backend, 1, &fn, out))
		return;
	char path[4200], buf[256];
	prog_path(r, row, path, sizeof(path));
	const char *req = row->request ? row->request : request;
	const char *want = row->expect ? row->expect : greeting;
	struct bench_set s[W_SETS];
	for (int i = 0; i < W_SETS; i++)
		bench_set_init(&s[i], row->name, backend);
	double exits = 0;
	struct prog_sample e;
	for (int i = -WARMUP; i < r->iters && !out->failed[0]; i++) {
		if (prog_invoke(fn, req, &e, buf, sizeof(buf), out))
			break;
		if (!strstr(buf, want)) {
			snprintf(out->failed, sizeof(out->failed), "Ember's output: '%.64s'", buf);
			break;
		}
		double nus = bench_spawn_argv(path, row->args, req, strlen(req), buf, sizeof(buf));
		if (nus < 0 || !strstr(buf, want)) {
			snprintf(out->failed, sizeof(out->failed), "the native run failed: '%.64s'",
				 buf);
			break;
		}
		if (i < 0)
			continue;
		const double v[W_SETS] = {e.us, nus, e.run_us, e.reset_us};
		for (int k = 0; k < W_SETS; k++)
			if (bench_set_add(&s[k], v[k]))
				snprintf(out->failed, sizeof(out->failed), "out of memory");
		exits += e.exits;
	}
	if (!out->failed[0]) {
		stats(&s[W_EMBER], &out->p50_us, &out->p99_us);
		stats(&s[W_NATIVE], &out->native_p50_us, &out->native_p99_us);
		out->ratio = out->p50_us / out->native_p50_us;
		out->exits = exits / r->iters;
		double p99;
		stats(&s[W_RUN], &out->extra[0].v, &p99);
		stats(&s[W_RESET], &out->extra[1].v, &p99);
		out->extra[0].name = "run_p50_us";
		out->extra[1].name = "reset_p50_us";
		out->nextra = 2;
	}
	for (int i = 0; i < W_SETS; i++)
		bench_set_free(&s[i]);
	ember_unload(fn);
}
