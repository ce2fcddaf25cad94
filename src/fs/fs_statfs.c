/* statfs and fstatfs: the file system each kind of file lives on, as Linux names them: the
 * function's files a read-only one, /tmp a tmpfs, /proc proc, pipes pipefs, the rest anon. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>

#include "fd/fd.h"
#include "fs/fs.h"
#include "fs/fs_tmp.h"

/* Linux's magic numbers (linux/magic.h) */
#define TMPFS_MAGIC	 0x01021994
#define PROC_MAGIC	 0x9fa0
#define PIPEFS_MAGIC	 0x50495045
#define ANON_INODE_MAGIC 0x09041934
#define BUNDLE_MAGIC	 0x73717368 /* squashfs's: a packed read-only tree */

enum fs { FS_BUNDLE, FS_TMP, FS_PROC, FS_DEV, FS_PIPE, FS_ANON };

static void describe(struct sys_state *st, enum fs fs, struct statfs *s)
{
	static const long magic[] = {BUNDLE_MAGIC, TMPFS_MAGIC,	 PROC_MAGIC,
				     TMPFS_MAGIC,  PIPEFS_MAGIC, ANON_INODE_MAGIC};
	memset(s, 0, sizeof(*s));
	s->f_type = magic[fs];
	s->f_bsize = s->f_frsize = 4096;
	s->f_namelen = 255;
	s->f_flags = ST_NOSUID | ST_NODEV;
	s->f_fsid.__val[0] = (int)fs + 1;
	if (fs == FS_BUNDLE && st->bundle) { /* full: nothing can be written */
		s->f_flags |= ST_RDONLY;
		s->f_blocks = (st->bundle->mem_len + 4095) / 4096;
		s->f_files = st->bundle->nnodes;
	} else if (fs == FS_TMP) {
		uint64_t limit = sys_tmp_limit(st), used = st->tmp ? st->tmp->bytes : 0;
		s->f_blocks = limit / 4096;
		s->f_bfree = s->f_bavail = used < limit ? (limit - used) / 4096 : 0;
		s->f_files = SYS_TMP_NODES;
		s->f_ffree = SYS_TMP_NODES - (st->tmp ? st->tmp->nn : 1);
	}
}

static enum fs fs_of(const struct sys_obj *o)
{
	static const enum fs by_kind[SYS_KINDS] = {
	    [SYS_KIND_STD] = FS_PIPE,	[SYS_KIND_FILE] = FS_BUNDLE, [SYS_KIND_PIPE] = FS_PIPE,
	    [SYS_KIND_EVENT] = FS_ANON, [SYS_KIND_TIMER] = FS_ANON,  [SYS_KIND_EPOLL] = FS_ANON,
	    [SYS_KIND_PROC] = FS_PROC,	[SYS_KIND_TMP] = FS_TMP,     [SYS_KIND_DEV] = FS_DEV,
	    [SYS_KIND_FIFO] = FS_TMP,
	};
	return o->kind < SYS_KINDS ? by_kind[o->kind] : FS_ANON;
}

static long sys_statfs(struct sys_state *st, const uint64_t a[6])
{
	struct statfs s;
	enum fs fs = FS_BUNDLE;
	struct sys_tmp_at tmp;
	uint32_t node;
	long rc = 0;
	if (sys_procfs_at(st, a[0]) >= 0)
		fs = FS_PROC;
	else if (sys_dev_at(st, a[0]) >= 0)
		fs = FS_DEV;
	else if ((rc = sys_tmp_path(st, (uint64_t)(int64_t)AT_FDCWD, a[0], SYS_TMP_FOLLOW, &tmp)) ||
		 tmp.in)
		rc = rc ? rc : tmp.found ? 0 : -ENOENT, fs = FS_TMP;
	else if (tmp.outside[0] && sys_procfs_find(st, tmp.outside) >= 0)
		fs = FS_PROC; /* a link of /tmp's to it */
	else if (tmp.outside[0] && sys_dev_find(tmp.outside) >= 0)
		fs = FS_DEV;
	else
		rc = sys_fs_lookup_at(st, (uint64_t)(int64_t)AT_FDCWD, a[0], 0, &node);
	if (rc)
		return rc;
	describe(st, fs, &s);
	return sys_put(st, a[1], &s, sizeof(s));
}

static long sys_fstatfs(struct sys_state *st, const uint64_t a[6])
{
	const struct sys_obj *o = sys_fd_obj(st, a[0]);
	struct statfs s;
	if (!o)
		return -EBADF;
	describe(st, fs_of(o), &s);
	return sys_put(st, a[1], &s, sizeof(s));
}

const struct sys_entry sys_statfs_table[] = {
    {SYS_statfs, "statfs", sys_statfs, 0, NULL},
    {SYS_fstatfs, "fstatfs", sys_fstatfs, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};
