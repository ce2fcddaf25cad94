/* `ember bench all`'s HTTP part: bench/http_sweep.sh's points read back with every latency, as
 * JSON, and throughput and p99 against concurrency drawn. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_all.h"
#include "bench/bench_samples.h"

/* loadgen's "key=value" in a results line, or -1 */
static double field(const char *line, const char *key)
{
	char k[40];
	snprintf(k, sizeof(k), " %s=", key);
	const char *p = strstr(line, k);
	return p ? atof(p + strlen(k)) : -1;
}

/* a point's samples file: "SECONDS LATENCY_US OK" per request; the answered ones */
static void read_samples(const struct all_ctx *c, const char *target, int conns,
			 struct bench_set *s)
{
	char path[4400];
	snprintf(path, sizeof(path), "%s/http/samples/%s-%d.txt", c->out, target, conns);
	FILE *f = fopen(path, "r");
	double t, us;
	int ok;
	while (f && fscanf(f, "%lf %lf %d", &t, &us, &ok) == 3)
		if (ok)
			bench_set_add(s, us);
	if (f)
		fclose(f);
}

static int sweep(const struct all_ctx *c)
{
	char line[14000], backends[64] = "", concs[256];
	for (int b = 0; b < c->nbackends; b++)
		snprintf(backends + strlen(backends), sizeof(backends) - strlen(backends), "%s%s",
			 b ? " " : "", c->backends[b]);
	snprintf(concs, sizeof(concs), "%s", c->concs);
	for (char *p = concs; *p; p++)
		*p = *p == ',' ? ' ' : *p;
	snprintf(line, sizeof(line),
		 "B='%s' OUT='%s/http' BACKENDS='%s' CONCS='%s' SECS='%g' sh "
		 "'%s/../bench/http_sweep.sh'",
		 c->build, c->out, backends, concs, c->http_secs, c->build);
	return system(line) ? -1 : 0;
}

static void plot(struct all_ctx *c, json_t *targets)
{
	FILE *gp = all_open(c, "http.gp");
	if (!gp)
		return;
	fprintf(gp,
		"set terminal pngcairo size 1200,500 noenhanced\nset output '%s/http.png'\n"
		"set multiplot layout 1,2 title 'hello over HTTP, closed loop (bench/loadgen)'\n"
		"set logscale x 2\nset xlabel 'connections'\nset grid\nset key top left\n",
		c->out);
	for (int panel = 0; panel < 2; panel++) {
		fprintf(gp, "set ylabel '%s'\n%splot ", panel ? "p99 latency, ms" : "requests/s",
			panel ? "set logscale y\n" : "");
		for (size_t i = 0; i < json_array_size(targets); i++)
			fprintf(
			    gp, "%s'%s/http/%s.dat' using 1:%d with linespoints lw 2 title '%s'",
			    i ? ", " : "", c->out, json_string_value(json_array_get(targets, i)),
			    panel ? 3 : 2, json_string_value(json_array_get(targets, i)));
		fprintf(gp, "\n");
	}
	fprintf(gp, "unset multiplot\n");
	fclose(gp);
	all_gnuplot(c, "http");
}

int all_http(struct all_ctx *c)
{
	all_progress("http", "bench/http_sweep.sh: connections %s, %g s each", c->concs,
		     c->http_secs);
	if (sweep(c))
		return -1;
	char path[4400];
	snprintf(path, sizeof(path), "%s/http/results.txt", c->out);
	FILE *f = fopen(path, "r");
	if (!f)
		return fprintf(stderr, "ember bench all: no %s\n", path), -1;
	json_t *points = json_array(), *sum = json_array(), *targets = json_array();
	char line[2048], target[64], last[64] = "";
	int conns;
	FILE *dat = NULL;
	while (fgets(line, sizeof(line), f) && sscanf(line, "%63s %d", target, &conns) == 2) {
		if (strcmp(target, last)) {
			if (dat)
				fclose(dat);
			snprintf(last, sizeof(last), "%s", target);
			snprintf(path, sizeof(path), "http/%s.dat", target);
			dat = all_open(c, path);
			json_array_append_new(targets, json_string(target));
		}
		struct bench_set s;
		bench_set_init(&s, target, "native");
		read_samples(c, target, conns, &s);
		double secs = field(line, "duration_us") / 1e6, ok = field(line, "ok");
		json_t *o = bench_set_json(&s);
		json_object_set_new(o, "connections", json_integer(conns));
		json_object_set_new(o, "requests_per_s", json_real(secs > 0 ? ok / secs : 0));
		json_object_set_new(o, "errors", json_real(field(line, "due") - ok));
		json_t *r = json_deep_copy(o);
		json_object_del(r, "samples_us");
		json_array_append_new(sum, r);
		json_array_append_new(points, o);
		struct bench_stats st;
		if (dat && !bench_set_stats(&s, &st))
			fprintf(dat, "%d %.1f %.3f\n", conns, secs > 0 ? ok / secs : 0,
				st.p99 / 1e3);
		bench_set_free(&s);
	}
	if (dat)
		fclose(dat);
	fclose(f);
	json_object_set_new(c->summary, "http", sum);
	plot(c, targets);
	json_decref(targets);
	return all_write_json(c, "http.json",
			      json_pack("{s:f,s:s,s:o}", "seconds_per_point", c->http_secs, "load",
					"closed loop, one request in flight per connection",
					"points", points));
}
