/* Packed trees kept on disk (STATE/bundles/KEY.bnd), so that a load does not read and pack the
 * same tree again: keyed by what the sources are, checked in full when read back. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "base/base.h"
#include "bundle/bnd.h"

#define CACHE_MAGIC   0x31444e4252424d45ULL /* "EMBRBND1" */
#define CACHE_VERSION 1
#define HDR_PAGE      4096 /* the header's page: the block after it is mapped from the file */

struct cache_hdr {
	uint64_t magic;
	uint32_t version, hdr_size;
	uint64_t key, digest, mem_len, data_at;
	uint32_t nnodes, pad;
};

/* a folder's entries into the key: names, types, permissions, sizes, modification times and
 * links' targets, depth first (a folder that changes changes its key) */
static int key_walk(XXH3_state_t *h, int dfd, int depth)
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
		if (fstatat(dirfd(d), e->d_name, &s, AT_SYMLINK_NOFOLLOW) < 0) {
			rc = -1;
			break;
		}
		uint64_t f[5] = {s.st_mode, (uint64_t)s.st_size, (uint64_t)s.st_mtim.tv_sec,
				 (uint64_t)s.st_mtim.tv_nsec, (uint64_t)s.st_ino};
		XXH3_64bits_update(h, e->d_name, strlen(e->d_name) + 1);
		XXH3_64bits_update(h, f, sizeof(f));
		if (S_ISDIR(s.st_mode)) {
			int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			rc = sub < 0 ? -1 : key_walk(h, sub, depth + 1);
			XXH3_64bits_update(h, "/", 1); /* the folder ends */
		}
	}
	closedir(d);
	return rc;
}

/* one source: a folder's entries, or an archive file's identity and time */
static int key_path(XXH3_state_t *h, const char *path)
{
	struct stat s;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &s) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	uint64_t f[6] = {s.st_mode,
			 (uint64_t)s.st_size,
			 (uint64_t)s.st_mtim.tv_sec,
			 (uint64_t)s.st_mtim.tv_nsec,
			 (uint64_t)s.st_ino,
			 (uint64_t)s.st_dev};
	XXH3_64bits_update(h, path, strlen(path) + 1);
	XXH3_64bits_update(h, f, sizeof(f));
	if (!S_ISDIR(s.st_mode)) {
		close(fd);
		return 0;
	}
	return key_walk(h, fd, 0);
}

int bnd_key(const char *const *paths, size_t npaths, const void *tar, size_t tar_len, uint64_t *key)
{
	XXH3_state_t *h = XXH3_createState();
	int rc = h ? 0 : -1;
	uint64_t v = CACHE_VERSION;
	if (!rc)
		XXH3_64bits_reset(h);
	if (!rc)
		XXH3_64bits_update(h, &v, sizeof(v));
	for (size_t i = 0; !rc && i < npaths; i++)
		rc = paths[i] ? key_path(h, paths[i]) : 0;
	if (!rc && tar) {
		uint64_t t = XXH3_64bits(tar, tar_len);
		XXH3_64bits_update(h, "tar", 4);
		XXH3_64bits_update(h, &t, sizeof(t));
	}
	if (!rc)
		*key = XXH3_64bits_digest(h);
	XXH3_freeState(h);
	return rc;
}

static void cache_path(char *buf, size_t len, const char *state, uint64_t key)
{
	snprintf(buf, len, "%s/bundles/%016llx.bnd", state, (unsigned long long)key);
}

/* every index and range of the packed form inside it: a tree read from disk is used as is */
int bnd_check(const struct bnd *b)
{
	size_t names_at = b->nnodes * sizeof(struct bnd_node);
	if (names_at > b->data_at || b->data_at > b->mem_len)
		return -1;
	size_t names_len = b->data_at - names_at, data_len = b->mem_len - b->data_at;
	for (uint32_t i = 0; i < b->nnodes; i++) {
		const struct bnd_node *n = &b->nodes[i];
		uint32_t type = n->mode & 0170000;
		if (n->parent >= b->nnodes || n->first > b->nnodes ||
		    n->count > b->nnodes - n->first || (n->count && type != S_IFDIR) ||
		    (type != S_IFDIR && type != S_IFREG && type != S_IFLNK) ||
		    n->name_off > names_len || n->name_len >= names_len - n->name_off ||
		    b->names[n->name_off + n->name_len] || n->data_off > data_len ||
		    n->size > data_len - n->data_off ||
		    (type == S_IFLNK && n->size >= BND_PATH_MAX))
			return -1;
		/* children come after their folder (no cycle); a file of a page or more starts on
		 * a page (guest memory maps it) */
		if ((n->count && n->first <= i) || (i && n->parent >= i) ||
		    (type == S_IFREG && n->size >= BND_PAGE && n->data_off % BND_PAGE))
			return -1;
	}
	return b->nnodes && !b->nodes[0].parent && bnd_is(b, 0, S_IFDIR) ? 0 : -1;
}

struct bnd *bnd_cache_load(const char *state, uint64_t key)
{
	char path[4096];
	cache_path(path, sizeof(path), state, key);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct cache_hdr h;
	struct stat s;
	struct bnd *b = NULL;
	uint8_t *mem = MAP_FAILED;
	if (fd < 0 || fstat(fd, &s) < 0 || pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    h.magic != CACHE_MAGIC || h.version != CACHE_VERSION || h.hdr_size != sizeof(h) ||
	    h.key != key || h.mem_len > 2 * BND_MAX_BYTES || h.mem_len % BND_PAGE || !h.mem_len ||
	    (uint64_t)s.st_size != HDR_PAGE + h.mem_len || h.nnodes > BND_MAX_NODES ||
	    h.data_at % BND_PAGE || h.data_at > h.mem_len ||
	    (uint64_t)h.nnodes * sizeof(struct bnd_node) > h.data_at)
		goto out;
	/* the file's pages themselves (the host's page cache, one copy for every process and
	 * machine that maps them), after the page of the header */
	mem = mmap(NULL, h.mem_len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, HDR_PAGE);
	if (mem == MAP_FAILED || XXH3_64bits(mem, h.mem_len) != h.digest ||
	    !(b = calloc(1, sizeof(*b))))
		goto out;
	size_t names_at = h.nnodes * sizeof(struct bnd_node);
	*b = (struct bnd){.mem = mem,
			  .mem_len = h.mem_len,
			  .fd = fd,
			  .fd_off = HDR_PAGE,
			  .data_at = h.data_at,
			  .nodes = (const struct bnd_node *)mem,
			  .nnodes = h.nnodes,
			  .names = (const char *)mem + names_at,
			  .data = mem + h.data_at,
			  .digest = h.digest};
	if (bnd_check(b)) {
		free(b);
		b = NULL;
		goto out;
	}
	return b;
out:
	if (mem != MAP_FAILED)
		munmap(mem, h.mem_len);
	if (fd >= 0)
		close(fd);
	return b;
}

int bnd_cache_save(const char *state, uint64_t key, const struct bnd *b)
{
	char dir[4096], path[4096], tmp[4200];
	snprintf(dir, sizeof(dir), "%s/bundles", state);
	if ((mkdir(state, 0700) < 0 && errno != EEXIST) ||
	    (mkdir(dir, 0700) < 0 && errno != EEXIST))
		return -1;
	cache_path(path, sizeof(path), state, key);
	/* a name of its own (mkstemp): two loads of one tree at once each write theirs */
	snprintf(tmp, sizeof(tmp), "%s.tmp-%ld-XXXXXX", path, (long)getpid());
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct cache_hdr h = {CACHE_MAGIC, CACHE_VERSION, sizeof(h), key, b->digest,
			      b->mem_len,  b->data_at,	  b->nnodes, 0};
	static const uint8_t pad[HDR_PAGE];
	int rc = base_write_all(fd, &h, sizeof(h));
	if (!rc)
		rc = base_write_all(fd, pad, HDR_PAGE - sizeof(h));
	if (!rc)
		rc = base_write_all(fd, b->mem, b->mem_len);
	if (!rc && fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && !rc)
		rc = -errno;
	if (rc) {
		unlink(tmp);
		return -1;
	}
	return base_commit(tmp, path) ? -1 : 0; /* the rename, then the folder's fsync */
}

int bnd_add_sources(struct bnd_builder *bb, const char *const *paths, size_t npaths,
		    const void *tar, size_t tar_len, char *err, size_t errlen)
{
	for (size_t i = 0; i < npaths; i++)
		if (paths[i] && bnd_add_path(bb, paths[i], err, errlen))
			return -1;
	return tar && bnd_add_tar(bb, tar, tar_len, err, errlen) ? -1 : 0;
}

struct bnd *bnd_build(const char *const *paths, size_t npaths, const void *tar, size_t tar_len,
		      const char *state, char *err, size_t errlen)
{
	uint64_t key = 0;
	int keyed = state && !bnd_key(paths, npaths, tar, tar_len, &key);
	struct bnd *b = keyed ? bnd_cache_load(state, key) : NULL;
	if (b)
		return b;
	struct bnd_builder *bb = bnd_builder_new();
	if (!bb)
		return snprintf(err, errlen, "out of memory"), NULL;
	if (bnd_add_sources(bb, paths, npaths, tar, tar_len, err, errlen)) {
		bnd_builder_free(bb);
		return NULL;
	}
	if ((b = bnd_pack(bb, err, errlen)) && keyed)
		bnd_cache_save(state, key,
			       b); /* a folder that cannot be written: packed next time */
	return b;
}
