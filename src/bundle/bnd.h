/* A function's bundle: its read-only file tree, checked and packed once, looked up by path. */
#ifndef EMBER_BND_H
#define EMBER_BND_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

/* what a tree may hold at most */
#define BND_MAX_NODES 65536	   /* files, folders and links */
#define BND_MAX_BYTES (1ULL << 30) /* bytes of file contents */
#define BND_NAME_MAX  255
#define BND_PATH_MAX  4096
#define BND_DEPTH_MAX 64
#define BND_LINKS_MAX 40 /* links followed in one lookup, as Linux */

/* one file, folder or link; a folder's children are nodes [first, first + count), by name */
struct bnd_node {
	uint32_t parent; /* the root is its own parent */
	uint32_t first, count;
	uint32_t mode; /* S_IFREG, S_IFDIR or S_IFLNK with the permission bits */
	uint32_t name_off, name_len;
	uint64_t size;	   /* bytes of a file, or of a link's target */
	uint64_t data_off; /* where they are in data */
	int64_t mtime_ns;  /* its modification time (ns since the epoch; 0 if none was given) */
};

/* A file of at least a page starts on a page of the data and has the pages up to its end to
 * itself (zero past it): guest memory maps them copy-on-write. */
#define BND_PAGE 4096ULL
static inline uint64_t bnd_page_up(uint64_t x)
{
	return (x + BND_PAGE - 1) & ~(BND_PAGE - 1);
}

/* The packed tree: one block, read-only at mem, from fd_off of fd (a sealed memfd, or a file kept
 * in the state folder), whose data start at data_at (a page boundary). Node 0 is the root. */
struct bnd {
	uint8_t *mem;
	size_t mem_len;
	int fd;
	uint64_t fd_off;
	uint64_t data_at;
	const struct bnd_node *nodes;
	uint32_t nnodes;
	const char *names;
	const uint8_t *data;
	uint64_t digest; /* of the whole packed form: a snapshot made with it needs the same */
	/* data is a file's mapping that reads only the pages touched (bnd_cache.c: a fault would
	 * otherwise read the disk's whole read-ahead window around it, 8 MiB here, ~5 ms, for a
	 * header): whoever reads more than a page asks for its range first (bnd_want) */
	int paged;
	/* set while a page store holds the pages of its files of a page or more (share_bnd_share):
	 * page i of data is mapped from shared_off[i] of shared_fd (the store's memfd), or from fd
	 * when shared_off[i] is BND_NOT_SHARED; NULL: every page from fd */
	uint64_t *shared_off; /* published last (an atomic store): readers load it so */
	uint64_t shared_pages;
	int shared_fd;
};
#define BND_NOT_SHARED UINT64_MAX

/* [off, off + len) of b's data is about to be read whole: asked of the disk in one request */
static inline void bnd_want(const struct bnd *b, uint64_t off, uint64_t len)
{
	if (b->paged)
		base_want(b->data + off, len);
}

/* Packs the tree at path: a folder, or a tar (plain or compressed) or zip archive. NULL with the
 * reason in err when it cannot be read or breaks a rule: only files, folders and links, names
 * without
 * '/', control characters, "." or "..", within the limits above. */
struct bnd *bnd_open(const char *path, char *err, size_t errlen);
/* the same from a tar or zip archive in memory */
struct bnd *bnd_from_tar(const void *tar, size_t len, char *err, size_t errlen);
void bnd_free(struct bnd *b);

/* Building one (bnd_pack.c): entries added by path in any order, folders made as needed. */
struct bnd_builder;
struct bnd_builder *bnd_builder_new(void);
/* the modification time of the entry bnd_add adds next (ns since the epoch), once */
void bnd_builder_time(struct bnd_builder *bb, int64_t mtime_ns);
/* type: 'f', 'd' or 'l'; data: a file's bytes or a link's target; 0 or -1 with err */
int bnd_add(struct bnd_builder *bb, const char *path, int type, unsigned perm, const void *data,
	    size_t len, char *err, size_t errlen);
/* a folder or archive at path, or a tar or zip archive in memory, added to the tree: an entry
 * another source gave already is refused (two sources make one tree); 0 or -1 with err */
int bnd_add_path(struct bnd_builder *bb, const char *path, char *err, size_t errlen);
int bnd_add_tar(struct bnd_builder *bb, const void *tar, size_t len, char *err, size_t errlen);
/* the packed tree; the builder is freed either way */
struct bnd *bnd_pack(struct bnd_builder *bb, char *err, size_t errlen);
void bnd_builder_free(struct bnd_builder *bb);

/* The packed block (bnd_pack.c): total bytes of a memfd mapped writable (MAP_FAILED when it
 * cannot be made), then sealed and mapped read-only for this process and every machine that
 * maps it (MAP_FAILED, the block unmapped, when that fails) */
void *bnd_block_new(size_t total, int *fd);
void *bnd_block_seal(void *mem, size_t total, int fd);

/* Packed trees kept on disk (bnd_cache.c), under STATE/bundles/, named by the paths of their
 * sources (and an archive in memory's bytes): KEY.bnd, the packed form, and KEY.man, the stat
 * identity of every source entry as it was packed and of KEY.bnd as it was written. */
/* 0 when every index and range of b's packed form (nodes at mem, names after them, data at
 * data_at) stays inside it, links are shorter than a path, children follow their folder and
 * parents come before their children (no cycle), the root is a folder, and a file of a page or
 * more starts on a page; else -1. A tree read from disk is used only then. */
int bnd_check(const struct bnd *b);
/* The host's own mapping of the files' data let go of where it is a file kept in the state
 * folder: its pages stay in the page cache, which the kernel may reclaim, and come back when
 * read. A sealed memfd is the only copy: nothing changes. */
void bnd_let_go(struct bnd *b);
/* those sources added to bb (bnd_add_path, then bnd_add_tar): 0 or -1 with err */
int bnd_add_sources(struct bnd_builder *bb, const char *const *paths, size_t npaths,
		    const void *tar, size_t tar_len, char *err, size_t errlen);
/* how bnd_build got its tree */
enum bnd_from {
	BND_FROM_PACKED,  /* read and packed now (and kept, with a state folder) */
	BND_FROM_KEPT,	  /* its sources unchanged (a stat of each) and the kept file as written
			     (its identity): mapped, its index checked, nothing else read */
	BND_FROM_CHECKED, /* the kept file changed since written: read back and hashed whole */
};
struct bnd_how {
	enum bnd_from from;
	char damaged[320]; /* a kept file refused as damaged (and packed again), or "" */
};
/* The tree of those sources, packed, or read back from STATE/bundles when state is not NULL and
 * it was kept there (then kept there once packed); NULL with the reason in err. how (may be
 * NULL) says how. */
struct bnd *bnd_build(const char *const *paths, size_t npaths, const void *tar, size_t tar_len,
		      const char *state, struct bnd_how *how, char *err, size_t errlen);

/* Path lookup inside the tree only (bnd_path.c): an absolute path starts at the root, a
 * relative one at dir; ".." of the root is the root, and links are followed inside the tree
 * (an absolute target from the root), so no path leaves it. follow: the last component too.
 * 0 with *node, or -ENOENT, -ENOTDIR, -ELOOP, -ENAMETOOLONG; *parent_ok (may be NULL) says,
 * on -ENOENT, that only the last component is missing (a create would have a folder). */
int bnd_lookup(const struct bnd *b, uint32_t dir, const char *path, int follow, uint32_t *node,
	       int *parent_ok);
/* the absolute path of a folder, NUL-terminated; its length with the NUL, or -ERANGE */
long bnd_path_of(const struct bnd *b, uint32_t node, char *buf, size_t len);

static inline int bnd_is(const struct bnd *b, uint32_t n, uint32_t type)
{
	return (b->nodes[n].mode & 0170000) == type;
}

#endif
