/* What `ember bench conformance` found: a table per suite, the cases that did not pass with
 * their reasons, the JSON of docs/conformance.json, the wanted cases that regressed. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/bench_conf.h"

/* the suite's source and version: its Debian package's, or the file gvisor-build.sh left */
static void source(const struct conf_suite *s, const struct conf_opts *o, char *buf, size_t len)
{
	snprintf(buf, len, "%s", s->package ? s->package : "a gVisor checkout");
	if (!s->package) {
		char p[PATH_MAX + 16], line[200];
		snprintf(p, sizeof(p), "%s/SOURCE", o->gvisor ? o->gvisor : ".");
		FILE *f = o->gvisor ? fopen(p, "r") : NULL;
		if (f && fgets(line, sizeof(line), f))
			conf_line(line, buf, len);
		if (f)
			fclose(f);
		return;
	}
	const char *argv[] = {"/usr/bin/dpkg-query", "-W", "-f=${Version}", s->package, NULL};
	const char *envp[] = {"PATH=/usr/bin:/bin", NULL};
	struct conf_run r;
	if (!conf_exec(argv, NULL, envp, 30, &r) && r.len && r.status == 0) {
		size_t k = strlen(buf);
		snprintf(buf + k, len - k, " %.60s", r.out);
	}
	conf_run_free(&r);
}

/* a column's cases by result (a skip or none where Ember ran counts as a fail) */
struct count {
	int cases, by[CONF_SKIP + 1];
};

static void add(struct count *k, const struct conf_file *f, int col)
{
	for (size_t i = 0; i < f->ncases; i++)
		if (!f->selected || f->cases[i].wanted) {
			k->cases++;
			k->by[f->cases[i].res[col]]++;
		}
}

static int failed(const struct count *k)
{
	return k->cases - k->by[CONF_NA] - k->by[CONF_PASS] - k->by[CONF_CRASH] -
	       k->by[CONF_TIMEOUT];
}

/* the end of the run of files of files[a]'s suite (they come grouped by suite) */
static size_t suite_end(struct conf_file *const *files, size_t n, size_t a)
{
	size_t b = a;
	while (b < n && files[b]->suite == files[a]->suite)
		b++;
	return b;
}

static double pct(const struct count *k)
{
	int applicable = k->cases - k->by[CONF_NA];
	return applicable ? 100.0 * k->by[CONF_PASS] / applicable : 0;
}

static void row(const char *name, struct conf_file *const *files, size_t n,
		const struct conf_opts *o)
{
	struct count nat = {0};
	for (size_t i = 0; i < n; i++)
		add(&nat, files[i], CONF_NATIVE);
	printf("%-22s %6d %5d", name, nat.cases, nat.by[CONF_NA]);
	for (int col = CONF_KVM_GUEST; col < CONF_COLS; col++) {
		if (!o->cols[col])
			continue;
		struct count k = {0};
		for (size_t i = 0; i < n; i++)
			add(&k, files[i], col);
		printf("  %5d/%-5d %5.1f%%", k.by[CONF_PASS], k.cases - k.by[CONF_NA], pct(&k));
	}
	printf("\n");
}

void conf_print_table(struct conf_file *const *files, size_t n, const struct conf_opts *o)
{
	for (size_t a = 0; a < n;) {
		const struct conf_suite *s = files[a]->suite;
		size_t b = suite_end(files, n, a);
		char src[160];
		source(s, o, src, sizeof(src));
		printf("\n%s (%s): pass / applicable per column; n/a: failed or skipped natively\n",
		       s->name, src);
		printf("%-22s %6s %5s", "file", "cases", "n/a");
		for (int col = CONF_KVM_GUEST; col < CONF_COLS; col++)
			if (o->cols[col])
				printf("  %-18s", conf_cols[col].name);
		printf("\n");
		for (size_t i = a; i < b; i++) {
			if (files[i]->err[0])
				printf("%-22s not run: %s\n", files[i]->name, files[i]->err);
			else
				row(files[i]->name, files + i, 1, o);
		}
		row("all", files + a, b - a, o);
		printf("not passing in Ember (column: result: reason):\n");
		for (size_t i = a; i < b; i++)
			for (size_t j = 0; j < files[i]->ncases; j++) {
				const struct conf_case *c = &files[i]->cases[j];
				if (files[i]->selected && !c->wanted)
					continue;
				int shown = 0, same = 1, first = -1;
				for (int col = CONF_KVM_GUEST; col < CONF_COLS; col++) {
					if (!o->cols[col])
						continue;
					if (first < 0)
						first = col;
					else if (c->res[col] != c->res[first] ||
						 !c->why[col] != !c->why[first] ||
						 (c->why[col] &&
						  strcmp(c->why[col], c->why[first])))
						same = 0;
				}
				for (int col = CONF_KVM_GUEST; col < CONF_COLS; col++) {
					if (!o->cols[col] || c->res[col] == CONF_PASS ||
					    c->res[col] == CONF_NA || (same && shown))
						continue;
					printf("%s%s: %s: %s", shown ? "; " : "  ",
					       same ? "every column" : conf_cols[col].name,
					       conf_res_name(c->res[col]),
					       c->why[col] ? c->why[col] : "");
					shown = 1;
				}
				if (shown)
					printf("  [%s %s]\n", files[i]->name, c->name);
			}
		a = b;
	}
}

static json_t *summary(struct conf_file *const *files, size_t n, const struct conf_opts *o)
{
	json_t *sum = json_object();
	for (int col = 0; col < CONF_COLS; col++) {
		if (!o->cols[col])
			continue;
		struct count k = {0};
		for (size_t i = 0; i < n; i++)
			add(&k, files[i], col);
		json_object_set_new(sum, conf_cols[col].name,
				    json_pack("{s:i,s:i,s:i,s:i,s:i,s:i,s:o}", "cases", k.cases,
					      "applicable", k.cases - k.by[CONF_NA], "pass",
					      k.by[CONF_PASS], "fail", failed(&k), "crash",
					      k.by[CONF_CRASH], "timeout", k.by[CONF_TIMEOUT],
					      "pass_pct", bench_json_num(pct(&k))));
	}
	return sum;
}

static json_t *cases_json(struct conf_file *const *files, size_t n, const struct conf_opts *o)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < files[i]->ncases; j++) {
			const struct conf_case *c = &files[i]->cases[j];
			if (files[i]->selected && !c->wanted)
				continue;
			json_t *e = json_pack("{s:s,s:s}", "file", files[i]->name, "case", c->name);
			json_t *why = json_object();
			for (int col = 0; col < CONF_COLS; col++) {
				if (!o->cols[col])
					continue;
				json_object_set_new(e, conf_cols[col].name,
						    json_string(conf_res_name(c->res[col])));
				if (c->why[col])
					json_object_set_new(why, conf_cols[col].name,
							    json_string(c->why[col]));
			}
			if (json_object_size(why))
				json_object_set_new(e, "why", why);
			else
				json_decref(why);
			json_array_append_new(arr, e);
		}
	return arr;
}

int conf_write_json(struct conf_file *const *files, size_t n, const struct conf_opts *o,
		    const struct conf_totals *tot, const char *path)
{
	json_t *root = json_object(), *ss = json_object(), *cols = json_object();
	for (int col = 0; col < CONF_COLS; col++)
		if (o->cols[col])
			json_object_set_new(cols, conf_cols[col].name,
					    json_string(conf_cols[col].what));
	for (size_t a = 0; a < n;) {
		const struct conf_suite *s = files[a]->suite;
		size_t b = suite_end(files, n, a);
		char src[160];
		source(s, o, src, sizeof(src));
		json_t *errs = json_object();
		for (size_t i = a; i < b; i++)
			if (files[i]->err[0])
				json_object_set_new(errs, files[i]->name,
						    json_string(files[i]->err));
		json_object_set_new(ss, s->name,
				    json_pack("{s:s,s:o,s:o,s:o}", "source", src, "not_run", errs,
					      "summary", summary(files + a, b - a, o), "cases",
					      cases_json(files + a, b - a, o)));
		a = b;
	}
	json_object_set_new(root, "columns", cols);
	json_object_set_new(root, "suites", ss);
	json_object_set_new(root, "ember",
			    json_pack("{s:i,s:i,s:i,s:i}", "crashes", tot->host_crashes, "hangs",
				      tot->hangs, "runs_leaving_processes", tot->leaked_procs,
				      "descriptors_left_open", tot->leaked_fds));
	FILE *f = path ? fopen(path, "w") : stdout;
	int rc = !f || json_dumpf(root, f, JSON_INDENT(1) | JSON_PRESERVE_ORDER) < 0;
	if (f) {
		fputc('\n', f);
		if (path)
			rc |= fclose(f) != 0;
	}
	json_decref(root);
	return rc ? -1 : 0;
}

int conf_regressions(struct conf_file *const *files, size_t n, const struct conf_opts *o)
{
	int bad = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < files[i]->ncases; j++) {
			const struct conf_case *c = &files[i]->cases[j];
			for (int col = 0; c->wanted && col < CONF_COLS; col++) {
				if (!o->cols[col] || c->res[col] == CONF_PASS)
					continue;
				/* a wanted case n/a here (natively failing, or not listed): said,
				 * not counted against Ember */
				if (col == CONF_NATIVE || c->res[col] != CONF_NA)
					fprintf(stderr, "%s: %s %s %s: %s: %s\n",
						col == CONF_NATIVE ? "note" : "REGRESSION",
						files[i]->suite->name, files[i]->name, c->name,
						conf_cols[col].name,
						c->why[col] ? c->why[col]
							    : conf_res_name(c->res[col]));
				bad += col != CONF_NATIVE && c->res[col] != CONF_NA;
			}
		}
	return bad;
}
