/* Finding the language runtimes' images: the environment, a build tree, an installed tree. */
#include <libgen.h>
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
