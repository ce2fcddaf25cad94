/* `ember bench programs`: processes in a virtine: fork + execve + wait4, fork + _exit + wait4. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/bench_programs.h"
#include "bench/bench_samples.h"

#define WARMUP 3

/* the figures of a processes row, one set each: per round timed inside, and whole invocations
 * with K rounds and with none */
enum { F_OP, F_WALL_K, F_WALL_0, N_OP, N_WALL_K, N_WALL_0, F_SETS };

static double quant(const struct bench_set *s, int p99)
{
	struct bench_stats st;
	bench_set_stats(s, &st);
	return p99 ? st.p99 : st.p50;
}

static void add(struct bench_set *s, double us, struct prog_result *out)
{
	if (bench_set_add(s, us))
		snprintf(out->failed, sizeof(out->failed), "out of memory");
}

/* forkbench's line "MODE K ns T": T in *ns; -1 (and why in out) when it is not that */
static int procs_ns(const char *buf, const char *mode, long k, double *ns, struct prog_result *out)
{
	char got_mode[8];
	long got;
	long long t;
	if (sscanf(buf, "%7s %ld ns %lld", got_mode, &got, &t) == 3 && !strcmp(got_mode, mode) &&
	    got == k && t >= 0)
		return *ns = (double)t, 0;
	snprintf(out->failed, sizeof(out->failed), "forkbench printed '%.64s'", buf);
	return -1;
}

/* one round: Ember and the native process, each with K rounds and with 0 */
static void procs_round(const struct prog_run *r, const struct prog_row *row,
			struct ember_function *fn, const char *path, struct bench_set *s,
			double exits[2], int keep, struct prog_result *out)
{
	const long ks[2] = {r->procs_k, 0};
	for (int i = 0; i < 2 && !out->failed[0]; i++) {
		char req[32], buf[128];
		struct prog_sample e;
		double ns, nus, nns;
		snprintf(req, sizeof(req), "%s %ld", row->request, ks[i]);
		if (prog_invoke(fn, req, &e, buf, sizeof(buf), out) ||
		    procs_ns(buf, row->request, ks[i], &ns, out))
			return;
		nus = bench_spawn_out(path, req, strlen(req), buf, sizeof(buf));
		if (nus < 0 || procs_ns(buf, row->request, ks[i], &nns, out)) {
			snprintf(out->failed, sizeof(out->failed), "the native run failed: '%.64s'",
				 buf);
			return;
		}
		if (!keep)
			continue;
		exits[i] += e.exits;
		if (i == 0) {
			add(&s[F_OP], ns / 1e3 / (double)ks[0], out);
			add(&s[N_OP], nns / 1e3 / (double)ks[0], out);
		}
		add(&s[i ? F_WALL_0 : F_WALL_K], e.us, out);
		add(&s[i ? N_WALL_0 : N_WALL_K], nus, out);
	}
}

/* Per round of fork, the child's execve of the same program (mode "exec", the row's request)
 * or _exit (mode "fork"), and wait4, timed by forkbench on its own monotonic clock around K
 * rounds in a row, in a warm virtine (every process of it a virtine of its own) and natively.
 * The same from outside as a check, (invocation with K - invocation with 0) / K, and the exits
 * one round costs, counted the same way. */
void prog_procs(const struct prog_run *r, const struct prog_row *row, const char *backend,
		struct prog_result *out)
{
	struct ember_function *fn;
	if (prog_load(r, row, backend, 1, &fn, out))
		return;
	char path[4200];
	prog_path(r, row, path, sizeof(path));
	struct bench_set s[F_SETS];
	for (int i = 0; i < F_SETS; i++)
		bench_set_init(&s[i], row->name, backend);
	double exits[2] = {0, 0};
	for (int i = -WARMUP; i < r->iters && !out->failed[0]; i++)
		procs_round(r, row, fn, path, s, exits, i >= 0, out);
	if (!out->failed[0]) {
		double k = (double)r->procs_k;
		out->p50_us = quant(&s[F_OP], 0);
		out->p99_us = quant(&s[F_OP], 1);
		out->native_p50_us = quant(&s[N_OP], 0);
		out->native_p99_us = quant(&s[N_OP], 1);
		out->ratio = out->p50_us / out->native_p50_us;
		out->exits = exits[0] / r->iters;
		prog_extra(out, "exits_per_round", (exits[0] - exits[1]) / r->iters / k);
		prog_extra(out, "outside_p50_us",
			   (quant(&s[F_WALL_K], 0) - quant(&s[F_WALL_0], 0)) / k);
		prog_extra(out, "native_outside_p50_us",
			   (quant(&s[N_WALL_K], 0) - quant(&s[N_WALL_0], 0)) / k);
	}
	for (int i = 0; i < F_SETS; i++)
		bench_set_free(&s[i]);
	ember_unload(fn);
}
