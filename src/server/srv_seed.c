/* --seed DIR: the deployments and images a node lacks, copied from a peer's state folder. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/srv_core.h"
#include "server/srv_store.h"

/* A node that joins late starts with the deployments of DIR, another node's state folder (on a
 * shared file system, or a copy): each functions/NAME.json this node lacks, with the pinned
 * image it names (imageFile), and each images/NAME it lacks. What the node has stays as it is:
 * a version deployed while it was down is not copied over its own (deploys go to every node).
 * Snapshots are not copied: each node builds its own. A file is written as the server writes
 * its own (temporary, fsynced, renamed), a deployment's JSON after its image, so a crash
 * leaves whole files and the next start copies what is still missing. */

/* 1 when the state has dir/file */
static int have(const struct srv *s, const char *dir, const char *file)
{
	char path[SRV_PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s/%s", s->state, dir, file);
	return !access(path, F_OK);
}

/* seed/dir/file copied to dst: 1, or -1 with err */
static int copy_file(const struct srv *s, const char *seed, const char *dir, const char *file,
		     const char *dst, char *err, size_t errlen)
{
	char src[SRV_PATH_MAX], tmp[SRV_PATH_MAX];
	struct stat st;
	uint8_t *buf = NULL;
	int rc = -1;
	snprintf(src, sizeof(src), "%s/%s/%s", seed, dir, file);
	int fd = open(src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		snprintf(err, errlen, "--seed: %s: %s", src, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > s->opt.max_image) {
		snprintf(err, errlen, "--seed: %s: not a regular file of at most maxImageSize",
			 src);
		goto out;
	}
	size_t got = 0;
	int e = -base_read_fd(fd, s->opt.max_image, &buf, &got);
	if (e || got != (uint64_t)st.st_size) { /* not the file the peer writes (by rename) */
		snprintf(err, errlen, "--seed: %s: %s", src,
			 e ? strerror(e) : "not as long as its size");
		goto out;
	}
	if (store_temp(s, dir, buf, got, (int)(st.st_mode & 0755), tmp, sizeof(tmp), err, errlen))
		goto out;
	if ((e = -base_commit(tmp, dst))) {
		snprintf(err, errlen, "%s: %s", dst, strerror(e));
		goto out;
	}
	rc = 1;
out:
	free(buf);
	if (fd >= 0)
		close(fd);
	return rc;
}

/* a deployment the state lacks, NAME.json of seed/functions: its pin, then itself. 0 when the
 * state has it (or file is no deployment), 1 when copied, -1 with err */
static int seed_function(struct srv *s, const char *seed, const char *file, char *err,
			 size_t errlen)
{
	char name[SRV_NAME_MAX], src[SRV_PATH_MAX], dst[SRV_PATH_MAX], pin_dst[SRV_PATH_MAX];
	size_t n = strlen(file);
	if (n <= 5 || n - 5 >= sizeof(name) || strcmp(file + n - 5, ".json"))
		return 0;
	memcpy(name, file, n - 5);
	name[n - 5] = 0;
	if (store_path(s, "functions", name, ".json", dst, sizeof(dst)) ||
	    have(s, "functions", file))
		return 0;
	snprintf(src, sizeof(src), "%s/functions/%s", seed, file);
	json_t *doc = json_load_file(src, JSON_REJECT_DUPLICATES, NULL);
	const char *pin = json_string_value(json_object_get(doc, "imageFile"));
	int rc = 1;
	if (pin && !pin_path(s, pin, pin_dst, sizeof(pin_dst)) && !have(s, "functions", pin))
		rc = copy_file(s, seed, "functions", pin, pin_dst, err, errlen);
	json_decref(doc); /* a JSON that does not parse is copied, and skipped by the restore */
	return rc < 0 ? rc : copy_file(s, seed, "functions", file, dst, err, errlen);
}

/* an image the state lacks: 0, 1 when copied, -1 with err */
static int seed_image(struct srv *s, const char *seed, const char *file, char *err, size_t errlen)
{
	char dst[SRV_PATH_MAX];
	if (store_path(s, "images", file, "", dst, sizeof(dst)) || have(s, "images", file))
		return 0;
	return copy_file(s, seed, "images", file, dst, err, errlen);
}

typedef int (*seed_fn)(struct srv *, const char *, const char *, char *, size_t);

/* fn on every file of seed/dir: how many were copied, or -1 with err */
static int seed_dir(struct srv *s, const char *seed, const char *dir, seed_fn fn, char *err,
		    size_t errlen)
{
	char path[SRV_PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", seed, dir);
	DIR *d = opendir(path);
	if (!d)
		return snprintf(err, errlen, "--seed: %s: %s (not an ember serve state folder?)",
				path, strerror(errno)),
		       -1;
	struct dirent *de;
	int n = 0, rc = 0;
	while (rc >= 0 && (de = readdir(d)))
		if (de->d_name[0] != '.')
			n += (rc = fn(s, seed, de->d_name, err, errlen)) > 0;
	closedir(d); /* each copy's name made durable by base_commit */
	return rc < 0 ? -1 : n;
}

int store_seed(struct srv *s, char *err, size_t errlen)
{
	char seed[PATH_MAX];
	if (!s->opt.seed_dir)
		return 0;
	if (!realpath(s->opt.seed_dir, seed))
		return snprintf(err, errlen, "--seed %s: %s", s->opt.seed_dir, strerror(errno)), -1;
	if (!strcmp(seed, s->state))
		return snprintf(err, errlen, "--seed %s is this node's own state folder", seed), -1;
	/* images first: a deployment that names an uploaded image finds it */
	int images = seed_dir(s, seed, "images", seed_image, err, errlen);
	int fns = images < 0 ? -1 : seed_dir(s, seed, "functions", seed_function, err, errlen);
	if (fns < 0)
		return -1;
	srv_log(s, "info", "seeded from %s: %d deployments and %d images this node lacked", seed,
		fns, images);
	return 0;
}
