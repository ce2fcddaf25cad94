/* `ember bench all`'s suite and cold parts: the existing benchmarks run with their raw samples
 * kept, their JSON saved, the exits and cold-start plots drawn, the summary rows taken. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_all.h"

/* one backend's object of a benchmark's --json report (both backends, or one) */
static json_t *of_backend(const struct all_ctx *c, json_t *report, int b)
{
	if (c->nbackends == 1)
		return report;
	return json_object_get(json_object_get(report, "backends"), c->backends[b]);
}

static double num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_number(v) ? json_number_value(v) : -1;
}

/* runs `ember bench NAME --json --iterations N --backend B` with its samples kept */
static json_t *run_bench(struct all_ctx *c, int (*fn)(int, char **), const char *name, int iters,
			 json_t *samples)
{
	char n[16];
	snprintf(n, sizeof(n), "%d", iters);
	char *argv[] = {(char *)name,
			"--json",
			"--iterations",
			n,
			"--backend",
			(char *)(c->nbackends == 2 ? "both" : c->backends[0]),
			NULL};
	return all_capture(c, fn, argv, samples);
}

/* writes a gnuplot script DIR/name.gp (the header and body given) and runs it */
static void draw(struct all_ctx *c, const char *name, const char *body)
{
	char gp[80];
	snprintf(gp, sizeof(gp), "%s.gp", name);
	FILE *f = all_open(c, gp);
	if (!f)
		return;
	fprintf(f, "set terminal pngcairo size 1000,600 noenhanced\nset output '%s/%s.png'\n%s",
		c->out, name, body);
	fclose(f);
	all_gnuplot(c, name);
}

/* the columns' titles of a clustered histogram: MODE (BACKEND) for each backend and mode */
static void cluster_cols(const struct all_ctx *c, FILE *gp, const char *dat,
			 const char *const *modes, int nmodes)
{
	fprintf(gp, "plot ");
	for (int b = 0, col = 2; b < c->nbackends; b++)
		for (int m = 0; m < nmodes; m++, col++)
			fprintf(gp, "%s'%s/%s' using %d:xtic(1) title '%s (%s)'",
				col > 2 ? ", " : "", c->out, dat, col, modes[m], c->backends[b]);
	fprintf(gp, "\n");
}

static const char hist_head[] = "set style data histograms\nset style histogram cluster gap 1\n"
				"set style fill solid 0.8 border -1\nset xtics rotate by -35\n"
				"set key top left\nset grid ytics\n";

int all_suite(struct all_ctx *c)
{
	json_t *samples = json_object();
	json_t *rep = run_bench(c, cli_bench_suite, "suite", c->suite_iters, samples);
	if (!rep)
		return json_decref(samples), -1;
	FILE *dat = all_open(c, "exits.dat");
	json_t *sum = json_array();
	size_t n = json_array_size(json_object_get(of_backend(c, rep, 0), "results"));
	for (size_t i = 0; i < n; i++) {
		for (int b = 0; b < c->nbackends; b++) {
			json_t *r =
			    json_array_get(json_object_get(of_backend(c, rep, b), "results"), i);
			json_t *t = json_object_get(r, "trap"), *g = json_object_get(r, "guest");
			const char *name = json_string_value(json_object_get(r, "name"));
			if (dat && b == 0)
				fprintf(dat, "%s", name);
			if (dat)
				fprintf(dat, " %.1f %.1f", num(t, "exits_per_invocation"),
					num(g, "exits_per_invocation"));
			json_array_append_new(
			    sum,
			    json_pack("{s:s,s:s,s:i,s:f,s:f,s:f,s:f,s:f,s:f}", "name", name,
				      "backend", c->backends[b], "n", c->suite_iters, "trap_p50_us",
				      num(t, "warm_p50_us"), "trap_p99_us", num(t, "warm_p99_us"),
				      "trap_exits", num(t, "exits_per_invocation"), "guest_p50_us",
				      num(g, "warm_p50_us"), "guest_p99_us", num(g, "warm_p99_us"),
				      "guest_exits", num(g, "exits_per_invocation")));
		}
		if (dat)
			fprintf(dat, "\n");
	}
	if (dat)
		fclose(dat);
	json_object_set_new(c->summary, "suite", sum);
	char body[4096];
	FILE *gp = fmemopen(body, sizeof(body), "w");
	fprintf(gp,
		"%sset ylabel 'exits per warm invocation'\nset title 'exits per invocation, "
		"per function (trap: every system call exits; guest: the in-guest runtime)'\n",
		hist_head);
	cluster_cols(c, gp, "exits.dat", (const char *const[]){"trap", "guest"}, 2);
	fclose(gp);
	draw(c, "exits", body);
	return all_write_json(c, "suite.json",
			      json_pack("{s:i,s:i,s:o,s:o}", "iterations", c->suite_iters, "warmup",
					3, "report", rep, "samples_us", samples));
}

/* the cold part's data files: start times per function and mode, prefetch bandwidth */
static void cold_dat(struct all_ctx *c, json_t *rep, json_t *sum, double *disk)
{
	FILE *st = all_open(c, "cold_starts.dat"), *bw = all_open(c, "cold_bandwidth.dat");
	size_t n = json_array_size(json_object_get(of_backend(c, rep, 0), "results"));
	*disk = num(of_backend(c, rep, 0), "disk_mb_s");
	for (size_t i = 0; st && bw && i < n; i++) {
		for (int b = 0; b < c->nbackends; b++) {
			json_t *r =
			    json_array_get(json_object_get(of_backend(c, rep, b), "results"), i);
			const char *name = json_string_value(json_object_get(r, "name"));
			if (b == 0)
				fprintf(st, "%s", name), fprintf(bw, "%s", name);
			fprintf(st, " %.3f %.3f", num(r, "lazy_p50_ms"), num(r, "reap_p50_ms"));
			fprintf(bw, " %.1f", num(r, "prefetch_mb_s"));
			json_array_append_new(
			    sum, json_pack("{s:s,s:s,s:i,s:f,s:f,s:f,s:f,s:f,s:f}", "name", name,
					   "backend", c->backends[b], "n", c->cold_iters,
					   "lazy_p50_ms", num(r, "lazy_p50_ms"), "reap_p50_ms",
					   num(r, "reap_p50_ms"), "speedup", num(r, "speedup"),
					   "ws_pages", num(r, "ws_pages"), "prefetch_mb_s",
					   num(r, "prefetch_mb_s"), "disk_mb_s", *disk));
		}
		fprintf(st, "\n"), fprintf(bw, "\n");
	}
	if (st)
		fclose(st);
	if (bw)
		fclose(bw);
}

int all_cold(struct all_ctx *c)
{
	json_t *samples = json_object();
	json_t *rep = run_bench(c, cli_bench_cold, "cold", c->cold_iters, samples);
	if (!rep)
		return json_decref(samples), -1;
	json_t *sum = json_array();
	double disk;
	cold_dat(c, rep, sum, &disk);
	json_object_set_new(c->summary, "cold", sum);
	char body[4096];
	FILE *gp = fmemopen(body, sizeof(body), "w");
	fprintf(gp,
		"%sset logscale y\nset ylabel 'cold start from disk, ms (p50, log)'\n"
		"set title 'cold starts, page cache dropped: lazy faults against REAP prefetch'\n",
		hist_head);
	cluster_cols(c, gp, "cold_starts.dat", (const char *const[]){"lazy", "REAP"}, 2);
	fclose(gp);
	draw(c, "cold_starts", body);
	gp = fmemopen(body, sizeof(body), "w");
	fprintf(gp,
		"%sset ylabel 'MB/s'\nset title 'REAP prefetch bandwidth against the disk (%.0f "
		"MB/s, O_DIRECT 4 MiB reads: the line)'\nset arrow from graph 0, first %.1f to "
		"graph 1, first %.1f nohead lw 3 lc rgb 'red'\n",
		hist_head, disk, disk, disk);
	cluster_cols(c, gp, "cold_bandwidth.dat", (const char *const[]){"prefetch"}, 1);
	fclose(gp);
	draw(c, "cold_bandwidth", body);
	return all_write_json(c, "cold.json",
			      json_pack("{s:i,s:s,s:o,s:o}", "iterations", c->cold_iters,
					"page_cache",
					"posix_fadvise(POSIX_FADV_DONTNEED) on the "
					"snapshot's files before every cold start",
					"report", rep, "samples_us", samples));
}
