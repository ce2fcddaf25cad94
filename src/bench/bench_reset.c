/* ember bench memory's resets: the cost of putting a virtine back after it wrote K pages, next to
 * copying K pages. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/bench_memory.h"
#include "ember/ember.h"

#define ITERS  40
#define WARMUP 3
#define PAGE   4096

static const unsigned ks[] = {1, 10, 100, 1000};
#define NK (sizeof(ks) / sizeof(ks[0]))

/* the floor: memcpy of k pages from one place to another, as the reset copies them back */
static double copy_us(unsigned k)
{
	static unsigned char src[1000 * PAGE], dst[1000 * PAGE];
	double t[ITERS];
	for (int i = 0; i < ITERS; i++) {
		src[i] = (unsigned char)i;
		double t0 = bench_now_us();
		for (unsigned p = 0; p < k; p++)
			memcpy(dst + (size_t)p * PAGE, src + (size_t)p * PAGE, PAGE);
		t[i] = bench_now_us() - t0;
	}
	return bench_quantile(t, ITERS, 0.5);
}

/* one configuration: p50 and p99 of the reset after writing k pages, and the pages put back */
static int measure(const char *build, const char *backend, const char *mode, unsigned k,
		   double *p50, double *p99, double *pages, double *run50, int *logged)
{
	char path[4200], err[300], req[16];
	snprintf(path, sizeof(path), "%s/guest/dirtier.musl", build);
	struct ember_config cfg = {.image = path, .backend = backend, .sharing = mode};
	struct ember_function *fn;
	if (ember_load(&cfg, &fn, err, sizeof(err))) {
		fprintf(stderr, "ember bench memory: dirtier (%s, %s): %s\n", backend, mode, err);
		return -1;
	}
	int n = snprintf(req, sizeof(req), "%u", k);
	double us[ITERS], pg[ITERS], run[ITERS];
	int rc = 0;
	for (int i = 0; !rc && i < WARMUP + ITERS; i++) {
		struct ember_result r;
		ember_invoke(fn, req, (size_t)n, &r);
		if (r.outcome != EMBER_OK || r.status)
			rc = -1;
		if (i >= WARMUP) {
			us[i - WARMUP] = (double)r.reset_us;
			pg[i - WARMUP] = (double)r.pages_touched;
			run[i - WARMUP] = (double)r.run_us;
			*logged = r.dirty_log;
		}
		ember_result_free(&r);
	}
	ember_unload(fn);
	if (rc)
		return fprintf(stderr, "ember bench memory: dirtier %u failed\n", k), -1;
	*p50 = bench_quantile(us, ITERS, 0.5);
	*p99 = bench_quantile(us, ITERS, 0.99);
	*pages = bench_quantile(pg, ITERS, 0.5);
	*run50 = bench_quantile(run, ITERS, 0.5);
	return 0;
}

json_t *bench_resets(const char *build, int json, int with_ptrace)
{
	static const struct {
		const char *backend, *mode;
	} cfgs[] = {{"kvm", "upm"}, {"kvm", "off"}, {"ptrace", "upm"}};
	json_t *rows = json_array();
	if (!json)
		printf(
		    "\nreset after writing K of 4096 snapshot pages (us, p50/p99; memcpy floor)\n"
		    "%6s %8s %14s %14s %14s\n",
		    "K", "floor", "kvm upm", "kvm off", "ptrace");
	for (size_t i = 0; i < NK; i++) {
		double floor = copy_us(ks[i]), p50[3] = {-1, -1, -1}, p99[3] = {-1, -1, -1}, pg,
		       run[3] = {-1, -1, -1};
		int logged = 0;
		for (size_t c = 0; c < 3; c++) {
			if (c == 2 && !with_ptrace)
				continue;
			if (measure(build, cfgs[c].backend, cfgs[c].mode, ks[i], &p50[c], &p99[c],
				    &pg, &run[c], &logged))
				continue;
			json_array_append_new(
			    rows,
			    json_pack("{s:s,s:s,s:i,s:o,s:o,s:o,s:o,s:o,s:s}", "backend",
				      cfgs[c].backend, "mode", cfgs[c].mode, "written", (int)ks[i],
				      "reset_p50_us", bench_json_num(p50[c]), "reset_p99_us",
				      bench_json_num(p99[c]), "run_p50_us", bench_json_num(run[c]),
				      "pages_put_back", bench_json_num(pg), "memcpy_floor_us",
				      bench_json_num(floor), "reset",
				      logged ? "dirty-log" : "compare"));
		}
		if (!json)
			printf("%6u %8.1f %7.0f/%-6.0f %7.0f/%-6.0f %7.0f/%-6.0f\n", ks[i], floor,
			       p50[0], run[0], p50[1], run[1], p50[2], run[2]);
	}
	return rows;
}
