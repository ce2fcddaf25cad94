/* stat, lstat and statx of any path (the bundle's files, /tmp, /proc, /dev), and what a bundle
 * file's stat holds. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "fd/fd.h"
#include "fs/fs.h"
#include "fs/fs_tmp.h"

#define FS_DEV	 EMBER_RT_FILE_DEV
#define FS_OWNER 0 /* the files' owner, not the guest's uid: it reads them as "other" */

void sys_fs_stat_of(const struct bnd *b, uint32_t node, struct stat *s)
{
	const struct bnd_node *n = &b->nodes[node];
	memset(s, 0, sizeof(*s));
	s->st_dev = FS_DEV;
	s->st_ino = node + 1;
	s->st_mode = n->mode;
	s->st_nlink = bnd_is(b, node, S_IFDIR) ? 2 : 1;
	s->st_uid = s->st_gid = FS_OWNER;
	s->st_size = (off_t)n->size;
	s->st_blksize = 4096;
	s->st_blocks = (blkcnt_t)((n->size + 511) / 512);
	/* the tree's time for all three: it never changes, nor is it accessed as Linux counts */
	s->st_mtim = (struct timespec){n->mtime_ns / 1000000000LL, n->mtime_ns % 1000000000LL};
	if (s->st_mtim.tv_nsec < 0) /* before 1970 */
		s->st_mtim.tv_sec--, s->st_mtim.tv_nsec += 1000000000LL;
	s->st_atim = s->st_ctim = s->st_mtim;
}

/* the node an *at call with AT_ flags names */
long sys_fs_lookup_at(struct sys_state *st, uint64_t dirfd, uint64_t path, int flags,
		      uint32_t *node)
{
	if (!st->bundle)
		return sys_fs_none(st, path, flags & AT_EMPTY_PATH);
	return sys_fs_resolve(st, dirfd, path, !(flags & AT_SYMLINK_NOFOLLOW),
			      flags & AT_EMPTY_PATH, node, NULL);
}

/* the stat of a path: a made /proc file's, or the bundle's node's */
static long stat_path(struct sys_state *st, uint64_t dirfd, uint64_t path, int flags,
		      struct stat *s)
{
	int proc = sys_procfs_at(st, path), dev = sys_dev_at(st, path);
	if (proc >= 0)
		return sys_procfs_stat(st, proc, !(flags & AT_SYMLINK_NOFOLLOW), s);
	if (dev >= 0)
		return sys_dev_stat(dev, s), 0;
	const char *c = sys_user(st, path, 1, PROT_READ);
	/* the descriptor itself, of any kind (libuv's fstat is statx(fd, "", AT_EMPTY_PATH)) */
	if (c && !*c && (flags & AT_EMPTY_PATH) && (int)dirfd != AT_FDCWD)
		return sys_fd_stat(st, dirfd, s);
	if (c && !*c && (flags & AT_EMPTY_PATH) && (st->cwd & SYS_CWD_TMP))
		return sys_tmp_tree(st) ? (sys_tmp_stat(st, st->cwd & ~SYS_CWD_TMP, s), 0)
					: -ENOMEM;
	struct sys_tmp_at tmp;
	int follow = !(flags & AT_SYMLINK_NOFOLLOW);
	long trc = sys_tmp_path(st, dirfd, path, follow ? SYS_TMP_FOLLOW : SYS_TMP_NOFOLLOW, &tmp);
	if (!trc && tmp.in && !tmp.found)
		trc = -ENOENT;
	if (trc || tmp.in)
		return trc ? trc : (sys_tmp_stat(st, tmp.node, s), 0);
	if (tmp.outside[0] && (proc = sys_procfs_find(st, tmp.outside)) >= 0)
		return sys_procfs_stat(st, proc, follow, s); /* a link of /tmp's to them */
	if (tmp.outside[0] && (dev = sys_dev_find(tmp.outside)) >= 0)
		return sys_dev_stat(dev, s), 0;
	uint32_t node;
	long rc = sys_fs_lookup_at(st, dirfd, path, flags, &node);
	if (rc)
		return rc;
	sys_fs_stat_of(st->bundle, node, s);
	return 0;
}

long sys_fs_stat_at(struct sys_state *st, uint64_t dirfd, uint64_t path, uint64_t addr, int flags)
{
	struct stat s;
	long rc = stat_path(st, dirfd, path, flags, &s);
	return rc ? rc : sys_put(st, addr, &s, sizeof(s));
}

static long sys_stat(struct sys_state *st, const uint64_t a[6])
{
	return sys_fs_stat_at(st, (uint64_t)(int64_t)AT_FDCWD, a[0], a[1], 0);
}

static long sys_lstat(struct sys_state *st, const uint64_t a[6])
{
	return sys_fs_stat_at(st, (uint64_t)(int64_t)AT_FDCWD, a[0], a[1], AT_SYMLINK_NOFOLLOW);
}

#define STATX_MNT_ID_	 0x1000U
#define STATX_RESERVED_	 0x80000000U
#define STATX_SYNC_TYPE_ 0x6000 /* AT_STATX_SYNC_TYPE: FORCE_SYNC and DONT_SYNC */
#define STATX_FLAGS	 (AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_EMPTY_PATH | STATX_SYNC_TYPE_)

static long sys_statx(struct sys_state *st, const uint64_t a[6])
{
	struct stat s;
	int flags = (int)a[2];
	/* Linux's checks first: known flags, not both sync types, no reserved bit asked for */
	if ((flags & ~STATX_FLAGS) || (flags & STATX_SYNC_TYPE_) == STATX_SYNC_TYPE_ ||
	    ((uint32_t)a[3] & STATX_RESERVED_))
		return -EINVAL;
	long rc = stat_path(st, a[0], a[1], flags, &s);
	if (rc)
		return rc;
	struct statx x;
	memset(&x, 0, sizeof(x));
	x.stx_mask = STATX_BASIC_STATS | STATX_MNT_ID_;
	/* a mount per file system, as st_dev tells them apart (never 0) */
	uint64_t mnt = (uint64_t)s.st_dev + 1;
	x.stx_mnt_id = mnt;
	x.stx_blksize = (uint32_t)s.st_blksize;
	x.stx_nlink = (uint32_t)s.st_nlink;
	x.stx_uid = s.st_uid;
	x.stx_gid = s.st_gid;
	x.stx_mode = (uint16_t)s.st_mode;
	x.stx_ino = s.st_ino;
	x.stx_size = (uint64_t)s.st_size;
	x.stx_blocks = (uint64_t)s.st_blocks;
	x.stx_mtime = (struct statx_timestamp){s.st_mtim.tv_sec, (uint32_t)s.st_mtim.tv_nsec, 0};
	x.stx_atime = x.stx_ctime = x.stx_mtime;
	x.stx_dev_major = (uint32_t)(s.st_dev >> 8);
	x.stx_dev_minor = (uint32_t)(s.st_dev & 0xff);
	return sys_put(st, a[4], &x, sizeof(x));
}

/* without files, refused as the host's own would be (the made /proc files are there without
 * files too) */
const struct sys_entry sys_fs_stat_table[] = {
    {SYS_stat, "stat", sys_stat, 0, NULL},
    {SYS_lstat, "lstat", sys_lstat, 0, NULL},
    {SYS_statx, "statx", sys_statx, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};
