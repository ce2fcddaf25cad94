/* `ember serve --user NAME`: the user the server becomes after opening what needs root, and the
 * state folder that user must own. */
#include <errno.h>
#include <fts.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"

int cli_user_find(const char *name, struct cli_user *u, char *why, size_t whylen)
{
	if (geteuid() != 0)
		return snprintf(why, whylen, "--user needs root (this is uid %u)",
				(unsigned)geteuid()),
		       -1;
	errno = 0;
	struct passwd *pw = getpwnam(name);
	if (!pw)
		return snprintf(why, whylen, "--user %s: %s", name,
				errno ? strerror(errno) : "no such user"),
		       -1;
	if (pw->pw_uid == 0)
		return snprintf(why, whylen, "--user %s: that is root, which --user gives up",
				name),
		       -1;
	if (snprintf(u->name, sizeof(u->name), "%s", name) >= (int)sizeof(u->name))
		return snprintf(why, whylen, "--user: name too long"), -1;
	u->uid = pw->pw_uid;
	u->gid = pw->pw_gid;
	return 0;
}

/* a missing folder is made, its parents root's, the folder the user's */
static int make_state(const struct cli_user *u, const char *dir, char *why, size_t whylen)
{
	char buf[4096];
	if (snprintf(buf, sizeof(buf), "%s", dir) >= (int)sizeof(buf))
		return snprintf(why, whylen, "state folder %s: path too long", dir), -1;
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0755) && errno != EEXIST)
			return snprintf(why, whylen, "%s: %s", buf, strerror(errno)), -1;
		*p = '/';
	}
	if (mkdir(dir, 0700) || chown(dir, u->uid, u->gid))
		return snprintf(why, whylen, "state folder %s: %s", dir, strerror(errno)), -1;
	return 0;
}

int cli_user_state(const struct cli_user *u, const char *dir, char *why, size_t whylen)
{
	struct stat st;
	if (stat(dir, &st) && errno == ENOENT)
		return make_state(u, dir, why, whylen);
	/* an existing folder is not chowned behind the operator's back: every entry must already
	 * be the user's, or the server would fail later on the first one it cannot write */
	char *const roots[] = {(char *)dir, NULL};
	FTS *fts = fts_open(roots, FTS_PHYSICAL | FTS_COMFOLLOW | FTS_NOCHDIR, NULL);
	if (!fts)
		return snprintf(why, whylen, "state folder %s: %s", dir, strerror(errno)), -1;
	int rc = 0;
	FTSENT *e;
	while (!rc && (e = fts_read(fts))) {
		if (e->fts_info == FTS_DP)
			continue;
		if (e->fts_info == FTS_DNR || e->fts_info == FTS_ERR || e->fts_info == FTS_NS)
			rc = snprintf(why, whylen, "%s: %s", e->fts_path, strerror(e->fts_errno));
		else if (e->fts_statp->st_uid != u->uid)
			rc = snprintf(
			    why, whylen,
			    "%s belongs to uid %u, not to %s: the state folder must be the "
			    "user's the server runs as (chown -R %s %s)",
			    e->fts_path, (unsigned)e->fts_statp->st_uid, u->name, u->name, dir);
	}
	fts_close(fts);
	return rc ? -1 : 0;
}

int cli_user_become(const struct cli_user *u, char *why, size_t whylen)
{
	/* groups first, then the group, then the user: after setuid nothing else may change */
	if (initgroups(u->name, u->gid) || setgid(u->gid) || setuid(u->uid))
		return snprintf(why, whylen, "becoming %s: %s", u->name, strerror(errno)), -1;
	uid_t r, e, s;
	gid_t rg, eg, sg;
	if (setuid(0) == 0 || setgid(0) == 0 || getresuid(&r, &e, &s) || getresgid(&rg, &eg, &sg) ||
	    r != u->uid || e != u->uid || s != u->uid || rg != u->gid || eg != u->gid ||
	    sg != u->gid)
		return snprintf(why, whylen, "becoming %s: root could still be regained", u->name),
		       -1;
	return 0;
}
