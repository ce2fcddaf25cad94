/* `ember bench cold`'s series: cold starts (lazy, REAP, recording), warm and restored runs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/bench_cold.h"
#include "cli/cli.h"
#include "ember/ember.h"

#define WARM_WARMUP 3

/* loads f: with state set, from (or into) the snapshot there */
static struct ember_function *load(const struct cold_ctx *x, const struct cold_fn *f,
				   const char *state, int cold, const char *restore)
{
	struct ember_config cfg = {.backend = x->backend,
				   .files = f->files[0] ? f->files : NULL,
				   .pool_size = 1,
				   .state_dir = state,
				   .cold = cold,
				   .restore = restore};
	struct ember_function *fn = NULL;
	char err[300];
	cli_program_config(&f->p, &cfg, err, sizeof(err)); /* image, arguments, code, files, mem */
	if (ember_load(&cfg, &fn, err, sizeof(err)))
		fprintf(stderr, "ember bench: %s: %s\n", f->name, err);
	return fn;
}

/* one invocation, checked: it succeeded, and with the small request (large.req for a big
 * function), printed its .out */
static int invoke(const struct cold_fn *f, struct ember_function *fn, int large,
		  struct ember_result *res)
{
	ember_invoke(fn, large ? f->large : f->small, large ? f->large_len : f->small_len, res);
	const char *why = NULL;
	if (res->outcome != EMBER_OK || res->status != 0)
		why = res->message;
	else if (!large && f->want &&
		 (res->out_len != f->want_len || memcmp(res->out, f->want, f->want_len)))
		why = "the output differs from small.out";
	if (why)
		fprintf(stderr, "ember bench: %s: exit code %d: %s\n", f->name, res->exit_code,
			why);
	return why ? -1 : 0;
}

/* one honest cold start from the snapshot in state: every file of the state folder dropped from
 * the page cache (not counted: a real cold start finds them out of it), load, a clean shell
 * ready (its wait not counted), the first invocation; ms[0] is the time from before the load to
 * the invocation's return, ms[1] to its response (without the work ember_invoke does after the
 * run: the reset, the snapshot read), ms[2] the invocation's own start to its response */
static int cold_start(const struct cold_ctx *x, const struct cold_fn *f, const char *state,
		      const char *restore, int large, double ms[3], struct ember_result *res,
		      struct cold_row *row)
{
	cold_drop_cache(state);
	double t = bench_now_us();
	struct ember_function *fn = load(x, f, state, 0, restore);
	if (!fn)
		return -1;
	double loaded = bench_now_us();
	cold_wait_shell(fn);
	double t1 = bench_now_us();
	int rc = invoke(f, fn, large, res);
	double start = (double)(res->wait_us + res->setup_us + res->run_us);
	ms[0] = (loaded - t + bench_now_us() - t1) / 1000;
	ms[1] = (loaded - t + start) / 1000;
	ms[2] = start / 1000;
	if (!rc && !res->cold) {
		fprintf(stderr, "ember bench: %s: the first invocation did not start cold\n",
			f->name);
		rc = -1;
	}
	if (row)
		cold_add_parts(row, res, !strcmp(restore, "reap"), x->iters, fn);
	ember_unload(fn);
	return rc;
}

/* a snapshot made in a fresh state folder, then a recording cold start with a request */
int cold_record(const struct cold_ctx *x, const struct cold_fn *f, const char *state, int large,
		double *ms)
{
	struct ember_function *fn = load(x, f, state, 0, NULL);
	if (!fn)
		return -1;
	ember_unload(fn);
	struct ember_result res;
	double two[3];
	int rc = cold_start(x, f, state, "reap", large, two, &res, NULL);
	*ms = two[0];
	if (!rc && !res.recorded) {
		fprintf(stderr, "ember bench: %s: the first REAP start did not record\n", f->name);
		rc = -1;
	}
	ember_result_free(&res);
	return rc;
}

/* N cold starts in one mode: p50s (to the return, to the response, the request's own start)
 * and mean faults; for REAP the working set, the prefetch bandwidth and the breakdown */
int cold_series(const struct cold_ctx *x, const struct cold_fn *f, const char *state,
		const char *mode, double *ms, double p50[3], double *faults, struct cold_row *row)
{
	uint64_t bytes = 0, us = 0, read_us = 0;
	int reap = !strcmp(mode, "reap");
	*faults = 0;
	for (int i = 0; i < x->iters; i++) {
		struct ember_result res;
		double three[3];
		int rc = cold_start(x, f, state, mode, 0, three, &res, row);
		for (int k = 0; k < 3; k++)
			ms[k * x->iters + i] = three[k];
		*faults += (double)res.faults / x->iters;
		row->ws_pages = (double)res.prefetched_pages;
		bytes += res.prefetch_bytes;
		us += res.prefetch_us;
		read_us += res.ws_read_us;
		ember_result_free(&res);
		if (rc)
			return -1;
	}
	char key[160];
	snprintf(key, sizeof(key), "%s/%s/%s", f->name, x->backend, mode);
	for (int i = 0; i < x->iters; i++)
		ms[i] *= 1000; /* kept in microseconds, as every other sample */
	bench_keep(key, ms, (size_t)x->iters);
	for (int i = 0; i < x->iters; i++)
		ms[i] /= 1000;
	if (reap) {
		row->prefetch_mb_s = us ? (double)bytes / (double)us : NAN;
		row->read_mb_s = read_us ? (double)bytes / (double)read_us : NAN;
	}
	for (int k = 0; k < 3; k++)
		p50[k] = bench_quantile(ms + k * x->iters, (size_t)x->iters, 0.5);
	return 0;
}

int cold_warm_series(const struct cold_ctx *x, const struct cold_fn *f, double *ms)
{
	struct ember_function *fn = load(x, f, NULL, 0, NULL);
	int rc = fn ? 0 : -1;
	for (int i = 0; !rc && i < x->iters + WARM_WARMUP; i++) {
		struct ember_result res;
		double t = bench_now_us();
		rc = invoke(f, fn, 0, &res);
		if (i >= WARM_WARMUP)
			ms[i - WARM_WARMUP] = (bench_now_us() - t) / 1000;
		ember_result_free(&res);
	}
	if (fn)
		ember_unload(fn);
	return rc;
}

/* starts from the snapshot in memory into a fresh virtine, a clean shell ready for each */
int cold_restore_series(const struct cold_ctx *x, const struct cold_fn *f, double *ms, double *p50)
{
	struct ember_function *fn = load(x, f, NULL, 0, NULL);
	int rc = fn ? cold_restore_p50(fn, f->small, f->small_len, x->iters, ms, p50) : -1;
	if (fn)
		ember_unload(fn);
	if (rc)
		fprintf(stderr, "ember bench: %s: the restore series failed\n", f->name);
	return rc;
}
