/* The bundle's paths beyond opening: links read, access checked, the cwd, and the calls that
 * would change the tree (EROFS). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fd/fd.h"
#include "fs/fs.h"
#include "fs/fs_tmp.h"

static long readlink_at(struct sys_state *st, uint64_t dirfd, uint64_t path, uint64_t buf,
			uint64_t len)
{
	if ((int64_t)len <= 0)
		return -EINVAL;
	int proc = sys_procfs_at(st, path);
	if (proc >= 0)
		return sys_procfs_readlink(st, proc, buf, len);
	const char *c = sys_user(st, path, 1, PROT_READ);
	struct sys_obj *o = c && !*c ? sys_tmp_file(st, dirfd) : NULL;
	if (o) /* "": the link an O_PATH descriptor names (another file: ENOENT, as Linux) */
		return S_ISLNK(st->tmp->n[o->id].mode) ? sys_tmp_readlink(st, o->id, buf, len)
						       : -ENOENT;
	struct sys_tmp_at tmp;
	long trc = sys_tmp_path(st, dirfd, path, SYS_TMP_NOFOLLOW, &tmp);
	if (trc || tmp.in)
		return trc ? trc : tmp.found ? sys_tmp_readlink(st, tmp.node, buf, len) : -ENOENT;
	if (tmp.outside[0] && (proc = sys_procfs_find(st, tmp.outside)) >= 0)
		return sys_procfs_readlink(st, proc, buf, len);
	if (!st->bundle)
		return -EACCES;
	uint32_t node;
	long rc = sys_fs_resolve(st, dirfd, path, 0, 0, &node, NULL);
	if (rc)
		return rc;
	if (!bnd_is(st->bundle, node, S_IFLNK))
		return -EINVAL;
	const struct bnd_node *n = &st->bundle->nodes[node];
	uint64_t k = n->size < len ? n->size : len;
	void *dst = sys_user(st, buf, k, PROT_WRITE);
	if (!dst)
		return -EFAULT;
	memcpy(dst, st->bundle->data + n->data_off, k);
	return (long)k;
}

static long sys_readlink(struct sys_state *st, const uint64_t a[6])
{
	return readlink_at(st, (uint64_t)(int64_t)AT_FDCWD, a[0], a[1], a[2]);
}

static long sys_readlinkat(struct sys_state *st, const uint64_t a[6])
{
	return readlink_at(st, a[0], a[1], a[2], a[3]);
}

/* access as the guest's uid, which does not own the files: the "other" bits; writing: EROFS */
static long access_at(struct sys_state *st, uint64_t dirfd, uint64_t path, int mode, int flags)
{
	if (mode & ~(R_OK | W_OK | X_OK))
		return -EINVAL;
	int proc = sys_procfs_at(st, path);
	if (proc >= 0)
		return sys_procfs_access(st, proc, mode);
	if (sys_dev_at(st, path) >= 0) /* mode 0666 */
		return mode & X_OK ? -EACCES : 0;
	struct sys_tmp_at tmp;
	int dev, follow = !(flags & AT_SYMLINK_NOFOLLOW);
	long trc = sys_tmp_path(st, dirfd, path, follow ? SYS_TMP_FOLLOW : SYS_TMP_NOFOLLOW, &tmp);
	if (!trc && tmp.in && !tmp.found)
		trc = -ENOENT;
	if (!trc && tmp.in && S_ISLNK(st->tmp->n[tmp.node].mode))
		return 0; /* a link itself: 0777 */
	if (tmp.outside[0] && (proc = sys_procfs_find(st, tmp.outside)) >= 0)
		return sys_procfs_access(st, proc, mode); /* a link of /tmp's to them */
	if (tmp.outside[0] && (dev = sys_dev_find(tmp.outside)) >= 0)
		return mode & X_OK ? -EACCES : 0;
	if (trc || tmp.in) { /* the guest owns what it made there: the owner's bits */
		unsigned perm = trc ? 0 : (st->tmp->n[tmp.node].mode >> 6) & 07;
		if (!trc && ((mode & R_OK && !(perm & 4)) || (mode & W_OK && !(perm & 2)) ||
			     (mode & X_OK && !(perm & 1))))
			trc = -EACCES;
		return trc;
	}
	uint32_t node;
	long rc = sys_fs_lookup_at(st, dirfd, path, flags, &node);
	if (rc)
		return rc;
	unsigned perm = st->bundle->nodes[node].mode & 07;
	if (((mode & R_OK) && !(perm & 4)) || ((mode & X_OK) && !(perm & 1)))
		return -EACCES;
	return mode & W_OK ? -EROFS : 0;
}

static long sys_access(struct sys_state *st, const uint64_t a[6])
{
	return access_at(st, (uint64_t)(int64_t)AT_FDCWD, a[0], (int)a[1], 0);
}

static long sys_faccessat(struct sys_state *st, const uint64_t a[6])
{
	return access_at(st, a[0], a[1], (int)a[2], 0);
}

static long sys_faccessat2(struct sys_state *st, const uint64_t a[6])
{
	return access_at(st, a[0], a[1], (int)a[2], (int)a[3]);
}

/* the cwd becomes cwd: a folder of /tmp's the old one was, removed meanwhile, goes now */
static void set_cwd(struct sys_state *st, uint32_t cwd)
{
	uint32_t old = st->cwd;
	st->cwd = cwd;
	if (old & SYS_CWD_TMP)
		sys_tmp_release(st, old & ~SYS_CWD_TMP);
}

static long sys_chdir(struct sys_state *st, const uint64_t a[6])
{
	struct sys_tmp_at tmp;
	long trc = sys_tmp_path(st, (uint64_t)(int64_t)AT_FDCWD, a[0], SYS_TMP_FOLLOW, &tmp);
	if (!trc && tmp.in && !tmp.found)
		trc = -ENOENT;
	if (!trc && tmp.in && !S_ISDIR(st->tmp->n[tmp.node].mode))
		trc = -ENOTDIR;
	if (trc || tmp.in)
		return trc ? trc : (set_cwd(st, SYS_CWD_TMP | tmp.node), 0);
	if (!st->bundle)
		return -EACCES;
	uint32_t node;
	long rc = sys_fs_resolve(st, (uint64_t)(int64_t)AT_FDCWD, a[0], 1, 0, &node, NULL);
	if (rc)
		return rc;
	if (!bnd_is(st->bundle, node, S_IFDIR))
		return -ENOTDIR;
	set_cwd(st, node);
	return 0;
}

static long sys_fchdir(struct sys_state *st, const uint64_t a[6])
{
	struct sys_obj *t = sys_tmp_file(st, a[0]);
	if (t && !S_ISDIR(st->tmp->n[t->id].mode))
		return -ENOTDIR;
	if (t)
		return set_cwd(st, SYS_CWD_TMP | t->id), 0;
	struct sys_obj *f = sys_fs_file(st, a[0]);
	if (!f)
		return sys_fd_obj(st, a[0]) ? -ENOTDIR : -EBADF;
	if (!bnd_is(st->bundle, f->id, S_IFDIR))
		return -ENOTDIR;
	set_cwd(st, f->id);
	return 0;
}

/* the cwd's absolute path with its NUL: -ENOENT when it was removed, -ERANGE past size */
static long sys_getcwd(struct sys_state *st, const uint64_t a[6])
{
	char path[BND_PATH_MAX] = "/"; /* without files: the root of an empty tree */
	size_t len = a[1] < sizeof(path) ? a[1] : sizeof(path);
	long n;
	if (st->cwd & SYS_CWD_TMP) {
		n = sys_tmp_tree(st) ? sys_tmp_path_of(st, st->cwd & ~SYS_CWD_TMP, path, len)
				     : -ENOMEM;
		n = n == -ENAMETOOLONG ? -ERANGE : n < 0 ? n : n + 1;
	} else {
		n = !st->bundle ? (a[1] < 2 ? -ERANGE : 2)
				: bnd_path_of(st->bundle, st->cwd, path, len);
	}
	if (n < 0)
		return n;
	return sys_put(st, a[0], path, (size_t)n) ? -EFAULT : n;
}

/* a new hard link at path to the file at old (the name itself, or with AT_SYMLINK_FOLLOW where
 * it leads): in /tmp; the bundle is read-only (EROFS), and without files, EACCES */
static long link_at(struct sys_state *st, uint64_t olddir, uint64_t old, uint64_t dirfd,
		    uint64_t path, uint64_t flags)
{
	struct sys_tmp_at from, to;
	if (flags & ~(uint64_t)(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH))
		return -EINVAL;
	if (flags & AT_EMPTY_PATH)
		return -ENOENT; /* a descriptor's file: for the privileged (CAP_DAC_READ_SEARCH) */
	long rc = sys_tmp_path(st, olddir, old,
			       flags & AT_SYMLINK_FOLLOW ? SYS_TMP_FOLLOW : SYS_TMP_ENTRY, &from);
	if (!rc)
		rc = sys_tmp_path(st, dirfd, path, SYS_TMP_ENTRY, &to);
	if (rc || from.in || to.in)
		return rc ? rc : sys_tmp_link(st, &from, &to);
	return st->bundle ? -EROFS : -EACCES;
}

/* a symbolic link at path to target (read first, as Linux: "" is ENOENT): made in /tmp */
static long symlink_at(struct sys_state *st, uint64_t target, uint64_t dirfd, uint64_t path)
{
	char to[BND_PATH_MAX];
	long rc = sys_fs_get_path(st, target, to);
	if (rc)
		return rc;
	if (!to[0])
		return -ENOENT;
	struct sys_tmp_at tmp;
	rc = sys_tmp_path(st, dirfd, path, SYS_TMP_ENTRY, &tmp);
	if (rc || tmp.in)
		return rc ? rc : sys_tmp_symlink(st, &tmp, to);
	return st->bundle ? -EROFS : -EACCES;
}

static long sys_symlink(struct sys_state *st, const uint64_t a[6])
{
	return symlink_at(st, a[0], (uint64_t)(int64_t)AT_FDCWD, a[1]);
}

static long sys_symlinkat(struct sys_state *st, const uint64_t a[6])
{
	return symlink_at(st, a[0], a[1], a[2]);
}

static long sys_link(struct sys_state *st, const uint64_t a[6])
{
	return link_at(st, (uint64_t)(int64_t)AT_FDCWD, a[0], (uint64_t)(int64_t)AT_FDCWD, a[1], 0);
}

static long sys_linkat(struct sys_state *st, const uint64_t a[6])
{
	return link_at(st, a[0], a[1], a[2], a[3], a[4]);
}

const struct sys_entry sys_fs_path_table[] = {
    /* the made /proc files are there without files too */
    {SYS_readlink, "readlink", sys_readlink, 0, NULL},
    {SYS_readlinkat, "readlinkat", sys_readlinkat, 0, NULL},
    {SYS_access, "access", sys_access, 0, NULL},
    {SYS_faccessat, "faccessat", sys_faccessat, 0, NULL},
    {SYS_faccessat2, "faccessat2", sys_faccessat2, 0, NULL},
    {SYS_chdir, "chdir", sys_chdir, 0, NULL},
    {SYS_fchdir, "fchdir", sys_fchdir, 0, NULL},
    {SYS_getcwd, "getcwd", sys_getcwd, 0, NULL},
    /* mkdir, unlink, rename, truncate and the like: fs_tmp_call.c (the bundle's EROFS) */
    {SYS_symlink, "symlink", sys_symlink, 0, NULL},
    {SYS_symlinkat, "symlinkat", sys_symlinkat, 0, NULL},
    {SYS_link, "link", sys_link, 0, NULL},
    {SYS_linkat, "linkat", sys_linkat, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};
