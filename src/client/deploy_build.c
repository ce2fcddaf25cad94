/* ember deploy: a lang c handler built into a static executable (its Makefile, or musl-gcc). */
#include <dirent.h>
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "client/stack.h"

#define MAX_SOURCES 64
#define MAX_EXE	    (256ULL << 20)

extern char **environ;

/* runs argv with its stdout on our stderr (the step lines own stdout); 0 when it exits 0 */
static int run(char *const argv[], char *why, size_t whylen)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int status;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, 2, 1);
	int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc)
		return snprintf(why, whylen, "cannot run %s: %s", argv[0], strerror(rc)), -1;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return snprintf(why, whylen, "waiting for %s: %s", argv[0],
					strerror(errno)),
			       -1;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status))
		return snprintf(why, whylen, "%s exited with status %d", argv[0],
				WEXITSTATUS(status)),
		       -1;
	return snprintf(why, whylen, "%s was killed by signal %d", argv[0], WTERMSIG(status)), -1;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* the folder's .c files, sorted, as paths into argv from *n on */
static int sources(const char *dir, char **argv, int *n, char *why, size_t whylen)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int first = *n;
	if (!d)
		return snprintf(why, whylen, "%s: %s", dir, strerror(errno)), -1;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l < 3 || strcmp(de->d_name + l - 2, ".c"))
			continue;
		if (*n - first == MAX_SOURCES) {
			closedir(d);
			return snprintf(why, whylen, "more than %d .c files in %s", MAX_SOURCES,
					dir),
			       -1;
		}
		if (asprintf(&argv[*n], "%s/%s", dir, de->d_name) < 0) {
			closedir(d);
			return snprintf(why, whylen, "out of memory"), -1;
		}
		argv[++*n] = NULL;
	}
	closedir(d);
	if (*n == first)
		return snprintf(why, whylen, "no Makefile and no .c file in the handler folder %s",
				dir),
		       -1;
	qsort(argv + first, (size_t)(*n - first), sizeof(char *), by_name);
	return 0;
}

/* the .c files (the handler itself, or those in its folder) with $EMBER_CC or musl-gcc */
static int compile(const struct cli_stack_fn *fn, int is_file, uint8_t **buf, size_t *len,
		   char *what, size_t whatlen, char *why, size_t whylen)
{
	const char *cc = getenv("EMBER_CC");
	const char *tmpdir = getenv("TMPDIR");
	char dir[CLI_PATH_MAX], out[CLI_PATH_MAX + 16];
	char *argv[MAX_SOURCES + 8] = {0};
	int n = 0, rc = -1;
	snprintf(dir, sizeof(dir), "%s/ember-build-XXXXXX", tmpdir && tmpdir[0] ? tmpdir : "/tmp");
	if (!mkdtemp(dir))
		return snprintf(why, whylen, "cannot make a build folder: %s", strerror(errno)), -1;
	snprintf(out, sizeof(out), "%s/handler", dir);
	const char *fixed[] = {cc && cc[0] ? cc : "musl-gcc", "-static", "-O2", "-o", out};
	for (; n < (int)(sizeof(fixed) / sizeof(fixed[0])); n++)
		if (!(argv[n] = strdup(fixed[n])))
			goto oom;
	if (is_file && !(argv[n++] = strdup(fn->handler)))
		goto oom;
	if (!is_file && sources(fn->handler, argv, &n, why, whylen))
		goto out;
	if (run(argv, why, whylen) || cli_read_file(out, MAX_EXE, buf, len, why, whylen))
		goto out;
	snprintf(what, whatlen, "built with %s -static from %s%s (%zu bytes)", argv[0], fn->handler,
		 is_file ? "" : "/*.c", *len);
	rc = 0;
	goto out;
oom:
	snprintf(why, whylen, "out of memory");
out:
	unlink(out);
	rmdir(dir);
	for (int i = 0; i < n; i++)
		free(argv[i]);
	return rc;
}

/* make -C DIR, with CC musl-gcc unless the environment names one; it must build DIR/handler */
static int make(const struct cli_stack_fn *fn, uint8_t **buf, size_t *len, char *what,
		size_t whatlen, char *why, size_t whylen)
{
	const char *cc = getenv("EMBER_CC");
	char exe[CLI_PATH_MAX + 16];
	char *argv[] = {"make", "-C", (char *)fn->handler, NULL};
	setenv("CC", cc && cc[0] ? cc : "musl-gcc", 0);
	if (run(argv, why, whylen))
		return -1;
	snprintf(exe, sizeof(exe), "%s/handler", fn->handler);
	struct stat st;
	if (stat(exe, &st) || !S_ISREG(st.st_mode))
		return snprintf(why, whylen,
				"make -C %s left no executable named handler in that folder "
				"(the Makefile must build one)",
				fn->handler),
		       -1;
	if (cli_read_file(exe, MAX_EXE, buf, len, why, whylen))
		return -1;
	snprintf(what, whatlen, "built with make -C %s (%zu bytes)", fn->handler, *len);
	return 0;
}

int cli_build_c(const struct cli_stack_fn *fn, uint8_t **buf, size_t *len, char *what,
		size_t whatlen, char *why, size_t whylen)
{
	struct stat st;
	char mk[CLI_PATH_MAX + 16], err[CLI_PATH_MAX + 256];
	int rc;
	if (stat(fn->handler, &st)) {
		snprintf(why, whylen, "%s: handler %s: %s", fn->name, fn->handler, strerror(errno));
		return -1;
	}
	snprintf(mk, sizeof(mk), "%s/Makefile", fn->handler);
	if (S_ISREG(st.st_mode))
		rc = compile(fn, 1, buf, len, what, whatlen, err, sizeof(err));
	else if (!access(mk, F_OK))
		rc = make(fn, buf, len, what, whatlen, err, sizeof(err));
	else
		rc = compile(fn, 0, buf, len, what, whatlen, err, sizeof(err));
	if (rc)
		snprintf(why, whylen, "%s: building the handler: %s", fn->name, err);
	return rc;
}
