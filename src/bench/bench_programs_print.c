/* `ember bench programs`: its results as JSON or as a table, each row's goal met or not. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/bench_programs.h"

static const char *ratio_name(const struct prog_row *row)
{
	return row->ratio_name ? row->ratio_name : "ratio";
}

int prog_goal_met(const struct prog_result *out, char *buf, size_t len)
{
	const struct prog_row *row = out->row;
	static const char *const op[] = {[GOAL_RATIO_LE] = "<=", [GOAL_RATIO_GE] = ">="};
	if (row->goal == GOAL_NONE)
		snprintf(buf, len, "-");
	else if (row->goal == GOAL_EXITS_EQ)
		snprintf(buf, len, "exits = %g (guest mode)", row->goal_v);
	else
		snprintf(buf, len, "%s %s %g", ratio_name(row), op[row->goal], row->goal_v);
	if (row->goal == GOAL_NONE || out->skipped[0] || out->failed[0])
		return -1;
	if (row->goal == GOAL_EXITS_EQ) /* trap mode exits once per call: no goal there */
		return out->syscalls && !strcmp(out->syscalls, "guest") ? out->exits == row->goal_v
									: -1;
	if (!isfinite(out->ratio))
		return 0;
	return row->goal == GOAL_RATIO_LE ? out->ratio <= row->goal_v : out->ratio >= row->goal_v;
}

static json_t *result_json(const struct prog_result *o)
{
	const struct prog_row *row = o->row;
	char goal[64];
	int met = prog_goal_met(o, goal, sizeof(goal));
	json_t *j = json_pack("{s:s,s:s}", "name", row->name, "backend", o->backend);
	json_object_set_new(j, "syscalls", o->syscalls ? json_string(o->syscalls) : json_null());
	json_object_set_new(j, "p50_us", bench_json_num(o->p50_us));
	json_object_set_new(j, "p99_us", bench_json_num(o->p99_us));
	json_object_set_new(j, "native_p50_us", bench_json_num(o->native_p50_us));
	json_object_set_new(j, "native_p99_us", bench_json_num(o->native_p99_us));
	json_object_set_new(j, "ratio", bench_json_num(o->ratio));
	json_object_set_new(j, "ratio_is",
			    json_string(row->ratio_is ? row->ratio_is : "p50_us / native_p50_us"));
	json_object_set_new(j, "exits", bench_json_num(o->exits));
	for (int i = 0; i < o->nextra; i++)
		json_object_set_new(j, o->extra[i].name, bench_json_num(o->extra[i].v));
	json_object_set_new(j, "goal", row->goal == GOAL_NONE ? json_null() : json_string(goal));
	json_object_set_new(j, "goal_met", met < 0 ? json_null() : json_boolean(met));
	if (o->skipped[0])
		json_object_set_new(j, "skipped", json_string(o->skipped));
	if (o->failed[0])
		json_object_set_new(j, "failed", json_string(o->failed));
	return j;
}

json_t *prog_json(const struct prog_run *r, const struct prog_result *res, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, result_json(&res[i]));
	json_t *j = json_pack("{s:i,s:I,s:I,s:I}", "iterations", r->iters, "threads_k",
			      (json_int_t)r->threads_k, "work_rounds", (json_int_t)r->work,
			      "procs_k", (json_int_t)r->procs_k);
	json_object_set_new(j, "load_start", bench_json_num(r->load[0]));
	json_object_set_new(j, "load_end", bench_json_num(r->load[1]));
	json_object_set_new(j, "results", a);
	return j;
}

/* a figure, or "-" where it does not apply */
static const char *fig(char *buf, size_t len, const char *fmt, double v)
{
	if (isfinite(v))
		snprintf(buf, len, fmt, v);
	else
		snprintf(buf, len, "-");
	return buf;
}

static const char *const met_text[] = {"NO", "yes"};

void prog_table(const struct prog_result *res, size_t nres)
{
	printf("%-19s %-7s %-5s %10s %10s %10s %10s %8s %6s  %-24s %s\n", "name", "backend", "mode",
	       "p50_us", "p99_us", "native_p50", "native_p99", "ratio", "exits", "goal", "met");
	for (size_t i = 0; i < nres; i++) {
		const struct prog_result *o = &res[i];
		char a[6][32], goal[64];
		int met = prog_goal_met(o, goal, sizeof(goal));
		if (o->skipped[0] || o->failed[0]) {
			printf("%-19s %-7s %s: %s\n", o->row->name, o->backend,
			       o->skipped[0] ? "skipped" : "FAILED",
			       o->skipped[0] ? o->skipped : o->failed);
			continue;
		}
		printf("%-19s %-7s %-5s %10s %10s %10s %10s %8s %6s  %-24s %s\n", o->row->name,
		       o->backend, o->syscalls ? o->syscalls : "-",
		       fig(a[0], 32, "%.1f", o->p50_us), fig(a[1], 32, "%.1f", o->p99_us),
		       fig(a[2], 32, "%.1f", o->native_p50_us),
		       fig(a[3], 32, "%.1f", o->native_p99_us), fig(a[4], 32, "%.3f", o->ratio),
		       fig(a[5], 32, "%.1f", o->exits), goal, met < 0 ? "-" : met_text[met]);
	}
	printf("\n");
	for (size_t i = 0; i < nres; i++) { /* each row's own figures */
		const struct prog_result *o = &res[i];
		if (!o->nextra)
			continue;
		printf("%s %s:", o->row->name, o->backend);
		for (int e = 0; e < o->nextra; e++)
			printf("%s %s %.2f", e ? "," : "", o->extra[e].name, o->extra[e].v);
		printf("\n");
	}
}
