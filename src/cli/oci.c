/* An OCI image layout given as a function's files: unpacked by Debian's umoci into a root tree. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"

extern char **environ;

/* dir is an OCI image layout: a folder holding the oci-layout file */
static int is_layout(const char *dir)
{
	char p[PATH_MAX];
	struct stat st;
	return snprintf(p, sizeof(p), "%s/oci-layout", dir) < (int)sizeof(p) && !stat(p, &st) &&
	       S_ISREG(st.st_mode);
}

/* path as LAYOUT or LAYOUT:TAG (a tag only where path itself is no file or folder) */
static int split(const char *path, char *layout, size_t len, const char **tag)
{
	struct stat st;
	*tag = "latest";
	if (snprintf(layout, len, "%s", path) >= (int)len)
		return 0;
	if (is_layout(layout))
		return 1;
	char *colon = strrchr(layout, ':');
	if (!colon || !stat(path, &st))
		return 0;
	*colon = 0;
	*tag = path + (colon - layout) + 1;
	return **tag && is_layout(layout);
}

/* the last non-empty line of umoci's log, its progress marks and spaces trimmed */
static void last_line(const char *path, char *out, size_t len)
{
	FILE *f = fopen(path, "re");
	char line[512];
	while (f && fgets(line, sizeof(line), f)) {
		char *p = line + strspn(line, " \t");
		if (!strncmp(p, "\xe2\xa8\xaf", 3) || !strncmp(p, "\xe2\x80\xa2", 3)) /* ⨯ • */
			p += 3;
		p += strspn(p, " \t");
		p[strcspn(p, "\r\n")] = 0;
		for (size_t n = strlen(p); n && p[n - 1] == ' ';)
			p[--n] = 0;
		if (*p)
			snprintf(out, len, "%s", p);
	}
	if (f)
		fclose(f);
}

int cli_oci_unpack(const char *path, char *root, size_t rootlen, char *why, size_t whylen)
{
	char layout[PATH_MAX], image[PATH_MAX + 256], tmp[PATH_MAX];
	const char *tag;
	if (!split(path, layout, sizeof(layout), &tag))
		return 0;
	const char *dir = cli_env("TMPDIR") ? cli_env("TMPDIR") : "/tmp";
	snprintf(tmp, sizeof(tmp), "%s/ember-oci-XXXXXX", dir);
	if (!mkdtemp(tmp))
		return snprintf(why, whylen, "cannot make a folder in %s: %s", dir,
				strerror(errno)),
		       -1;
	snprintf(image, sizeof(image), "%s:%s", layout, tag);
	snprintf(root, rootlen, "%s/rootfs", tmp);
	char *argv[] = {"umoci", "raw", "unpack", "--rootless", "--image", image, root, NULL};
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	char log[PATH_MAX + 16];
	snprintf(log, sizeof(log), "%s/umoci.log", tmp); /* its progress; its reason, on failure */
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	pid_t pid;
	int st = -1, rc = posix_spawnp(&pid, "umoci", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (!rc && waitpid(pid, &st, 0) < 0)
		st = -1;
	if (rc || !WIFEXITED(st) || WEXITSTATUS(st)) {
		char last[256] = "";
		last_line(log, last, sizeof(last));
		cli_oci_done(root);
		return snprintf(
			   why, whylen,
			   rc ? "%s: an OCI image layout, and umoci is missing (scripts/setup.sh "
				"installs it)"
			      : "%s: umoci could not unpack it: %s",
			   image, last[0] ? last : "no reason given"),
		       -1;
	}
	return 1;
}

static int remove_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p) && errno != ENOENT;
}

void cli_oci_done(const char *root)
{
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s", root);
	char *slash = strrchr(tmp, '/');
	if (!slash || strncmp(slash, "/rootfs", 8))
		return;
	*slash = 0; /* the temporary folder cli_oci_unpack made: rootfs and umoci's umoci.json */
	/* (under the sandbox: unlink and rmdir, no chmod; an image's read-only folder left by a
	 * user who is not root stays, and is named) */
	if (nftw(tmp, remove_one, 16, FTW_DEPTH | FTW_PHYS))
		fprintf(stderr, "ember: could not remove all of %s (the unpacked image)\n", tmp);
}
