/* Finding the language runtimes' images: the environment, a build tree, an installed tree. */
#include <libgen.h>
#include <pthread.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/img.h"

static int is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

void img_runtime_dir(char *out, size_t outlen)
{
	const char *env = getenv("EMBER_RUNTIME_DIR");
	char exe[PATH_MAX], build[PATH_MAX + 16], installed[PATH_MAX + 32];
	if (env && env[0]) {
		snprintf(out, outlen, "%s", env);
		return;
	}
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		snprintf(out, outlen, "runtimes");
		return;
	}
	exe[n] = 0;
	char *bin = dirname(exe); /* in place: exe now holds the binary's folder */
	snprintf(build, sizeof(build), "%s/runtimes", bin);
	/* PREFIX/bin/ember -> PREFIX/lib/ember/runtimes (the Makefile's RUNTIMEDIR) */
	snprintf(installed, sizeof(installed), "%s/" IMG_RUNTIMES_INSTALLED, dirname(bin));
	snprintf(out, outlen, "%s", !is_dir(build) && is_dir(installed) ? installed : build);
}

/* The runtimes: Debian's Node.js and CPython run as they are, with their files built beside
 * them (runtimes.mk), and the folder's small static programs (Duktape, Lua, CPython built in) */
static const struct {
	const char *name, *alias; /* alias: another name for it, or NULL */
	/* an absolute path: this host's program (Debian's); else the runtime folder's file */
	const char *program;
	const char *files; /* the files' folder in the runtime folder, or NULL */
	/* its arguments before the handler's name: the script of its files that loads the
	 * handler, with the flags it needs (Node.js's vm.SourceTextModule, for ES modules) */
	const char *args[3];
	const char *handler;
	const char *package; /* the Debian package of host */
	uint64_t mem;
} runtimes[] = {
    /* V8 reserves its code range and heap up front: 512 MiB is too little for Node.js 20 */
    {"js",
     "node",
     "/usr/bin/node",
     "node-files",
     {"--experimental-vm-modules", "/usr/lib/ember/node.js"},
     "handler.js",
     "nodejs",
     1ULL << 30},
    {"python",
     "python3",
     "/usr/bin/python3.11",
     "python3-files",
     {"/usr/lib/ember/python.py"},
     "handler.py",
     "python3.11",
     256ULL << 20},
    /* ES5.1 and part of the standard library: their files keep their first names */
    {"duktape", NULL, "js", NULL, {NULL}, "handler.js", NULL, 0},
    {"lua", NULL, "lua", NULL, {NULL}, "handler.lua", NULL, 0},
    {"python-static", NULL, "python", "python-lib", {NULL}, "handler.py", NULL, 0},
};
#define NRUNTIMES (sizeof(runtimes) / sizeof(runtimes[0]))

/* name's row, or NRUNTIMES */
static size_t row_of(const char *name)
{
	size_t i = 0;
	while (i < NRUNTIMES && strcmp(name, runtimes[i].name) &&
	       (!runtimes[i].alias || strcmp(name, runtimes[i].alias)))
		i++;
	return i;
}

int img_runtime_known(const char *name)
{
	return row_of(name) < NRUNTIMES;
}

static char names[256];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

/* "js (or node), python (or python3), duktape, lua or python-static", from the table */
static void make_names(void)
{
	size_t n = 0;
	for (size_t i = 0; i < NRUNTIMES && n < sizeof(names); i++) {
		const char *sep = !i ? "" : i + 1 == NRUNTIMES ? " or " : ", ";
		n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s", sep, runtimes[i].name);
		if (runtimes[i].alias && n < sizeof(names))
			n += (size_t)snprintf(names + n, sizeof(names) - n, " (or %s)",
					      runtimes[i].alias);
	}
}

const char *img_runtime_names(void)
{
	pthread_once(&names_once, make_names);
	return names;
}

int img_runtime_find(const char *dir, const char *name, struct img_runtime *lang, char *why,
		     size_t whylen)
{
	size_t i = row_of(name);
	memset(lang, 0, sizeof(*lang));
	if (i == NRUNTIMES)
		return snprintf(why, whylen, "unknown runtime '%s' (%s)", name,
				img_runtime_names()),
		       -1;
	int host = runtimes[i].program[0] == '/';
	if (host)
		snprintf(lang->image, sizeof(lang->image), "%s", runtimes[i].program);
	else
		snprintf(lang->image, sizeof(lang->image), "%.4000s/%s", dir, runtimes[i].program);
	if (access(lang->image, R_OK) && host)
		return snprintf(why, whylen,
				"runtime '%s' needs %s, from Debian's %s (scripts/setup.sh "
				"installs it)",
				name, lang->image, runtimes[i].package),
		       -1;
	if (access(lang->image, R_OK))
		return snprintf(why, whylen, "runtime '%s' not found at %s (build it with make)",
				name, lang->image),
		       -1;
	if (runtimes[i].files) {
		snprintf(lang->files, sizeof(lang->files), "%.4000s/%s", dir, runtimes[i].files);
		if (!is_dir(lang->files))
			return snprintf(why, whylen,
					"the %s runtime's files are missing at %s (build them "
					"with make)",
					name, lang->files),
			       -1;
	}
	int a = 0;
	lang->argv[a++] = lang->image;
	for (int k = 0; k < 3 && runtimes[i].args[k]; k++)
		lang->argv[a++] = runtimes[i].args[k];
	lang->handler_arg = a;
	lang->argv[a++] = runtimes[i].handler;
	lang->mem = runtimes[i].mem;
	lang->handler = runtimes[i].handler;
	return 0;
}
