/* Reading a bundle from a folder (walked without following links) or a tar or zip archive. */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"
#include "bundle/bnd.h"

/* an entry that cannot be read or bundled: -1, the reason in err */
static int bad(char *err, size_t errlen, const char *path, const char *why)
{
	snprintf(err, errlen, "%s: %s", path, why);
	return -1;
}

/* the entries below folder fd, path its name inside the tree */
static int64_t ns_of(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000LL + t->tv_nsec;
}

static int walk(struct bnd_builder *bb, int fd, char *path, size_t plen, int depth, char *err,
		size_t errlen)
{
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return snprintf(err, errlen, "%s: %s", path, strerror(errno)), -1;
	}
	int rc = 0;
	struct dirent *e;
	while (!rc && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		size_t n = strlen(e->d_name);
		if (plen + 1 + n >= BND_PATH_MAX || depth >= BND_DEPTH_MAX) {
			rc = bad(err, errlen, path, "path too long");
			break;
		}
		path[plen] = '/';
		memcpy(path + plen + 1, e->d_name, n + 1);
		struct stat s;
		int st = fstatat(dirfd(d), e->d_name, &s, AT_SYMLINK_NOFOLLOW);
		if (!st)
			bnd_builder_time(bb, ns_of(&s.st_mtim));
		if (st < 0) {
			rc = bad(err, errlen, path, strerror(errno));
		} else if (S_ISDIR(s.st_mode)) {
			int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
			rc = sub < 0 ? bad(err, errlen, path, strerror(errno))
				     : bnd_add(bb, path, 'd', s.st_mode, NULL, 0, err, errlen);
			if (!rc)
				rc = walk(bb, sub, path, plen + 1 + n, depth + 1, err, errlen);
		} else if (S_ISLNK(s.st_mode)) {
			char target[BND_PATH_MAX];
			ssize_t r = readlinkat(dirfd(d), e->d_name, target, sizeof(target));
			rc = r < 0 ? bad(err, errlen, path, strerror(errno))
				   : bnd_add(bb, path, 'l', 0777, target, (size_t)r, err, errlen);
		} else if (S_ISREG(s.st_mode)) {
			int f = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW);
			size_t len = 0;
			uint8_t *data = NULL;
			int e = f < 0 ? errno : -base_read_fd(f, BND_MAX_BYTES, &data, &len);
			if (e)
				rc = bad(err, errlen, path, strerror(e));
			else
				rc = bnd_add(bb, path, 'f', s.st_mode, data, len, err, errlen);
			free(data);
			if (f >= 0)
				close(f);
		} else {
			rc = bad(err, errlen, path,
				 "not a file, folder or link (devices, sockets and pipes cannot be "
				 "bundled)");
		}
		path[plen] = 0;
	}
	closedir(d);
	return rc;
}

static const struct {
	int type;
	char t;
} entry_types[] = {{AE_IFREG, 'f'}, {AE_IFDIR, 'd'}, {AE_IFLNK, 'l'}};

/* An entry's bytes as they come, in a buffer grown as they arrive (never sized by what the entry
 * declares), at most BND_MAX_BYTES; NULL with the reason in *why. */
static uint8_t *entry_data(struct archive *a, size_t *len, const char **why)
{
	size_t cap = 0, got = 0;
	uint8_t *buf = NULL;
	for (;;) {
		if (got == cap) {
			size_t next = cap ? cap * 2 : 65536;
			uint8_t *b = cap >= BND_MAX_BYTES ? NULL : realloc(buf, next);
			if (!b) {
				*why = cap >= BND_MAX_BYTES ? "larger than the files may be"
							    : "out of memory";
				free(buf);
				return NULL;
			}
			buf = b;
			cap = next;
		}
		la_ssize_t r = archive_read_data(a, buf + got, cap - got);
		if (r < 0) {
			*why = archive_error_string(a);
			*why = *why ? *why : "cannot be read";
			free(buf);
			return NULL;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	*len = got;
	return buf;
}

static int add_entry(struct bnd_builder *bb, struct archive *a, struct archive_entry *e, char *err,
		     size_t errlen)
{
	const char *path = archive_entry_pathname(e);
	char t = 0;
	for (size_t i = 0; i < sizeof(entry_types) / sizeof(entry_types[0]); i++)
		if (archive_entry_filetype(e) == (unsigned)entry_types[i].type)
			t = entry_types[i].t;
	if (!path)
		return snprintf(err, errlen, "an entry of the archive has no name"), -1;
	if (archive_entry_hardlink(e) || !t)
		return snprintf(err, errlen,
				"%.200s: not a file, folder or link (hard links, devices and "
				"pipes cannot be bundled)",
				path),
		       -1;
	unsigned perm = archive_entry_perm(e);
	bnd_builder_time(bb, archive_entry_mtime_is_set(e)
				 ? (int64_t)archive_entry_mtime(e) * 1000000000LL +
				       archive_entry_mtime_nsec(e)
				 : 0);
	if (t == 'l') {
		const char *target = archive_entry_symlink(e);
		return bnd_add(bb, path, 'l', 0777, target, target ? strlen(target) : 0, err,
			       errlen);
	}
	if (t == 'd')
		return bnd_add(bb, path, 'd', perm, NULL, 0, err, errlen);
	int64_t size = archive_entry_size_is_set(e) ? archive_entry_size(e) : -1;
	if (size > 0 && (uint64_t)size > BND_MAX_BYTES)
		return snprintf(err, errlen, "%.200s: larger than the files may be", path), -1;
	size_t len = 0;
	const char *why = NULL;
	uint8_t *data = entry_data(a, &len, &why);
	/* the entry's size, when it declares one, is what it holds */
	if (data && size >= 0 && len != (uint64_t)size)
		why = "truncated";
	int rc = why ? (snprintf(err, errlen, "%.200s: %s", path, why), -1)
		     : bnd_add(bb, path, 'f', perm, data, len, err, errlen);
	free(data);
	return rc;
}

static const struct {
	const char *name;
	int (*add)(struct archive *);
} filters[] = {
    {"gzip", archive_read_support_filter_gzip},
    {"bzip2", archive_read_support_filter_bzip2},
    {"xz", archive_read_support_filter_xz},
    {"zstd", archive_read_support_filter_zstd},
};

int bnd_add_tar(struct bnd_builder *bb, const void *tar, size_t len, char *err, size_t errlen)
{
	struct archive *a = archive_read_new();
	int rc = -1;
	if (!a)
		return snprintf(err, errlen, "out of memory"), -1;
	/* told apart by their content */
	archive_read_support_format_tar(a);
	archive_read_support_format_gnutar(a);
	archive_read_support_format_zip(a);
	/* the compressions libarchive decodes itself: none that would run an external program
	 * (lzop, lrzip, grzip, or any of these were it built without the library) */
	for (size_t i = 0; i < sizeof(filters) / sizeof(filters[0]); i++)
		if (filters[i].add(a) != ARCHIVE_OK) {
			snprintf(err, errlen, "this libarchive cannot read %s by itself",
				 filters[i].name);
			goto out;
		}
	if (archive_read_open_memory(a, tar, len) != ARCHIVE_OK) {
		snprintf(err, errlen, "neither a tar nor a zip archive: %s",
			 archive_error_string(a));
		goto out;
	}
	struct archive_entry *e;
	int r;
	while ((r = archive_read_next_header(a, &e)) == ARCHIVE_OK)
		if (add_entry(bb, a, e, err, errlen))
			goto out;
	if (r != ARCHIVE_EOF)
		snprintf(err, errlen, "a damaged archive: %s", archive_error_string(a));
	else
		rc = 0;
out:
	archive_read_free(a);
	return rc;
}

int bnd_add_path(struct bnd_builder *bb, const char *path, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat s;
	if (fd < 0 || fstat(fd, &s) < 0) {
		snprintf(err, errlen, "files %.200s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (S_ISREG(s.st_mode)) {
		size_t len = 0;
		uint8_t *tar = NULL;
		int e = -base_read_fd(fd, 2 * BND_MAX_BYTES, &tar, &len);
		close(fd);
		if (e)
			return snprintf(err, errlen, "files %.200s: %s", path, strerror(e)), -1;
		int rc = bnd_add_tar(bb, tar, len, err, errlen);
		free(tar);
		return rc;
	}
	char *p = calloc(1, BND_PATH_MAX + 1);
	if (!p || !S_ISDIR(s.st_mode)) {
		snprintf(err, errlen, "files %.200s: %s", path,
			 !S_ISDIR(s.st_mode) ? "neither a folder nor a tar or zip archive"
					     : "out of memory");
		close(fd);
		free(p);
		return -1;
	}
	bnd_builder_time(bb, ns_of(&s.st_mtim)); /* the root's */
	int rc = bnd_add(bb, ".", 'd', s.st_mode, NULL, 0, err, errlen);
	rc = rc ? (close(fd), rc) : walk(bb, fd, p, 0, 0, err, errlen);
	free(p);
	return rc;
}

/* one source into a builder, packed */
static struct bnd *pack_one(const char *path, const void *tar, size_t len, char *err, size_t errlen)
{
	struct bnd_builder *bb = bnd_builder_new();
	if (!bb)
		return snprintf(err, errlen, "out of memory"), NULL;
	if (path ? bnd_add_path(bb, path, err, errlen) : bnd_add_tar(bb, tar, len, err, errlen)) {
		bnd_builder_free(bb);
		return NULL;
	}
	return bnd_pack(bb, err, errlen);
}

struct bnd *bnd_from_tar(const void *tar, size_t len, char *err, size_t errlen)
{
	return pack_one(NULL, tar, len, err, errlen);
}

struct bnd *bnd_open(const char *path, char *err, size_t errlen)
{
	return pack_one(path, NULL, 0, err, errlen);
}
