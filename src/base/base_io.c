/* Whole-file I/O: read-all loops, fsync by path, atomic replace of a file and the sweep of what
 * a crash left of one (the write-all loops are base_write.c). */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"

void base_want(const void *p, size_t len)
{
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)4095, b = (uintptr_t)p + len;
	if (len && b > a)
		madvise((void *)a, b - a, MADV_WILLNEED); /* advice: a refusal loses nothing */
}

int base_read_fd(int fd, size_t max, uint8_t **buf, size_t *len)
{
	size_t cap = 65536, n = 0;
	uint8_t *b = malloc(cap + 1);
	int rc = b ? 0 : -ENOMEM;
	while (!rc) {
		if (n == cap) {
			uint8_t *nb = cap > max ? NULL : realloc(b, cap * 2 + 1);
			if (!nb) {
				rc = cap > max ? -EFBIG : -ENOMEM;
				break;
			}
			b = nb;
			cap *= 2;
		}
		ssize_t r = read(fd, b + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			rc = -errno;
		else if (r == 0)
			break;
		else
			n += (size_t)r;
	}
	if (!rc && n > max)
		rc = -EFBIG;
	if (rc) {
		free(b);
		return rc;
	}
	b[n] = 0;
	*buf = b;
	*len = n;
	return 0;
}

int base_read_file(const char *path, size_t max, uint8_t **buf, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = base_read_fd(fd, max, buf, len);
	close(fd);
	return rc;
}

int base_fsync_path(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = fsync(fd) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

int base_temp_write(char *tmpl, const void *data, size_t len, int mode)
{
	int fd = mkostemp(tmpl, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = base_write_all(fd, data, len);
	if (!rc && (fchmod(fd, (mode_t)mode) < 0 || fsync(fd) < 0))
		rc = -errno;
	if (close(fd) < 0 && !rc)
		rc = -errno;
	if (rc)
		unlink(tmpl);
	return rc;
}

/* the folder path names an entry of */
static void parent_of(const char *path, char *out, size_t len)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		snprintf(out, len, ".");
	else if (slash == path)
		snprintf(out, len, "/");
	else
		snprintf(out, len, "%.*s", (int)(slash - path), path);
}

int base_commit(const char *tmp, const char *path)
{
	if (rename(tmp, path) < 0) {
		int rc = -errno;
		unlink(tmp);
		return rc;
	}
	char dir[4096];
	parent_of(path, dir, sizeof(dir));
	return base_fsync_path(dir); /* the new name survives a crash of the machine too */
}

int base_replace(const char *path, const void *data, size_t len, int mode)
{
	char tmp[4096];
	if (snprintf(tmp, sizeof(tmp), "%s" BASE_TMP "%d-XXXXXX", path, (int)getpid()) >=
	    (int)sizeof(tmp))
		return -ENAMETOOLONG;
	int rc = base_temp_write(tmp, data, len, mode);
	return rc ? rc : base_commit(tmp, path);
}

void base_stat_id(const struct stat *s, uint64_t id[BASE_ID_WORDS])
{
	const uint64_t v[BASE_ID_WORDS] = {s->st_mode,
					   (uint64_t)s->st_size,
					   (uint64_t)s->st_ino,
					   (uint64_t)s->st_dev,
					   (uint64_t)s->st_mtim.tv_sec,
					   (uint64_t)s->st_mtim.tv_nsec,
					   (uint64_t)s->st_ctim.tv_sec,
					   (uint64_t)s->st_ctim.tv_nsec};
	memcpy(id, v, sizeof(v));
}

int base_tmp_stale(const char *name)
{
	const char *t = strstr(name, BASE_TMP);
	if (!t)
		return 0;
	char *end;
	long pid = strtol(t + strlen(BASE_TMP), &end, 10);
	if (pid <= 0 || (*end != '-' && *end != 0))
		return 0;
	return pid == getpid() || (kill((pid_t)pid, 0) < 0 && errno == ESRCH);
}

int base_sweep_tmp(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.' && base_tmp_stale(e->d_name))
			n += unlinkat(dirfd(d), e->d_name, 0) == 0;
	if (d)
		closedir(d);
	return n;
}
