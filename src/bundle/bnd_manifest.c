/* What the sources of a kept packed tree were when it was packed (STATE/bundles/KEY.man): every
 * entry's identity as stat gives it, so that a later load proves them unchanged by stat alone,
 * with no folder opened nor file read; and the packed file's own identity and index digest. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "base/base.h"
#include "bundle/bnd.h"
#include "bundle/bnd_kept.h"

#define MAN_MAGIC 0x314e414d524d4245ULL /* "EMBRMAN1" */

/* one entry: its source and the identity of what is at its path (stat's, not following a link
 * but at the source itself), its path relative to the source after it, padded to 8 bytes */
struct man_ent {
	uint32_t src, len;
	uint64_t id[BASE_ID_WORDS];
};

struct man_hdr {
	uint64_t magic;
	uint32_t version, hdr_size;
	uint64_t key, body_len;
	struct bnd_kept kept;
	uint64_t digest; /* of the header (this field 0) and the body */
};

/* the manifest being built: its body grows */
struct man {
	uint8_t *body;
	size_t len, cap;
	uint64_t n;
};

static int add(struct man *m, uint32_t src, const char *rel, size_t rlen, const struct stat *s)
{
	size_t need = sizeof(struct man_ent) + BASE_ROUND_UP(rlen, 8);
	if (++m->n > BND_MAX_NODES + 2 || rlen >= BND_PATH_MAX)
		return -1;
	if (m->len + need > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 1 << 16;
		while (cap < m->len + need)
			cap *= 2;
		uint8_t *b = realloc(m->body, cap);
		if (!b)
			return -1;
		m->body = b;
		m->cap = cap;
	}
	struct man_ent e = {src, (uint32_t)rlen, {0}};
	base_stat_id(s, e.id);
	memcpy(m->body + m->len, &e, sizeof(e));
	memset(m->body + m->len + sizeof(e), 0, BASE_ROUND_UP(rlen, 8));
	memcpy(m->body + m->len + sizeof(e), rel, rlen);
	m->len += need;
	return 0;
}

/* a folder's entries, depth first, rel the folder's path relative to the source */
static int walk(struct man *m, uint32_t src, int dfd, char *rel, size_t rlen, int depth)
{
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return -1;
	}
	int rc = depth > BND_DEPTH_MAX ? -1 : 0;
	for (struct dirent *e; !rc && (e = readdir(d));) {
		struct stat s;
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		size_t n = strlen(e->d_name);
		if (rlen + n + 2 >= BND_PATH_MAX ||
		    fstatat(dirfd(d), e->d_name, &s, AT_SYMLINK_NOFOLLOW) < 0) {
			rc = -1;
			break;
		}
		size_t sub = rlen;
		if (sub)
			rel[sub++] = '/';
		memcpy(rel + sub, e->d_name, n + 1);
		rc = add(m, src, rel, sub + n, &s);
		if (!rc && S_ISDIR(s.st_mode)) {
			int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			rc = fd < 0 ? -1 : walk(m, src, fd, rel, sub + n, depth + 1);
		}
		rel[rlen] = 0;
	}
	closedir(d);
	return rc;
}

int bnd_manifest_make(const char *const *paths, size_t npaths, void **body, size_t *len)
{
	struct man m = {0};
	char rel[BND_PATH_MAX];
	int rc = 0;
	for (size_t i = 0; !rc && i < npaths; i++) {
		struct stat s;
		if (!paths[i])
			continue;
		int fd = open(paths[i], O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &s) < 0 || add(&m, (uint32_t)i, "", 0, &s)) {
			rc = -1;
			if (fd >= 0)
				close(fd);
			break;
		}
		rel[0] = 0;
		if (S_ISDIR(s.st_mode))
			rc = walk(&m, (uint32_t)i, fd, rel, 0, 0);
		else
			close(fd);
	}
	if (rc) {
		free(m.body);
		return -1;
	}
	*body = m.body;
	*len = m.len;
	return 0;
}

static void man_path(char *buf, size_t len, const char *state, uint64_t key)
{
	snprintf(buf, len, "%s/bundles/%016llx.man", state, (unsigned long long)key);
}

/* the body's digest seeded with the header's (its digest field 0) */
static uint64_t man_digest(struct man_hdr h, const void *body)
{
	h.digest = 0;
	return XXH3_64bits_withSeed(body, h.body_len, XXH3_64bits(&h, sizeof(h)));
}

int bnd_manifest_save(const char *state, uint64_t key, const void *body, size_t len,
		      const struct bnd_kept *kept)
{
	struct man_hdr h = {MAN_MAGIC, BND_KEPT_VERSION, sizeof(h), key, len, *kept, 0};
	h.digest = man_digest(h, body);
	uint8_t *buf = malloc(sizeof(h) + len);
	if (!buf)
		return -1;
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), body, len);
	char path[4200];
	man_path(path, sizeof(path), state, key);
	int rc = base_replace(path, buf, sizeof(h) + len, 0600);
	free(buf);
	return rc ? -1 : 0;
}

/* 0 when what is at every path of the manifest is what was there (its stat identity) */
static int unchanged(const char *const *paths, size_t npaths, const uint8_t *body, size_t len)
{
	char path[2 * BND_PATH_MAX];
	for (size_t at = 0; at < len;) {
		struct man_ent e;
		if (len - at < sizeof(e))
			return -1;
		memcpy(&e, body + at, sizeof(e));
		at += sizeof(e);
		if (e.src >= npaths || !paths[e.src] || e.len >= BND_PATH_MAX ||
		    BASE_ROUND_UP(e.len, 8) > len - at)
			return -1;
		struct stat s;
		uint64_t id[BASE_ID_WORDS];
		/* the source itself as open finds it (a link followed), the rest as they are */
		int n = e.len ? snprintf(path, sizeof(path), "%s/%.*s", paths[e.src], (int)e.len,
					 (const char *)body + at)
			      : snprintf(path, sizeof(path), "%s", paths[e.src]);
		if (n < 0 || (size_t)n >= sizeof(path) ||
		    (e.len ? lstat(path, &s) : stat(path, &s)) < 0)
			return -1;
		base_stat_id(&s, id);
		if (memcmp(id, e.id, sizeof(id)))
			return -1;
		at += BASE_ROUND_UP(e.len, 8);
	}
	return 0;
}

int bnd_manifest_check(const char *state, uint64_t key, const char *const *paths, size_t npaths,
		       struct bnd_kept *kept)
{
	char path[4200];
	man_path(path, sizeof(path), state, key);
	uint8_t *buf = NULL;
	size_t got = 0;
	if (base_read_file(path, 64ULL << 20, &buf, &got))
		return -1;
	struct man_hdr h;
	int rc = -1;
	if (got >= sizeof(h)) {
		memcpy(&h, buf, sizeof(h));
		if (h.magic == MAN_MAGIC && h.version == BND_KEPT_VERSION &&
		    h.hdr_size == sizeof(h) && h.key == key && h.body_len == got - sizeof(h) &&
		    man_digest(h, buf + sizeof(h)) == h.digest &&
		    !unchanged(paths, npaths, buf + sizeof(h), h.body_len)) {
			*kept = h.kept;
			rc = 0;
		}
	}
	free(buf);
	return rc;
}
