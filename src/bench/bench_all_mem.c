/* `ember bench all`'s memory part: `ember bench memory`'s density figures (PSS per warm virtine
 * against how many there are, per sharing mode) saved and drawn as curves. */
#include <stdio.h>
#include <string.h>

#include "bench/bench_all.h"

static double num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_number(v) ? json_number_value(v) : -1;
}

/* one curve's data file, DIR/memory/FUNCTION-MODE.dat: "N PSS_KIB" per point; 1 when new */
static int curve(const struct all_ctx *c, json_t *r, json_t *curves)
{
	char name[128], path[160];
	snprintf(name, sizeof(name), "%s-%s", json_string_value(json_object_get(r, "function")),
		 json_string_value(json_object_get(r, "mode")));
	snprintf(path, sizeof(path), "memory/%s.dat", name);
	int fresh = !json_object_get(curves, name);
	FILE *f = fresh ? all_open(c, path) : NULL;
	if (f)
		fclose(f);
	char full[4400];
	snprintf(full, sizeof(full), "%s/%s", c->out, path);
	f = fopen(full, "a");
	if (f) {
		fprintf(f, "%.0f %.1f\n", num(r, "n"), num(r, "pss_per_instance_kib"));
		fclose(f);
	}
	json_object_set_new(curves, name, json_true());
	return fresh;
}

static void plot(struct all_ctx *c, json_t *curves)
{
	FILE *gp = all_open(c, "density.gp");
	if (!gp)
		return;
	fprintf(
	    gp,
	    "set terminal pngcairo size 1000,600 noenhanced\nset output '%s/density.png'\n"
	    "set logscale xy\nset xlabel 'warm virtines (primed)'\nset ylabel 'PSS per "
	    "virtine, KiB (log)'\nset grid\nset key outside right\nset title 'memory density "
	    "per sharing mode (off: private copies; ksm: merged by KSM; upm: one shared copy)'\n"
	    "plot ",
	    c->out);
	const char *k;
	json_t *v;
	int first = 1;
	json_object_foreach(curves, k, v)
	{
		fprintf(gp, "%s'%s/memory/%s.dat' using 1:2 with linespoints lw 2 title '%s'",
			first ? "" : ", ", c->out, k, k);
		first = 0;
	}
	fprintf(gp, "\n");
	fclose(gp);
	all_gnuplot(c, "density");
}

int all_memory(struct all_ctx *c)
{
	char *argv[] = {"memory",
			"--json",
			"--n",
			(char *)(c->quick ? "1,8" : "1,8,64"),
			"--no-max",
			"--backend",
			(char *)c->backends[0],
			NULL};
	all_progress("memory", "ember bench memory --n %s --no-max on %s", argv[3], argv[6]);
	json_t *rep = all_capture(c, cli_bench_memory, argv, NULL);
	if (!rep)
		return -1;
	json_t *curves = json_object(), *sum = json_array(), *r;
	size_t i;
	json_array_foreach(json_object_get(rep, "results"), i, r)
	{
		curve(c, r, curves);
		json_array_append_new(sum, json_deep_copy(r));
	}
	plot(c, curves);
	json_decref(curves);
	json_object_set_new(c->summary, "memory", sum);
	return all_write_json(c, "memory.json",
			      json_pack("{s:s,s:s,s:o}", "backend", c->backends[0], "what",
					"PSS per warm, primed virtine, measured once per N",
					"report", rep));
}
