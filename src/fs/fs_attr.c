/* Owners, modes and times: chown, chmod and utimensat on /tmp's files (the guest's own) and the
 * bundle's (EROFS); statfs is fs_statfs.c's. */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>

#include "fd/fd.h"
#include "fs/fs.h"
#include "fs/fs_tmp.h"

#define ATTR_SYS_fchmodat2 452		  /* Linux 6.6 */
#define BUNDLE_MAGIC	   SQUASHFS_MAGIC /* read-only, packed: what the bundle is most like */
#define PIPE_MAGIC	   0x50495045	  /* pipefs, where pipes, eventfds and the like live */

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
	long rc = sys_tmp_path(
	    st, dirfd, path, flags & AT_SYMLINK_NOFOLLOW ? SYS_TMP_NOFOLLOW : SYS_TMP_FOLLOW, &tmp);
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

/* chmod and utimensat in /tmp (on a link itself with AT_SYMLINK_NOFOLLOW: its times, never its
 * mode, EOPNOTSUPP as Linux's); the bundle's read-only answer elsewhere */
static long set_attr(struct sys_state *st, uint64_t dirfd, uint64_t path, int is_mode, uint64_t v,
		     uint64_t flags)
{
	struct sys_obj *o = NULL;
	struct sys_tmp_at at = {0};
	long rc = 0;
	if (flags & ~(uint64_t)(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH))
		return -EINVAL;
	if (path) {
		rc = sys_tmp_path(st, dirfd, path,
				  flags & AT_SYMLINK_NOFOLLOW ? SYS_TMP_NOFOLLOW : SYS_TMP_FOLLOW,
				  &at);
		if (rc || !at.in)
			return rc ? rc : st->bundle ? -EROFS : -EACCES;
		if (!at.found)
			return -ENOENT;
	} else if (!(o = sys_fd_obj(st, dirfd))) {
		return -EBADF;
	} else if (o->kind != SYS_KIND_TMP) {
		return o->kind == SYS_KIND_FILE ? -EROFS : is_mode ? 0 : -EPERM;
	}
	struct sys_tmp_node *n = &st->tmp->n[path ? at.node : o->id];
	if (is_mode && S_ISLNK(n->mode))
		return -EOPNOTSUPP;
	if (is_mode) {
		n->mode = (n->mode & S_IFMT) | ((uint32_t)v & 07777);
		return 0;
	}
	/* the access time, then the modification time: each a time, UTIME_NOW or UTIME_OMIT */
	struct timespec ts[2] = {{0, UTIME_NOW}, {0, UTIME_NOW}}, now;
	if (v && sys_get(st, ts, v, sizeof(ts)))
		return -EFAULT;
	for (int i = 0; i < 2; i++)
		if (ts[i].tv_nsec != UTIME_NOW && ts[i].tv_nsec != UTIME_OMIT &&
		    (ts[i].tv_nsec < 0 || ts[i].tv_nsec >= 1000000000))
			return -EINVAL;
	clock_gettime(CLOCK_REALTIME, &now);
	int64_t *times[2] = {&n->atime_ns, &n->mtime_ns};
	for (int i = 0; i < 2; i++)
		if (ts[i].tv_nsec != UTIME_OMIT)
			*times[i] = ts[i].tv_nsec == UTIME_NOW
					? (int64_t)now.tv_sec * 1000000000 + now.tv_nsec
					: (int64_t)ts[i].tv_sec * 1000000000 + ts[i].tv_nsec;
	return 0;
}

static long sys_chmod(struct sys_state *st, const uint64_t a[6])
{
	return set_attr(st, (uint64_t)(int64_t)AT_FDCWD, a[0], 1, a[1], 0);
}

static long sys_fchmod(struct sys_state *st, const uint64_t a[6])
{
	return set_attr(st, a[0], 0, 1, a[1], 0);
}

static long sys_fchmodat(struct sys_state *st, const uint64_t a[6])
{
	return set_attr(st, a[0], a[1], 1, a[2], 0);
}

/* Linux 6.6's fchmodat with flags */
static long sys_fchmodat2(struct sys_state *st, const uint64_t a[6])
{
	return set_attr(st, a[0], a[1], 1, a[2], a[3]);
}

static long sys_utimensat(struct sys_state *st, const uint64_t a[6])
{
	/* a NULL path: the descriptor (futimens) */
	return set_attr(st, a[0], a[1], 0, a[2], a[3]);
}

const struct sys_entry sys_fs_attr_table[] = {
    {SYS_chown, "chown", sys_chown, 0, NULL},
    {SYS_lchown, "lchown", sys_lchown, 0, NULL},
    {SYS_fchown, "fchown", sys_fchown, 0, NULL},
    {SYS_fchownat, "fchownat", sys_fchownat, 0, NULL},
    {SYS_chmod, "chmod", sys_chmod, 0, NULL},
    {SYS_fchmod, "fchmod", sys_fchmod, 0, NULL},
    {SYS_fchmodat, "fchmodat", sys_fchmodat, 0, NULL},
    {ATTR_SYS_fchmodat2, "fchmodat2", sys_fchmodat2, 0, NULL},
    {SYS_utimensat, "utimensat", sys_utimensat, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};
