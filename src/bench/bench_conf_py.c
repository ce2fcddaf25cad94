/* The Python suite of `ember bench conformance`: CPython's regression tests from Debian's
 * libpython3.11-testsuite, run by Debian's python3.11 with its files as a root filesystem. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "bench/bench_conf.h"

static const char *const py_files[] = {
    "test_os",	    "test_posix",    "test_threading", "test_thread", "test_subprocess",
    "test_signal",  "test_select",   "test_selectors", "test_mmap",   "test_fcntl",
    "test_time",    "test_json",     "test_decimal",   "test_re",     "test_zlib",
    "test_hashlib", "test_tempfile", "test_io",	       NULL,
};

static int py_target(const struct conf_opts *o, const char *file, struct conf_target *t, char *why,
		     size_t len)
{
	struct stat st;
	snprintf(t->prog, sizeof(t->prog), "/usr/bin/python3.11");
	snprintf(t->root, sizeof(t->root), "%s/conformance/python/root", o->build);
	char test[PATH_MAX + 64];
	snprintf(test, sizeof(test), "%s/usr/lib/python3.11/test/%s.py", t->root, file);
	int pkg = !stat(test, &st);
	snprintf(test, sizeof(test), "%s/usr/lib/python3.11/test/%s", t->root, file);
	if (!pkg && stat(test, &st)) {
		snprintf(why, len,
			 "no %s in %s: make conformance (Debian's libpython3.11-testsuite and the "
			 "python runtime's files)",
			 file, t->root);
		return -1;
	}
	snprintf(t->workdir, sizeof(t->workdir), "/");
	t->pre[0] = "-m";
	t->pre[1] = "test";
	t->npre = 2;
	t->mem = "1G";
	return 0;
}

static int py_list_args(const struct conf_file *f, const char **args)
{
	args[0] = "--list-cases";
	args[1] = f->name;
	return 2;
}

/* a test id per line: test.test_os.FileTests.test_access */
static int py_list(struct conf_file *f, char *out)
{
	for (char *p = out; *p;) {
		size_t n = strcspn(p, "\n");
		if (n > 5 && !strncmp(p, "test.", 5) && !memchr(p, ' ', n) &&
		    conf_case_add(f, p, n))
			return -1;
		p += n + (p[n] == '\n');
	}
	return 0;
}

static int py_batch_args(const struct conf_file *f, const char **args, char *buf, size_t len)
{
	(void)buf;
	(void)len;
	int n = 0;
	args[n++] = f->name;
	args[n++] = "-v";
	if (!f->selected)
		return n;
	for (size_t i = 0; i < f->ncases && n + 2 < CONF_ARGS - 8; i++)
		if (f->cases[i].wanted) {
			args[n++] = "-m";
			args[n++] = f->cases[i].name;
		}
	return n;
}

static int py_case_args(const struct conf_file *f, const char *name, const char **args, char *buf,
			size_t len)
{
	(void)buf;
	(void)len;
	args[0] = f->name;
	args[1] = "-v";
	args[2] = "-m";
	args[3] = name;
	return 4;
}

/* the line saying "(id) ... " and what follows it, or NULL */
static const char *verbose_line(const char *out, const char *id)
{
	char key[400];
	snprintf(key, sizeof(key), " (%s) ... ", id);
	return strstr(out, key);
}

/* a verdict word at p: unittest's, on the case's line or on a line of its own after output */
static enum conf_res word(const char *p)
{
	static const struct {
		const char *w;
		enum conf_res r;
	} words[] = {
	    {"ok", CONF_PASS},	    {"expected failure", CONF_PASS},
	    {"skipped", CONF_SKIP}, {"FAIL", CONF_FAIL},
	    {"ERROR", CONF_FAIL},   {"unexpected success", CONF_FAIL},
	};
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		size_t n = strlen(words[i].w);
		if (!strncmp(p, words[i].w, n) && (p[n] == '\n' || p[n] == ' ' || !p[n]))
			return words[i].r;
	}
	return CONF_NONE;
}

/* the exception line of the case's traceback ("AssertionError: ..."), else the header */
static void reason(const char *out, const char *id, char *why, size_t len)
{
	char key[400];
	snprintf(key, sizeof(key), " (%s)", id);
	for (const char *p = strstr(out, key); p; p = strstr(p + 1, key)) {
		const char *bol = p;
		while (bol > out && bol[-1] != '\n')
			bol--;
		if (strncmp(bol, "FAIL: ", 6) && strncmp(bol, "ERROR: ", 7))
			continue;
		const char *tb = strstr(p, "\nTraceback");
		const char *end = tb ? strstr(tb, "\n=========================") : NULL;
		for (const char *q = tb; q && (!end || q < end); q = strchr(q + 1, '\n'))
			if (q[1] && q[1] != ' ' && q[1] != '\n' && strncmp(q + 1, "Traceback", 9)) {
				conf_line(q + 1, why, len);
				return;
			}
		conf_line(bol, why, len);
		return;
	}
	snprintf(why, len, "failed");
}

static enum conf_res py_result(const char *out, const char *id, char *why, size_t len)
{
	/* up to the first summary: a forked child that raised may go on running the module and
	 * print its own verdicts after it */
	const char *ran = strstr(out, "\nRan "), *p = verbose_line(out, id);
	if (!p || (ran && p > ran))
		return CONF_NONE;
	p = strstr(p, " ... ") + 5;
	enum conf_res r = word(p);
	/* the case wrote lines of its own: its verdict is the first line that is one */
	for (const char *q = p; r == CONF_NONE && (q = strchr(q, '\n'));)
		r = word(++q);
	if (r == CONF_SKIP)
		conf_line(p, why, len);
	else if (r == CONF_FAIL)
		reason(out, id, why, len);
	return r;
}

const struct conf_suite conf_python = {
    .name = "python",
    .package = "libpython3.11-testsuite",
    .files = py_files,
    .target = py_target,
    .list_args = py_list_args,
    .list = py_list,
    .batch_args = py_batch_args,
    .case_args = py_case_args,
    .result = py_result,
};
