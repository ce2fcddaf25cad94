/* A dynamic program's interpreter, from its files; without files, its closure from this host. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"
#include "bundle/bnd.h"
#include "func/func.h"

#define CLOSURE_MAX   256	     /* libraries in one closure */
#define CLOSURE_BYTES (512ULL << 20) /* their bytes, the interpreter's included */

/* where the host's loader would find a library (glibc's and musl's default folders) */
static const char *const lib_dirs[] = {
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib",
    "/usr/lib",
    "/lib64",
    "/usr/lib64",
    "/usr/local/lib",
};

/* path, its links followed, lies in one of the library folders (theirs followed too): a
 * program names its interpreter, and no other file of the host's may be read for it */
static int in_lib_dirs(const char *path)
{
	char real[PATH_MAX], dir[PATH_MAX];
	if (!realpath(path, real))
		return 0;
	for (size_t d = 0; d < sizeof(lib_dirs) / sizeof(lib_dirs[0]); d++) {
		if (!realpath(lib_dirs[d], dir))
			continue;
		size_t n = strlen(dir);
		if (!strncmp(real, dir, n) && real[n] == '/')
			return 1;
	}
	return 0;
}

/* A host file read whole (links followed), with its modification time: only an ELF file in the
 * library folders, of at most *room bytes (taken from it). One answer for every file that is
 * not one, readable or not, so that a program's names learn nothing of the host's other files */
static int read_host(const char *path, uint8_t **buf, size_t *len, int64_t *mtime, uint64_t *room,
		     char *err, size_t errlen)
{
	struct stat sb;
	int fd = in_lib_dirs(path) ? open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) : -1;
	int ok = fd >= 0 && !fstat(fd, &sb) && S_ISREG(sb.st_mode) && sb.st_size >= 4 &&
		 (uint64_t)sb.st_size <= *room;
	int e = ok ? -base_read_fd(fd, (size_t)sb.st_size, buf, len) : 0;
	if (fd >= 0)
		close(fd);
	if (e)
		return snprintf(err, errlen, "%s: %s", path, strerror(e)), EMBER_ERR_IO;
	if (!ok || *len < 4 || memcmp(*buf, "\177ELF", 4)) {
		free(*buf);
		*buf = NULL;
		snprintf(err, errlen,
			 "%s is no ELF file of this host's library folders (/lib/x86_64-linux-gnu, "
			 "/usr/lib/x86_64-linux-gnu, /lib64, ...; the closure holds %llu MiB at "
			 "most): give the program its files (--files)",
			 path, (unsigned long long)(CLOSURE_BYTES >> 20));
		return EMBER_ERR_IMAGE;
	}
	*room -= *len;
	*mtime = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
	return 0;
}

/* adds the host file at path to the tree at the same path; its bytes in *buf (the caller's) */
static int add_host(struct bnd_builder *bb, const char *path, uint8_t **buf, size_t *len,
		    uint64_t *room, char *err, size_t errlen)
{
	int64_t mtime = 0;
	int rc = read_host(path, buf, len, &mtime, room, err, errlen);
	if (rc)
		return rc;
	bnd_builder_time(bb, mtime);
	if (bnd_add(bb, path, 'f', 0755, *buf, *len, err, errlen)) {
		free(*buf);
		*buf = NULL;
		return EMBER_ERR_IMAGE;
	}
	return 0;
}

#define NEEDED_MAX 64 /* DT_NEEDED of one file */

struct closure {
	char names[CLOSURE_MAX][IMG_NEEDED_NAME]; /* found or to find, in order */
	int n;
	char got[NEEDED_MAX][IMG_NEEDED_NAME]; /* one file's */
};

/* the DT_NEEDED of the file in buf, queued when not seen yet */
static int queue_needed(struct closure *c, const char *who, const uint8_t *buf, size_t len,
			char *err, size_t errlen)
{
	char(*got)[IMG_NEEDED_NAME] = c->got;
	int n = 0;
	char why[128];
	if (img_needed(buf, len, got, NEEDED_MAX, &n, why, sizeof(why)))
		return snprintf(err, errlen, "%.100s: %.120s", who, why), EMBER_ERR_IMAGE;
	for (int i = 0; i < n; i++) {
		int seen = 0;
		for (int j = 0; j < c->n && !seen; j++)
			seen = !strcmp(c->names[j], got[i]);
		if (seen)
			continue;
		if (c->n == CLOSURE_MAX)
			return snprintf(err, errlen, "needs more than %d libraries", CLOSURE_MAX),
			       EMBER_ERR_IMAGE;
		memcpy(c->names[c->n++], got[i], IMG_NEEDED_NAME);
	}
	return 0;
}

/* The program's interpreter and every library it needs, found as the host's loader would find
 * them, each at its host path in a tree of its own, read-only: nothing else of the host's */
static int closure(struct ember_function *fn, const struct ember_config *cfg, char *err,
		   size_t errlen)
{
	struct closure *c = calloc(1, sizeof(*c));
	struct bnd_builder *bb = bnd_builder_new();
	int rc = EMBER_ERR_NOMEM;
	uint8_t *buf = NULL;
	size_t len = 0;
	if (!c || !bb) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	uint64_t room = CLOSURE_BYTES;
	const char *interp = fn->img->elf.interp, *base = strrchr(interp, '/');
	if (strncmp(base + 1, "ld-", 3)) { /* ld.so by its name: ld-linux-x86-64.so.2 */
		snprintf(err, errlen,
			 "its interpreter %.120s is not named ld-*: give the program its files "
			 "(--files)",
			 interp);
		rc = EMBER_ERR_IMAGE;
		goto out;
	}
	if ((rc = add_host(bb, interp, &buf, &len, &room, err, errlen)))
		goto out;
	free(buf);
	buf = NULL;
	if ((rc = queue_needed(c, "the program", fn->img->buf, fn->img->len, err, errlen)))
		goto out;
	for (int i = 0; i < c->n; i++) {
		char path[BND_PATH_MAX];
		size_t d = 0;
		for (; d < sizeof(lib_dirs) / sizeof(lib_dirs[0]); d++) {
			snprintf(path, sizeof(path), "%s/%s", lib_dirs[d], c->names[i]);
			if (access(path, R_OK) == 0)
				break;
		}
		if (d == sizeof(lib_dirs) / sizeof(lib_dirs[0])) {
			snprintf(
			    err, errlen,
			    "needs %s, which is in none of this host's library folders "
			    "(/lib/x86_64-linux-gnu, /usr/lib/x86_64-linux-gnu, /lib, /usr/lib, "
			    "...): give the program its files (--files)",
			    c->names[i]);
			rc = EMBER_ERR_IMAGE;
			goto out;
		}
		/* a library that is the interpreter too (libc names ld-linux-x86-64.so.2): once */
		if (!strcmp(path, interp)) {
			free(buf);
			buf = NULL;
			continue;
		}
		if ((rc = add_host(bb, path, &buf, &len, &room, err, errlen)) ||
		    (rc = queue_needed(c, path, buf, len, err, errlen)))
			goto out;
		free(buf);
		buf = NULL;
	}
	/* the function's secrets beside it, as with files */
	if (func_secrets_add(bb, cfg, err, errlen)) {
		rc = EMBER_ERR_CONFIG;
		goto out;
	}
	fn->bundle = bnd_pack(bb, err, errlen);
	bb = NULL;
	rc = fn->bundle ? 0 : EMBER_ERR_NOMEM;
out:
	free(buf);
	free(c);
	if (bb)
		bnd_builder_free(bb);
	return rc;
}

int func_dynamic(struct ember_function *fn, const struct ember_config *cfg, char *err,
		 size_t errlen)
{
	const char *interp = fn->img->elf.interp;
	char why[EMBER_ERR_MAX - 64] = "";
	int rc;
	if (!interp[0])
		return 0;
	if (!fn->bundle && (rc = closure(fn, cfg, why, sizeof(why))))
		return snprintf(err, errlen, "a dynamic program: %s", why), rc;
	uint32_t node;
	const struct bnd *b = fn->bundle;
	if (bnd_lookup(b, 0, interp, 1, &node, NULL) || !bnd_is(b, node, S_IFREG))
		return snprintf(err, errlen,
				"its interpreter %s (PT_INTERP) is not a file in the function's "
				"files",
				interp),
		       EMBER_ERR_IMAGE;
	const struct bnd_node *f = &b->nodes[node];
	struct img_how how;
	rc = img_from_bytes_kept(b->data + f->data_off, f->size, func_file_id(b, node), fn->img_dir,
				 &fn->interp, &how, why, sizeof(why));
	fn->parts.interp_us = how.read_us + how.sites_us;
	if (rc)
		return snprintf(err, errlen, "its interpreter %s: %s", interp, why), rc;
	if (fn->interp->elf.interp[0] || !fn->interp->elf.pie)
		return snprintf(err, errlen,
				"its interpreter %s is not a static position-independent ELF "
				"file, as ld.so is",
				interp),
		       EMBER_ERR_IMAGE;
	return 0;
}
