/* `ember bench conformance`'s command: its options, the files and cases it runs, its phases. */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/bench_conf.h"
#include "cli/cli.h"
#include "cli/opt.h"

#define MAX_FILES 256

static const struct conf_suite *const suites[] = {&conf_go, &conf_python, &conf_gvisor};
#define NSUITES (sizeof(suites) / sizeof(suites[0]))

/* name is in the comma-separated list (NULL: every name is) */
static int listed(const char *list, const char *name)
{
	if (!list)
		return 1;
	size_t n = strlen(name);
	for (const char *p = list; *p;) {
		size_t k = strcspn(p, ",");
		if (k == n && !strncmp(p, name, n))
			return 1;
		p += k + (p[k] == ',');
	}
	return 0;
}

struct sel {
	struct conf_file *files[MAX_FILES];
	size_t n;
};

/* the file of suite s named name, added when missing; NULL when there are too many */
static struct conf_file *file_of(struct sel *sel, const struct conf_suite *s, const char *name)
{
	for (size_t i = 0; i < sel->n; i++)
		if (sel->files[i]->suite == s && !strcmp(sel->files[i]->name, name))
			return sel->files[i];
	struct conf_file *f = sel->n < MAX_FILES ? calloc(1, sizeof(*f)) : NULL;
	if (!f)
		return NULL;
	f->suite = s;
	snprintf(f->name, sizeof(f->name), "%s", name);
	sel->files[sel->n++] = f;
	return f;
}

/* gVisor's test programs: the executables of its folder, by name */
static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void gvisor_files(struct sel *sel, const char *dir, const char *only)
{
	DIR *d = dir ? opendir(dir) : NULL;
	char *names[MAX_FILES];
	size_t n = 0;
	for (struct dirent *e; d && (e = readdir(d)) && n < MAX_FILES;) {
		char p[PATH_MAX];
		size_t len = strlen(e->d_name);
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (len > 5 && !strcmp(e->d_name + len - 5, "_test") && !access(p, X_OK) &&
		    listed(only, e->d_name))
			names[n++] = strdup(e->d_name);
	}
	if (d)
		closedir(d);
	qsort(names, n, sizeof(names[0]), cmp_str);
	for (size_t i = 0; i < n; i++) {
		if (names[i])
			file_of(sel, &conf_gvisor, names[i]);
		free(names[i]);
	}
}

/* --cases FILE: "SUITE FILE CASE" lines; the files to run and their wanted cases (marked once
 * they are listed) */
struct want {
	char suite[16], file[128], name[300];
};

static int read_cases(const char *path, struct want **out, size_t *n, struct sel *sel)
{
	FILE *fp = fopen(path, "r");
	if (!fp)
		return -1;
	char line[600];
	while (fgets(line, sizeof(line), fp)) {
		struct want w;
		if (line[0] == '#' ||
		    sscanf(line, "%15s %127s %299s", w.suite, w.file, w.name) != 3)
			continue;
		const struct conf_suite *s = NULL;
		for (size_t i = 0; i < NSUITES; i++)
			if (!strcmp(suites[i]->name, w.suite))
				s = suites[i];
		struct want *g = s ? realloc(*out, (*n + 1) * sizeof(**out)) : NULL;
		if (!g || !file_of(sel, s, w.file)) {
			fclose(fp);
			return -1;
		}
		*out = g;
		g[(*n)++] = w;
	}
	fclose(fp);
	return 0;
}

static void mark_wanted(struct conf_file *f, const struct want *w, size_t nw)
{
	f->selected = 1;
	for (size_t i = 0; i < nw; i++) {
		if (strcmp(w[i].suite, f->suite->name) || strcmp(w[i].file, f->name))
			continue;
		size_t k = 0;
		while (k < f->ncases && strcmp(f->cases[k].name, w[i].name))
			k++;
		if (k < f->ncases)
			f->cases[k].wanted = 1;
		else if (!conf_case_add(f, w[i].name, strlen(w[i].name)))
			f->cases[f->ncases - 1].wanted = 1; /* not listed natively: n/a, said */
	}
}

/* what the command line sets */
struct conf_args {
	struct conf_opts o;
	const char *suite_list, *only, *cases, *out, *backend, *syscalls;
	int json, jobs;
};

static const char conf_head[] =
    "usage: ember bench conformance [--json] [--out FILE] [--suite go,python,gvisor]\n"
    "                               [--files A,B] [--cases FILE] [--gvisor DIR]\n"
    "                               [--backend both|kvm|ptrace] [--syscalls both|guest|trap]\n"
    "                               [--jobs N] [--timeout SECS] [--state DIR]\n"
    "\n"
    "Runs suites nobody here wrote, case by case, natively and in Ember: Go's "
    "standard-library\n"
    "tests (Debian's golang-1.19-src), CPython's regression tests (libpython3.11-testsuite, "
    "run\n"
    "by Debian's python3.11) and, with --gvisor, gVisor's system-call tests. `make "
    "conformance`\n"
    "builds the test programs into build/conformance/; tests/conformance/gvisor-build.sh "
    "builds\n"
    "gVisor's from a checkout (docs/conformance.md).\n"
    "\n"
    "Each file (a package, a module, a test program) runs whole, then every case that did not\n"
    "pass runs again alone, so one crash hides nothing. Per case and column: pass, fail (its\n"
    "first failure line), crash (Ember's message), timeout, or n/a: a case that fails or is\n"
    "skipped natively here is not applicable, never a pass. The columns: native; kvm_guest and\n"
    "kvm_trap (KVM, --syscalls guest and trap); ptrace. A table per file, or JSON.\n"
    "\n";
static const char conf_tail[] =
    "\n"
    "exit status: 0; 1 when a case --cases names did not pass, or Ember itself crashed, hung\n"
    "or left processes or descriptors behind; 125 bad usage.\n";

static const struct opt conf_opts[] = {
    OPT_STRING("suite", 0, struct conf_args, suite_list, "LIST",
	       "the suites (default go,python; gvisor with --gvisor)"),
    OPT_STRING("files", 0, struct conf_args, only, "LIST",
	       "only these packages, modules or test programs"),
    OPT_STRING("cases", 0, struct conf_args, cases, "FILE",
	       "only the cases FILE names, a line each: SUITE FILE CASE (# comments);\n"
	       "each must pass in every Ember column, or the exit status is 1"),
    OPT_STRING("gvisor", 0, struct conf_args, o.gvisor, "DIR",
	       "the folder of gVisor's built test programs"),
    OPT_STRING("backend", 0, struct conf_args, backend, "B",
	       "both (default where /dev/kvm opens; else ptrace, said in a line),\n"
	       "kvm or ptrace"),
    OPT_STRING("syscalls", 0, struct conf_args, syscalls, "M",
	       "both (default), guest or trap: the KVM columns"),
    OPT_INT("jobs", 0, struct conf_args, jobs, "N", 1, 16, "--jobs needs a count from 1 to 16",
	    "runs at once (default 2)"),
    OPT_STRING("state", 0, struct conf_args, o.state, "DIR",
	       "where Ember keeps the packed root filesystems between runs (default\n"
	       "build/conformance/state)"),
    OPT_DOUBLE("timeout", 0, struct conf_args, o.timeout_s, "SECS", 0, 1e9,
	       "--timeout needs a positive number of seconds",
	       "one case's bound in Ember and natively (default 60); a whole file's\n"
	       "is 900; past either by 30 s a run is a hang"),
    OPT_FLAG("json", 0, struct conf_args, json,
	     "the JSON (docs/conformance.json's form) on stdout, not the table"),
    OPT_STRING("out", 0, struct conf_args, out, "FILE", "the JSON into FILE as well"),
    OPT_END(),
};

static const struct opt_cmd conf_cmd = OPT_CMD("bench conformance", conf_head, conf_opts, conf_tail,
					       18, 0, "no arguments beside the options");

static int usage(const char *why)
{
	return opt_usage_error(&conf_cmd, why);
}

/* the columns --backend and --syscalls ask for */
static int columns(const char *backend, const char *syscalls, struct conf_opts *o)
{
	if (!listed("both,kvm,ptrace", backend) || !listed("both,guest,trap", syscalls))
		return -1;
	int kvm = strcmp(backend, "ptrace") != 0, pt = strcmp(backend, "kvm") != 0;
	int fd = kvm ? open("/dev/kvm", O_RDWR | O_CLOEXEC) : -1;
	if (kvm && fd < 0 && !strcmp(backend, "both")) {
		fprintf(stderr, "ember bench conformance: /dev/kvm does not open here: ptrace "
				"alone (scripts/qemu-kvm.sh runs KVM in a guest)\n");
		kvm = 0;
	}
	if (fd >= 0)
		close(fd);
	o->cols[CONF_NATIVE] = 1;
	o->cols[CONF_KVM_GUEST] = kvm && strcmp(syscalls, "trap");
	o->cols[CONF_KVM_TRAP] = kvm && strcmp(syscalls, "guest");
	o->cols[CONF_PTRACE] = pt;
	return 0;
}

int cli_bench_conformance(int argc, char **argv)
{
	struct conf_args a = {
	    .o = {.timeout_s = 60}, .backend = "both", .syscalls = "both", .jobs = 2};
	int first, end = opt_parse(&conf_cmd, &a, argc, argv, &first);
	if (end >= 0)
		return end;
	struct conf_opts o = a.o;
	const char *suite_list = a.suite_list, *only = a.only, *cases = a.cases, *out = a.out;
	const char *backend = a.backend, *syscalls = a.syscalls;
	int json = a.json, jobs = a.jobs;
	if (columns(backend, syscalls, &o))
		return usage("--backend is both, kvm or ptrace; --syscalls both, guest or trap");
	static char self[PATH_MAX];
	ssize_t k = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[k > 0 ? k : 0] = 0;
	o.ember = self;
	o.build = bench_build_dir();

	struct sel sel = {.n = 0};
	struct want *want = NULL;
	size_t nwant = 0;
	if (cases && read_cases(cases, &want, &nwant, &sel))
		return usage(
		    "--cases: a file of SUITE FILE CASE lines, of suites go, python, gvisor");
	const struct conf_suite *one = NULL;
	int non = 0;
	for (size_t i = 0; !cases && i < NSUITES; i++) {
		const struct conf_suite *s = suites[i];
		int on = suite_list ? listed(suite_list, s->name) : s != &conf_gvisor || o.gvisor;
		if (on)
			one = s, non++;
		if (on && s == &conf_gvisor)
			gvisor_files(&sel, o.gvisor, only);
		for (size_t j = 0; on && s->files && s->files[j]; j++)
			if (listed(only, s->files[j]))
				file_of(&sel, s, s->files[j]);
	}
	/* --files beyond the defaults (the harness's own self-test, say) with one suite */
	for (const char *p = only; !cases && non == 1 && p && *p;) {
		char name[128];
		size_t k = strcspn(p, ",");
		snprintf(name, sizeof(name), "%.*s", (int)k, p);
		if (one != &conf_gvisor)
			file_of(&sel, one, name);
		p += k + (p[k] == ',');
	}
	if (!sel.n)
		return usage("no file to run: see --suite, --files and --gvisor");

	for (size_t i = 0; i < sel.n; i++) {
		conf_open_file(sel.files[i], &o);
		if (cases)
			mark_wanted(sel.files[i], want, nwant);
	}
	free(want);
	int native[] = {CONF_NATIVE}, ember[CONF_COLS], ne = 0;
	for (int i = CONF_KVM_GUEST; i < CONF_COLS; i++)
		if (o.cols[i])
			ember[ne++] = i;
	conf_phase(sel.files, sel.n, native, 1, &o, jobs);
	conf_phase(sel.files, sel.n, ember, ne, &o, jobs);

	if (!json)
		conf_print_table(sel.files, sel.n, &o);
	int rc = 0;
	if (json || out)
		rc = conf_write_json(sel.files, sel.n, &o, &conf_totals, json ? NULL : out) ||
		     (json && out && conf_write_json(sel.files, sel.n, &o, &conf_totals, out));
	int bad = conf_regressions(sel.files, sel.n, &o);
	const struct conf_totals *t = &conf_totals;
	fprintf(json ? stderr : stdout,
		"Ember itself: %d crashes, %d hangs, %d runs that left processes, %d descriptors "
		"left open\n",
		t->host_crashes, t->hangs, t->leaked_procs, t->leaked_fds);
	for (size_t i = 0; i < sel.n; i++) {
		for (size_t j = 0; j < sel.files[i]->ncases; j++) {
			free(sel.files[i]->cases[j].name);
			for (int col = 0; col < CONF_COLS; col++)
				free(sel.files[i]->cases[j].why[col]);
		}
		free(sel.files[i]->cases);
		free(sel.files[i]);
	}
	if (rc)
		return CLI_EXIT_EMBER; /* the JSON could not be written */
	return bad || t->host_crashes || t->hangs || t->leaked_procs || t->leaked_fds;
}
