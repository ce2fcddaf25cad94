/* The state directory: functions/<name>.json, images/<name> and async/, written atomically. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/srv_core.h"
#include "server/srv_spec.h"
#include "server/srv_store.h"
#include "server/srv_registry.h"

int store_kind(int e)
{
	return e == ENOMEM ? EMBER_ERR_NOMEM : EMBER_ERR_IO;
}

static int mkdir_p(const char *path)
{
	char buf[SRV_PATH_MAX];
	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -1;
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(buf, 0755) && errno != EEXIST ? -1 : 0;
}

int store_sync(const struct srv *s, const char *dir)
{
	char path[SRV_PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", s->state, dir);
	return base_fsync_path(path) ? -1 : 0;
}

/* removes what an interrupted write left behind: .tmp-* files; returns how many */
static int sweep(const struct srv *s, const char *dir)
{
	char path[SRV_PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", s->state, dir);
	DIR *d = opendir(path);
	struct dirent *de;
	int n = 0;
	while (d && (de = readdir(d)))
		if (!strncmp(de->d_name, ".tmp-", 5))
			n += unlinkat(dirfd(d), de->d_name, 0) == 0;
	if (d)
		closedir(d);
	return n;
}

int store_init(struct srv *s, char *err, size_t errlen)
{
	/* each worker of ember serve --workers has its async queue: worker 0 the usual one */
	if (s->opt.workers > 1 && s->opt.worker)
		snprintf(s->async_dir, sizeof(s->async_dir), "async-w%u", s->opt.worker);
	else
		snprintf(s->async_dir, sizeof(s->async_dir), "async");
	const char *const dirs[] = {"functions", "images", s->async_dir, "function-secrets"};
	/* a worker sweeps only at the first start of the first one, before the others start: a
	 * restarted one would take another's temporary file for a crash's */
	int may_sweep = s->opt.workers <= 1 || (!s->opt.worker && !s->opt.restarted);
	char path[SRV_PATH_MAX];
	int swept = 0;
	if (mkdir_p(s->opt.state_dir) || !realpath(s->opt.state_dir, s->state))
		return snprintf(err, errlen, "state directory %s: %s", s->opt.state_dir,
				strerror(errno)),
		       -1;
	if (strlen(s->state) > PATH_MAX - 256)
		return snprintf(err, errlen, "state directory %s: path too long", s->state), -1;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", s->state, dirs[i]);
		if (mkdir(path, 0755) && errno != EEXIST)
			return snprintf(err, errlen, "%s: %s", path, strerror(errno)), -1;
		if (access(path, W_OK))
			return snprintf(err, errlen, "%s: %s", path, strerror(errno)), -1;
		swept += may_sweep ? sweep(s, dirs[i]) : 0;
	}
	swept += may_sweep ? ember_sweep(s->state)
			   : 0; /* snapshots half-written by a process that died */
	if (swept)
		srv_log(s, "info", "removed %d temporary files a crash left in %s", swept,
			s->state);
	return 0;
}

/* every path the server touches is made here, from a checked name */
int store_path(const struct srv *s, const char *dir, const char *name, const char *ext, char *buf,
	       size_t len)
{
	if (!srv_name_ok(name))
		return -1;
	int n = snprintf(buf, len, "%s/%s/%s%s", s->state, dir, name, ext);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int store_temp(const struct srv *s, const char *dir, const void *data, size_t len, int mode,
	       char *path, size_t pathlen, char *err, size_t errlen)
{
	if (snprintf(path, pathlen, "%s/%s/.tmp-XXXXXX", s->state, dir) >= (int)pathlen)
		return snprintf(err, errlen, "state path too long"), EMBER_ERR_IO;
	int e = -base_temp_write(path, data, len, mode);
	if (!e)
		return 0;
	snprintf(err, errlen, "writing %s: %s", path, strerror(e));
	return store_kind(e);
}

int store_commit(const struct srv *s, const char *dir, const char *tmp, const char *name,
		 const char *ext, char *err, size_t errlen)
{
	char path[SRV_PATH_MAX];
	if (store_path(s, dir, name, ext, path, sizeof(path))) {
		unlink(tmp);
		return snprintf(err, errlen, "bad name"), EMBER_ERR_CONFIG;
	}
	/* a pinned image linked to the very file it replaces: rename would do nothing, and leave
	 * tmp behind */
	struct stat a, b;
	if (!stat(tmp, &a) && !stat(path, &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
		unlink(tmp);
		store_sync(s, dir);
		return 0;
	}
	int e = -base_commit(tmp, path); /* the rename, then the folder's fsync */
	if (e)
		snprintf(err, errlen, "%s: %s", path, strerror(e));
	return e ? store_kind(e) : 0;
}

int store_write(const struct srv *s, const char *dir, const char *name, const char *ext,
		const void *data, size_t len, char *err, size_t errlen)
{
	char tmp[SRV_PATH_MAX];
	int rc = store_temp(s, dir, data, len, 0644, tmp, sizeof(tmp), err, errlen);
	return rc ? rc : store_commit(s, dir, tmp, name, ext, err, errlen);
}

int store_remove(const struct srv *s, const char *dir, const char *name, const char *ext)
{
	char path[SRV_PATH_MAX];
	if (store_path(s, dir, name, ext, path, sizeof(path)) || unlink(path))
		return -1;
	store_sync(s, dir);
	return 0;
}
