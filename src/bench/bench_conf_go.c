/* The Go suite of `ember bench conformance`: the standard library's own tests from Debian's
 * golang-1.19-src, one static test binary per package (tests/conformance/go-build.sh). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_conf.h"

static const char *const go_files[] = {
    "sync",
    "sync/atomic",
    "time",
    "os",
    "os/exec",
    "os/signal",
    "io",
    "bufio",
    "bytes",
    "strings",
    "strconv",
    "sort",
    "path/filepath",
    "encoding/json",
    "encoding/binary",
    "compress/gzip",
    "compress/flate",
    "crypto/sha256",
    "crypto/aes",
    "math/big",
    "regexp",
    "context",
    "runtime",
    NULL,
};

/* the package's file name in the build: sync/atomic is sync_atomic */
static void flat(const char *pkg, char *buf, size_t len)
{
	snprintf(buf, len, "%s", pkg);
	for (char *c = buf; *c; c++)
		if (*c == '/')
			*c = '_';
}

static int go_target(const struct conf_opts *o, const char *file, struct conf_target *t, char *why,
		     size_t len)
{
	char name[128], dirf[PATH_MAX], prog[PATH_MAX];
	flat(file, name, sizeof(name));
	/* by its absolute path (it runs itself again: os/exec's helper processes) */
	snprintf(prog, sizeof(prog), "%s/conformance/go/%s.test", o->build, name);
	if (!realpath(prog, t->prog))
		snprintf(t->prog, sizeof(t->prog), "%s", prog);
	snprintf(t->root, sizeof(t->root), "%s/conformance/go/%s.root", o->build, name);
	snprintf(dirf, sizeof(dirf), "%s/conformance/go/%s.dir", o->build, name);
	FILE *f = fopen(dirf, "r");
	int ok = f && fgets(t->workdir, sizeof(t->workdir), f);
	if (f)
		fclose(f);
	if (!ok) {
		snprintf(why, len,
			 "not built: tests/conformance/go-build.sh %s/conformance/go %s (make "
			 "conformance builds every package)",
			 o->build, file);
		return -1;
	}
	t->workdir[strcspn(t->workdir, "\n")] = 0;
	/* in its root: the program at /conformance/NAME.test, a package of ours at
	 * /conformance/src/NAME (go-build.sh), Go's own at their paths */
	snprintf(t->guest_prog, sizeof(t->guest_prog), "/conformance/%s.test", name);
	snprintf(dirf, sizeof(dirf), "%s/conformance/go/%s.wd", o->build, name);
	f = fopen(dirf, "r");
	if (f && fgets(t->guest_cwd, sizeof(t->guest_cwd), f))
		t->guest_cwd[strcspn(t->guest_cwd, "\n")] = 0;
	if (f)
		fclose(f);
	t->mem = "2G";
	return 0;
}

static int go_list_args(const struct conf_file *f, const char **args)
{
	(void)f;
	args[0] = "-test.list";
	args[1] = ".";
	return 2;
}

/* a name per line; benchmarks run only with -test.bench, so they are no case */
static int go_list(struct conf_file *f, char *out)
{
	for (char *p = out; *p;) {
		size_t n = strcspn(p, "\n");
		int ident = n && strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
					   "0123456789_") == n;
		if (ident && strncmp(p, "Benchmark", 9) && conf_case_add(f, p, n))
			return -1;
		p += n + (p[n] == '\n');
	}
	return 0;
}

static int go_batch_args(const struct conf_file *f, const char **args, char *buf, size_t len)
{
	int n = 0;
	args[n++] = "-test.short";
	args[n++] = "-test.v";
	args[n++] = "-test.timeout=0"; /* the harness bounds the run */
	if (!f->selected)
		return n;
	size_t k = (size_t)snprintf(buf, len, "-test.run=^(");
	for (size_t i = 0; i < f->ncases && k < len; i++)
		if (f->cases[i].wanted)
			k += (size_t)snprintf(buf + k, len - k, "%s|", f->cases[i].name);
	if (k < len && buf[k - 1] == '|')
		k--;
	snprintf(buf + k, k < len ? len - k : 0, ")$");
	args[n++] = buf;
	return n;
}

static int go_case_args(const struct conf_file *f, const char *name, const char **args, char *buf,
			size_t len)
{
	(void)f;
	snprintf(buf, len, "-test.run=^%s$", name);
	args[0] = "-test.short";
	args[1] = "-test.v";
	args[2] = "-test.timeout=0";
	args[3] = buf;
	return 4;
}

/* the line "--- KIND: name (" at a line's start */
static const char *verdict(const char *out, const char *kind, const char *name)
{
	char head[300];
	snprintf(head, sizeof(head), "--- %s: %s (", kind, name);
	for (const char *p = strstr(out, head); p; p = strstr(p + 1, head))
		if (p == out || p[-1] == '\n')
			return p;
	return NULL;
}

/* the first line that says why: logged under the case (indented), or a panic */
static void reason(const char *out, const char *name, char *why, size_t len)
{
	char run[300];
	snprintf(run, sizeof(run), "=== RUN   %s\n", name);
	const char *p = strstr(out, run);
	for (p = p ? p + strlen(run) : out; *p; p += strcspn(p, "\n") + (p[strcspn(p, "\n")] != 0))
		if ((*p == ' ' || *p == '\t' || !strncmp(p, "panic:", 6) ||
		     !strncmp(p, "fatal error:", 12)) &&
		    p[strspn(p, " \t")] != '\n') {
			conf_line(p, why, len);
			return;
		}
	snprintf(why, len, "failed");
}

static enum conf_res go_result(const char *out, const char *name, char *why, size_t len)
{
	const char *p;
	if (verdict(out, "PASS", name))
		return CONF_PASS;
	if ((p = verdict(out, "SKIP", name))) {
		reason(out, name, why, len);
		return CONF_SKIP;
	}
	if (verdict(out, "FAIL", name)) {
		reason(out, name, why, len);
		return CONF_FAIL;
	}
	return CONF_NONE;
}

const struct conf_suite conf_go = {
    .name = "go",
    .package = "golang-1.19-src",
    .files = go_files,
    .target = go_target,
    .list_args = go_list_args,
    .list = go_list,
    .batch_args = go_batch_args,
    .case_args = go_case_args,
    .result = go_result,
};
