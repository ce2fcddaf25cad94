/* The gVisor suite of `ember bench conformance`: its system-call tests (GoogleTest programs),
 * built from a checkout by tests/conformance/gvisor-build.sh into the folder --gvisor names. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench_conf.h"

static int gv_target(const struct conf_opts *o, const char *file, struct conf_target *t, char *why,
		     size_t len)
{
	if (!o->gvisor) {
		snprintf(why, len, "no --gvisor folder of built tests");
		return -1;
	}
	char prog[PATH_MAX];
	snprintf(prog, sizeof(prog), "%s/%s", o->gvisor, file);
	if (!realpath(prog, t->prog))
		snprintf(t->prog, sizeof(t->prog), "%s", prog);
	/* the root gvisor-build.sh makes: the programs under /gvisor, a shell */
	snprintf(t->root, sizeof(t->root), "%s/root", o->gvisor);
	if (access(t->root, X_OK))
		t->root[0] = 0;
	else /* there at /gvisor, its helpers beside it */
		snprintf(t->guest_prog, sizeof(t->guest_prog), "/gvisor/%s", file);
	if (access(t->prog, X_OK)) {
		snprintf(why, len, "no program %s: tests/conformance/gvisor-build.sh builds it",
			 t->prog);
		return -1;
	}
	snprintf(t->workdir, sizeof(t->workdir), "/");
	t->mem = "1G";
	t->env[0] = "TEST_TMPDIR=/tmp";
	return 0;
}

static int gv_list_args(const struct conf_file *f, const char **args)
{
	(void)f;
	args[0] = "--gtest_list_tests";
	return 1;
}

/* "Suite." on a line (a typed suite's with "  # TypeParam = ..." after it), then
 * "  Case  # GetParam() = ..." under it */
static int gv_list(struct conf_file *f, char *out)
{
	char suite[200] = "", id[400];
	for (char *p = out; *p;) {
		size_t n = strcspn(p, "\n"), w = strcspn(p, " \n");
		if (w && p[0] != ' ' && p[w - 1] == '.' && w < sizeof(suite))
			snprintf(suite, sizeof(suite), "%.*s", (int)w, p);
		else if (n > 2 && !strncmp(p, "  ", 2) && suite[0]) {
			size_t k = strcspn(p + 2, " \n");
			int m = snprintf(id, sizeof(id), "%s%.*s", suite, (int)k, p + 2);
			if (m > 0 && (size_t)m < sizeof(id) && conf_case_add(f, id, (size_t)m))
				return -1;
		}
		p += n + (p[n] == '\n');
	}
	return 0;
}

static int gv_batch_args(const struct conf_file *f, const char **args, char *buf, size_t len)
{
	if (!f->selected)
		return 0;
	size_t k = (size_t)snprintf(buf, len, "--gtest_filter=");
	for (size_t i = 0; i < f->ncases && k < len; i++)
		if (f->cases[i].wanted)
			k += (size_t)snprintf(buf + k, len - k, "%s:", f->cases[i].name);
	args[0] = buf;
	return 1;
}

static int gv_case_args(const struct conf_file *f, const char *name, const char **args, char *buf,
			size_t len)
{
	(void)f;
	snprintf(buf, len, "--gtest_filter=%s", name);
	args[0] = buf;
	return 1;
}

/* "[  KIND  ] id (" or "[  FAILED  ] id, where GetParam() = ..." */
static int verdict(const char *out, const char *kind, const char *id)
{
	char head[500];
	int n = snprintf(head, sizeof(head), "[%s] %s", kind, id);
	for (const char *p = strstr(out, head); p; p = strstr(p + 1, head))
		if ((p == out || p[-1] == '\n') && (p[n] == ' ' || p[n] == ','))
			return 1;
	return 0;
}

/* the assertion that failed: the line after "...: Failure", else gtest's own line */
static void reason(const char *out, const char *id, char *why, size_t len)
{
	char run[500];
	snprintf(run, sizeof(run), "[ RUN      ] %s\n", id);
	const char *p = strstr(out, run);
	const char *f = p ? strstr(p, ": Failure\n") : NULL;
	const char *end = p ? strstr(p + 1, "\n[ RUN      ]") : NULL;
	if (f && (!end || f < end)) {
		const char *bol = f;
		while (bol > out && bol[-1] != '\n')
			bol--;
		char where[200], what[300];
		conf_line(bol, where, sizeof(where));
		conf_line(f + 10, what, sizeof(what));
		snprintf(why, len, "%s %s", where, what);
		return;
	}
	snprintf(why, len, "failed");
}

static enum conf_res gv_result(const char *out, const char *id, char *why, size_t len)
{
	if (verdict(out, "       OK ", id))
		return CONF_PASS;
	if (verdict(out, "  SKIPPED ", id)) {
		snprintf(why, len, "skipped");
		return CONF_SKIP;
	}
	if (verdict(out, "  FAILED  ", id)) {
		reason(out, id, why, len);
		return CONF_FAIL;
	}
	return CONF_NONE;
}

const struct conf_suite conf_gvisor = {
    .name = "gvisor",
    .package = NULL, /* a checkout: its commit is the version */
    .files = NULL,   /* every program in the --gvisor folder */
    .target = gv_target,
    .list_args = gv_list_args,
    .list = gv_list,
    .batch_args = gv_batch_args,
    .case_args = gv_case_args,
    .result = gv_result,
};
