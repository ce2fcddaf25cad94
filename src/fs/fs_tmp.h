/* A writable scratch /tmp per invocation, held in host memory: what its files share. */
#ifndef EMBER_SYS_TMP_H
#define EMBER_SYS_TMP_H

#include <sys/stat.h>

#include "sys/sys.h"

#define SYS_TMP_NODES 1024	 /* files, folders and links, /tmp itself included */
#define SYS_TMP_NAME  256	 /* a name's bytes with its NUL */
#define SYS_TMP_FREE  0		 /* a free node's mode */
#define SYS_TMP_GONE  UINT32_MAX /* the parent of a file unlinked while open */

/* a named pipe's, as Linux's pipe_inode_info: its ring (the node's data, size bytes, 0:
 * SYS_PIPE_SIZE), the readers and writers (descriptors, and opens waiting for their partner),
 * the opens for reading and for writing ever made (what an open that waits waits to change) */
struct sys_tmp_fifo {
	uint64_t pos, len, size;
	uint32_t readers, writers;
	uint32_t ropens, wopens;
};

struct sys_tmp_node {
	uint32_t mode; /* S_IFREG, S_IFDIR, S_IFLNK (its target in data) or S_IFIFO (its ring in
			data while it is open) with the permission bits; SYS_TMP_FREE */
	uint32_t parent;
	uint32_t same; /* a hard link: the node whose file this name is also (its mode only the
			  type); 0: its own */
	char name[SYS_TMP_NAME];
	uint8_t *data;
	uint64_t size, cap;
	int64_t mtime_ns, atime_ns;
	struct sys_tmp_fifo fifo; /* S_IFIFO's */
};

/* node 0 is /tmp; nodes are never moved, so a descriptor names one by its index */
struct sys_tmp {
	struct sys_tmp_node *n;
	uint32_t nn;	/* nodes [0, nn) exist, free or not */
	uint64_t bytes; /* of every file's data */
};

/* A path of a call, when it lies in /tmp: its node (or, when only the last name is missing, the
 * folder it would go in and that name). 0 with *in = 1; 0 with *in = 0 when the path is not in
 * /tmp (the caller goes on as before), and then, when it went through /tmp and left it (by a
 * link or by /tmp's ".."), outside holds the absolute path it reached, for the caller to look up
 * from the root instead of the guest's path; or -errno (-ENOENT, -ENOTDIR, -EFAULT,
 * -ENAMETOOLONG, -ELOOP past 40 links) */
struct sys_tmp_at {
	int in;
	int found;	 /* node is the path's; else parent + name would be */
	uint32_t node;	 /* found: the file (a hard link's: the node it names) */
	uint32_t entry;	 /* found: the name (node, or a hard link to it) */
	uint32_t parent; /* !found: the folder the last name goes in */
	char name[SYS_TMP_NAME];
	int trailing; /* the path ends in '/' */
	int dots;     /* its last name is "." (1) or ".." (2): no entry to remove or rename */
	char outside[BND_PATH_MAX];
};
/* follow, for the last name of a path when it is a link: */
#define SYS_TMP_NOFOLLOW                                                                           \
	0 /* the link itself (lstat, readlink, O_NOFOLLOW), unless the path ends in '/' */
#define SYS_TMP_FOLLOW 1 /* where it leads (stat, open, chmod, truncate) */
#define SYS_TMP_ENTRY  2 /* the link itself always: the name is made, removed or renamed */
long sys_tmp_path(struct sys_state *st, uint64_t dirfd, uint64_t addr, int follow,
		  struct sys_tmp_at *at);
/* the same for a path in host memory */
long sys_tmp_walk(struct sys_state *st, uint64_t dirfd, const char *path, int follow,
		  struct sys_tmp_at *at);

/* the tree, made on first use (NULL when it cannot be: out of memory) */
struct sys_tmp *sys_tmp_tree(struct sys_state *st);
/* a new node named name in parent: its index, or -ENOSPC / -ENOMEM */
long sys_tmp_new(struct sys_state *st, uint32_t parent, const char *name, uint32_t mode);
/* node's data resized to size (zeros past the old end): 0, -ENOSPC past the limit, -ENOMEM */
long sys_tmp_resize(struct sys_state *st, uint32_t node, uint64_t size);
/* the name entry removed: a hard link; a file with other names keeps the first of them; else it
 * is freed now, or, open on a descriptor, when its last one closes */
void sys_tmp_unlink(struct sys_state *st, uint32_t entry);
/* node's names: 1 + its hard links */
uint32_t sys_tmp_names(const struct sys_tmp *t, uint32_t node);
/* whether a descriptor (or a shared mapping) names node */
int sys_tmp_open_node(const struct sys_state *st, uint32_t node);
/* the stat of node */
void sys_tmp_stat(const struct sys_state *st, uint32_t node, struct stat *s);
/* the bytes of every file may not pass this: a quarter of guest memory */
uint64_t sys_tmp_limit(const struct sys_state *st);
/* the open /tmp file or folder on fd, or NULL */
struct sys_obj *sys_tmp_file(struct sys_state *st, uint64_t fd);
/* the absolute path of /tmp's folder node into buf: its length, or -ENAMETOOLONG (-ENOENT
 * when it was removed) */
long sys_tmp_path_of(const struct sys_state *st, uint32_t node, char *buf, size_t len);
/* node, removed while a descriptor, a shared mapping or the cwd still named it, freed once none
 * does */
void sys_tmp_release(struct sys_state *st, uint32_t node);

/* the guest's access to node by its owner's bits: want 4 read, 2 write, 1 search; 0 or -EACCES */
long sys_tmp_may(struct sys_state *st, uint32_t node, unsigned want);
/* a link to target made at at (sys_tmp_link.c); node's target into buf (len bytes at most) */
long sys_tmp_symlink(struct sys_state *st, const struct sys_tmp_at *at, const char *target);
/* a hard link at to the file from names (both looked up in /tmp or not, at the name itself) */
long sys_tmp_link(struct sys_state *st, const struct sys_tmp_at *from, const struct sys_tmp_at *to);
long sys_tmp_readlink(struct sys_state *st, uint32_t node, uint64_t buf, uint64_t len);

/* the calls on a path in /tmp (sys_tmp_call.c), at the path's lookup */
long sys_tmp_open(struct sys_state *st, const struct sys_tmp_at *at, int flags, uint32_t mode);
long sys_tmp_read_at(struct sys_state *st, struct sys_obj *o, uint64_t addr, uint64_t len,
		     uint64_t pos);
long sys_tmp_write_at(struct sys_state *st, struct sys_obj *o, uint64_t addr, uint64_t len,
		      uint64_t pos);

/* named pipes (fs_tmp_fifo.c): open of node (a FIFO) with flags: a descriptor, -ENXIO, or a
 * wait for its partner; an open that waited, made again (sys_retrying), before its path is
 * looked up again: 1 with *ret its descriptor or SYS_WAITS again, 0 when the call is no such
 * open; an open that waited, interrupted by a signal, lets go of its node */
long sys_tmp_fifo_open(struct sys_state *st, uint32_t node, int flags);
int sys_tmp_fifo_again(struct sys_state *st, int flags, long *ret);
void sys_tmp_fifo_interrupted(struct sys_state *st, struct proc_thread *t);
/* F_GETPIPE_SZ (set 0) and F_SETPIPE_SZ of a named pipe's descriptor o */
long sys_tmp_fifo_size(struct sys_state *st, struct sys_obj *o, int set, uint64_t arg);
/* a snapshot's copy of node's ring (its size, 0: none) */
uint64_t sys_tmp_fifo_held(const struct sys_tmp_node *n);

/* saved and restored with the rest (sys_snap.c): a deep copy; free */
int sys_tmp_save(const struct sys_state *st, struct sys_tmp **out);
int sys_tmp_restore(struct sys_state *st, const struct sys_tmp *saved);
void sys_tmp_free(struct sys_tmp *t);

#endif
