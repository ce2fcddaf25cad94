/* Packed trees kept on disk (STATE/bundles/KEY.bnd), so that a load does not read and pack the
 * same tree again: keyed by what the sources are, checked in full when read back. */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "base/base.h"
#include "bundle/bnd.h"
#include "bundle/bnd_kept.h"

#define CACHE_MAGIC   0x31444e4252424d45ULL /* "EMBRBND1" */
#define CACHE_VERSION 1
#define HDR_PAGE      4096 /* the header's page: the block after it is mapped from the file */

struct cache_hdr {
	uint64_t magic;
	uint32_t version, hdr_size;
	uint64_t key, digest, mem_len, data_at;
	uint32_t nnodes, pad;
};

/* the sources' names (their contents are the manifest's), and an archive in memory's bytes */
static uint64_t key_of(const char *const *paths, size_t npaths, const void *tar, size_t tar_len)
{
	XXH3_state_t *h = XXH3_createState();
	if (!h)
		return 0;
	uint64_t v = BND_KEPT_VERSION;
	XXH3_64bits_reset(h);
	XXH3_64bits_update(h, &v, sizeof(v));
	for (size_t i = 0; i < npaths; i++)
		XXH3_64bits_update(h, paths[i] ? paths[i] : "",
				   paths[i] ? strlen(paths[i]) + 1 : 1);
	if (tar) {
		uint64_t t = XXH3_64bits(tar, tar_len);
		XXH3_64bits_update(h, "tar", 4);
		XXH3_64bits_update(h, &t, sizeof(t));
	}
	uint64_t key = XXH3_64bits_digest(h);
	XXH3_freeState(h);
	return key;
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

/* the kept tree of key: with kept (its sources unchanged) and the file still as it was written,
 * mapped as it is and only its index checked; else read and hashed whole. NULL when there is
 * none or it is not sound (how->damaged says why when it was there). */
static struct bnd *cache_load(const char *state, uint64_t key, const struct bnd_kept *kept,
			      struct bnd_how *how)
{
	char path[4096];
	cache_path(path, sizeof(path), state, key);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct cache_hdr h;
	struct stat s;
	struct bnd *b = NULL;
	uint8_t *mem = MAP_FAILED;
	uint64_t id[BASE_ID_WORDS];
	if (fd < 0 || fstat(fd, &s) < 0)
		goto out;
	base_stat_id(&s, id);
	int same = kept && !memcmp(id, kept->id, sizeof(id));
	if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) || h.magic != CACHE_MAGIC ||
	    h.version != CACHE_VERSION || h.hdr_size != sizeof(h) || h.key != key ||
	    h.mem_len > 2 * BND_MAX_BYTES || h.mem_len % BND_PAGE || !h.mem_len ||
	    (uint64_t)s.st_size != HDR_PAGE + h.mem_len || h.nnodes > BND_MAX_NODES ||
	    h.data_at % BND_PAGE || h.data_at > h.mem_len ||
	    (uint64_t)h.nnodes * sizeof(struct bnd_node) > h.data_at ||
	    (same && h.digest != kept->digest))
		goto damaged;
	/* the file's pages themselves (the host's page cache, one copy for every process and
	 * machine that maps them), after the page of the header: unchanged since written, only
	 * its index is read now, the files' pages when used */
	mem =
	    mmap(NULL, h.mem_len, PROT_READ, MAP_PRIVATE | (same ? 0 : MAP_POPULATE), fd, HDR_PAGE);
	if (mem == MAP_FAILED)
		goto out;
	/* only the index is read now (below), the files' pages when used: one page at a fault,
	 * not the read-ahead window around it */
	int paged = same && !madvise(mem, h.mem_len, MADV_RANDOM);
	if (paged)
		base_want(mem, h.data_at);
	if (same ? XXH3_64bits(mem, h.data_at) != kept->index_digest
		 : XXH3_64bits(mem, h.mem_len) != h.digest)
		goto damaged;
	if (!(b = calloc(1, sizeof(*b))))
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
			  .digest = h.digest,
			  .paged = paged};
	if (bnd_check(b)) {
		free(b);
		b = NULL;
		goto damaged;
	}
	how->from = same ? BND_FROM_KEPT : BND_FROM_CHECKED;
	return b;
damaged:
	snprintf(how->damaged, sizeof(how->damaged),
		 "%.200s is damaged (%s): its files were packed again", path,
		 same ? "its index" : "its digest");
out:
	if (mem != MAP_FAILED)
		munmap(mem, h.mem_len);
	if (fd >= 0)
		close(fd);
	return NULL;
}

/* keeps b under key (written whole to a temporary file, then renamed), with what proves it and
 * its sources unchanged later (in *kept too): 0 or -1 */
static int cache_save(const char *state, uint64_t key, const struct bnd *b, const void *man,
		      size_t man_len, struct bnd_kept *kept)
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
	struct stat s;
	if (base_commit(tmp, path) || stat(path, &s) < 0) /* the rename, then the folder's fsync */
		return -1;
	*kept =
	    (struct bnd_kept){.digest = b->digest, .index_digest = XXH3_64bits(b->mem, b->data_at)};
	base_stat_id(&s, kept->id); /* as renamed: a rename may change its change time */
	return bnd_manifest_save(state, key, man, man_len, kept);
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
		      const char *state, struct bnd_how *how, char *err, size_t errlen)
{
	struct bnd_how none;
	how = how ? how : &none;
	memset(how, 0, sizeof(*how));
	how->from = BND_FROM_PACKED;
	uint64_t key = state ? key_of(paths, npaths, tar, tar_len) : 0;
	struct bnd_kept kept;
	struct bnd *b = NULL;
	if (key && !bnd_manifest_check(state, key, paths, npaths, &kept) &&
	    (b = cache_load(state, key, &kept, how)))
		return b;
	/* what the sources are before they are read: a change meanwhile is seen next time */
	void *man = NULL;
	size_t man_len = 0;
	int keep = key && !bnd_manifest_make(paths, npaths, &man, &man_len);
	struct bnd_builder *bb = bnd_builder_new();
	if (!bb) {
		free(man);
		return snprintf(err, errlen, "out of memory"), NULL;
	}
	if (bnd_add_sources(bb, paths, npaths, tar, tar_len, err, errlen)) {
		free(man);
		bnd_builder_free(bb);
		return NULL;
	}
	/* a folder that cannot be written: packed next time */
	struct bnd *d;
	struct bnd_how saved;
	if ((b = bnd_pack(bb, err, errlen)) && keep &&
	    !cache_save(state, key, b, man, man_len, &kept) &&
	    (d = cache_load(state, key, &kept, &saved))) {
		/* the kept file from now on, not the memory it was packed in: the host's page cache
		 * holds it, once for every process, and only the pages machines use stay (a
		 * runtime's whole library, 82 MB for CPython's, was held in memory for each
		 * function) */
		bnd_free(b);
		b = d;
	}
	free(man);
	/* the tree was read into the heap to be packed (a runtime's library: tens of MB, freed
	 * now): given back to the system, not kept by the allocator for a next time */
	malloc_trim(0);
	return b;
}
