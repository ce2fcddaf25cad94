/* Owners and file systems: chown on /tmp's files (the guest's own) and the bundle's (EROFS), and
 * statfs of either, /tmp a bounded tmpfs, the bundle a read-only file system. */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>

#include "sys/sys_fd.h"
#include "sys/sys_fs.h"
#include "sys/sys_tmp.h"

#define BUNDLE_MAGIC SQUASHFS_MAGIC /* read-only, packed: what the bundle is most like */
#define PIPE_MAGIC   0x50495045	    /* pipefs, where pipes, eventfds and the like live */

/* an owner argument the guest may give for a file of its own: its ids, or -1 (unchanged); for
 * /tmp itself (root's) -1 only */
static long chown_node(uint32_t node, uint64_t uid, uint64_t gid)
{
	uint32_t u = (uint32_t)uid, g = (uint32_t)gid, own = node ? SYS_GUEST_UID : UINT32_MAX;
	return (u == UINT32_MAX || u == own) && (g == UINT32_MAX || g == own) ? 0 : -EPERM;
}

static long chown_at(struct sys_state *st, uint64_t dirfd, uint64_t path, uint64_t uid,
		     uint64_t gid, int flags)
{
	if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH))
		return -EINVAL;
	const char *c = sys_user(st, path, 1, PROT_READ);
	if (c && !*c && (flags & AT_EMPTY_PATH) && (int)dirfd != AT_FDCWD) {
		struct sys_obj *o = sys_fd_obj(st, dirfd);
		if (!o)
			return -EBADF;
		if (o->kind == SYS_KIND_TMP)
			return chown_node(o->id, uid, gid);
		return o->kind == SYS_KIND_FILE || o->kind == SYS_KIND_PROC
			   ? -EROFS
			   : chown_node(1, uid, gid);
	}
	struct sys_tmp_at tmp;
	long rc = sys_tmp_path(st, dirfd, path, &tmp);
	if (!rc && tmp.in)
		return tmp.found ? chown_node(tmp.node, uid, gid) : -ENOENT;
	if (rc)
		return rc;
	if (sys_procfs_at(st, path) >= 0 || sys_dev_at(st, path) >= 0)
		return -EPERM; /* root's, on file systems that are not read-only */
	uint32_t node;
	rc = sys_fs_lookup_at(st, dirfd, path, flags, &node);
	return rc ? rc : -EROFS;
}

static long sys_chown(struct sys_state *st, const uint64_t a[6])
{
	return chown_at(st, (uint64_t)(int64_t)AT_FDCWD, a[0], a[1], a[2], 0);
}

static long sys_lchown(struct sys_state *st, const uint64_t a[6])
{
	return chown_at(st, (uint64_t)(int64_t)AT_FDCWD, a[0], a[1], a[2], AT_SYMLINK_NOFOLLOW);
}

static long sys_fchownat(struct sys_state *st, const uint64_t a[6])
{
	return chown_at(st, a[0], a[1], a[2], a[3], (int)a[4]);
}

static long sys_fchown(struct sys_state *st, const uint64_t a[6])
{
	struct sys_obj *o = sys_fd_obj(st, a[0]);
	if (!o)
		return -EBADF;
	if (o->kind == SYS_KIND_TMP)
		return chown_node(o->id, a[1], a[2]);
	return o->kind == SYS_KIND_FILE || o->kind == SYS_KIND_PROC ? -EROFS
								    : chown_node(1, a[1], a[2]);
}

/* the statfs of /tmp (tmp 1), of the bundle (0), or of where pipes live (-1) */
static void fs_of(const struct sys_state *st, int tmp, struct statfs *s)
{
	memset(s, 0, sizeof(*s));
	s->f_bsize = s->f_frsize = 4096;
	s->f_namelen = tmp > 0 ? SYS_TMP_NAME - 1 : 255;
	if (tmp > 0) {
		uint64_t limit = sys_tmp_limit(st), used = st->tmp ? st->tmp->bytes : 0;
		uint32_t nodes = 0;
		for (uint32_t i = 0; st->tmp && i < st->tmp->nn; i++)
			nodes += st->tmp->n[i].mode != SYS_TMP_FREE;
		s->f_type = TMPFS_MAGIC;
		s->f_blocks = limit / 4096;
		s->f_bfree = s->f_bavail = (limit - (used < limit ? used : limit)) / 4096;
		s->f_files = SYS_TMP_NODES;
		s->f_ffree = SYS_TMP_NODES - (nodes ? nodes : 1);
		s->f_flags = ST_NOSUID | ST_NODEV;
	} else if (!tmp) {
		s->f_type = BUNDLE_MAGIC;
		s->f_blocks = st->bundle ? (st->bundle->mem_len + 4095) / 4096 : 0;
		s->f_files = st->bundle ? st->bundle->nnodes : 0;
		s->f_flags = ST_RDONLY | ST_NOSUID | ST_NODEV;
	} else {
		s->f_type = PIPE_MAGIC;
	}
}

static long statfs_at(struct sys_state *st, uint64_t path, uint64_t buf)
{
	struct statfs s;
	struct sys_tmp_at tmp;
	long rc = sys_tmp_path(st, (uint64_t)(int64_t)AT_FDCWD, path, &tmp);
	if (!rc && tmp.in && !tmp.found)
		rc = -ENOENT;
	if (rc)
		return rc;
	if (!tmp.in && sys_procfs_at(st, path) < 0 && sys_dev_at(st, path) < 0) {
		uint32_t node;
		if ((rc = sys_fs_lookup_at(st, (uint64_t)(int64_t)AT_FDCWD, path, 0, &node)))
			return rc;
	}
	fs_of(st, tmp.in, &s);
	return sys_put(st, buf, &s, sizeof(s));
}

static long sys_statfs(struct sys_state *st, const uint64_t a[6])
{
	return statfs_at(st, a[0], a[1]);
}

static long sys_fstatfs(struct sys_state *st, const uint64_t a[6])
{
	struct sys_obj *o = sys_fd_obj(st, a[0]);
	if (!o)
		return -EBADF;
	struct statfs s;
	fs_of(st, o->kind == SYS_KIND_TMP ? 1 : o->kind == SYS_KIND_FILE ? 0 : -1, &s);
	return sys_put(st, a[1], &s, sizeof(s));
}

const struct sys_entry sys_fs_attr_table[] = {
    {SYS_chown, "chown", sys_chown, 0, NULL},
    {SYS_lchown, "lchown", sys_lchown, 0, NULL},
    {SYS_fchown, "fchown", sys_fchown, 0, NULL},
    {SYS_fchownat, "fchownat", sys_fchownat, 0, NULL},
    {SYS_statfs, "statfs", sys_statfs, 0, NULL},
    {SYS_fstatfs, "fstatfs", sys_fstatfs, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};
