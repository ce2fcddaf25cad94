/* `ember bench programs`: Node.js and CPython handlers warm, next to a process started for each. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/bench_programs.h"
#include "bench/bench_samples.h"
#include "cli/cli.h"

#define WARMUP 3 /* rounds before the samples: the pool, the page cache */

/* the runtime's loader script as the host sees it: its path in the runtime's files */
static void native_args(const struct cli_program *p, char host[][4200], const char **args)
{
	int n = 0;
	for (int i = 1; p->argv[i] && n < 4; i++, n++) {
		if (p->argv[i][0] == '/' && p->files[0]) {
			snprintf(host[n], sizeof(host[n]), "%.4000s%s", p->files, p->argv[i]);
			if (!access(host[n], R_OK)) {
				args[n] = host[n];
				continue;
			}
		}
		args[n] = p->argv[i];
	}
	args[n] = NULL;
}

static int load(const struct prog_run *r, const struct prog_row *row, const char *backend,
		struct cli_program *p, struct ember_function **fn, struct prog_result *out)
{
	char why[EMBER_ERR_MAX], src[4200];
	/* the repository's functions: from its root, else beside the build folder */
	snprintf(src, sizeof(src), "%s", row->image);
	if (access(src, R_OK))
		snprintf(src, sizeof(src), "%.4000s/../%s", r->dir, row->image);
	if (cli_program(row->args[0], src, p, why, sizeof(why))) {
		snprintf(out->failed, sizeof(out->failed), "%s", why);
		return -1;
	}
	struct ember_config cfg = {.backend = backend, .pool_size = 1, .syscalls = r->syscalls};
	cli_program_config(p, &cfg, why, sizeof(why));
	int rc = ember_load(&cfg, fn, why, sizeof(why));
	free(p->code);
	p->code = NULL;
	if (rc) {
		snprintf(out->failed, sizeof(out->failed), "%s: %s", ember_error_name(rc), why);
		*fn = NULL;
		return -1;
	}
	struct ember_info info;
	ember_info(*fn, &info);
	out->syscalls = info.syscalls;
	prog_extra(out, "init_ms", (double)info.init_us / 1e3);
	prog_extra(out, "init_exits", (double)info.init_exits);
	return 0;
}

enum { R_EMBER, R_NATIVE, R_RUN, R_RESET, R_SETS };

/* A handler (row->image, a source under the repository) in row->args[0]'s runtime: a warm
 * invocation, and the runtime's own program started natively with the same loader and source
 * (fd 3), the request on a pipe, one of each per round; both must give row->expect. */
void prog_runtime(const struct prog_run *r, const struct prog_row *row, const char *backend,
		  struct prog_result *out)
{
	struct cli_program p;
	struct ember_function *fn;
	if (load(r, row, backend, &p, &fn, out))
		return;
	char host[4][4200], buf[256];
	const char *args[5];
	native_args(&p, host, args);
	struct bench_set s[R_SETS];
	for (int i = 0; i < R_SETS; i++)
		bench_set_init(&s[i], row->name, backend);
	double exits = 0;
	struct prog_sample e;
	for (int i = -WARMUP; i < r->iters && !out->failed[0]; i++) {
		if (prog_invoke(fn, row->request, &e, buf, sizeof(buf), out))
			break;
		if (!strstr(buf, row->expect)) {
			snprintf(out->failed, sizeof(out->failed), "Ember's output: '%.64s'", buf);
			break;
		}
		double nus = bench_spawn_code(p.image, args, p.path, row->request,
					      strlen(row->request), buf, sizeof(buf));
		if (nus < 0 || !strstr(buf, row->expect)) {
			snprintf(out->failed, sizeof(out->failed), "the native run failed: '%.64s'",
				 buf);
			break;
		}
		if (i < 0)
			continue;
		const double v[R_SETS] = {e.us, nus, e.run_us, e.reset_us};
		for (int k = 0; k < R_SETS; k++)
			if (bench_set_add(&s[k], v[k]))
				snprintf(out->failed, sizeof(out->failed), "out of memory");
		exits += e.exits;
	}
	if (!out->failed[0]) {
		struct bench_stats st;
		bench_set_stats(&s[R_EMBER], &st);
		out->p50_us = st.p50;
		out->p99_us = st.p99;
		bench_set_stats(&s[R_NATIVE], &st);
		out->native_p50_us = st.p50;
		out->native_p99_us = st.p99;
		out->ratio = out->p50_us / out->native_p50_us;
		out->exits = exits / r->iters;
		bench_set_stats(&s[R_RUN], &st);
		prog_extra(out, "run_p50_us", st.p50);
		bench_set_stats(&s[R_RESET], &st);
		prog_extra(out, "reset_p50_us", st.p50);
	}
	for (int i = 0; i < R_SETS; i++)
		bench_set_free(&s[i]);
	ember_unload(fn);
}
