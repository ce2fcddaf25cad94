/* Links in the scratch /tmp: symbolic ones made (symlink, symlinkat) and read (readlink), the
 * lookup that follows them being sys_tmp_path.c's; hard ones (link, linkat): names of a file. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/fs.h"
#include "fs/fs_tmp.h"

long sys_tmp_symlink(struct sys_state *st, const struct sys_tmp_at *at, const char *target)
{
	if (at->found)
		return -EEXIST;
	if (at->trailing)
		return -ENOENT; /* a name ending in '/' asks for a folder */
	long rc = sys_tmp_may(st, at->parent, 3);
	if (rc)
		return rc;
	size_t len = strlen(target);
	long n = sys_tmp_new(st, at->parent, at->name, S_IFLNK | 0777);
	if (n < 0)
		return n;
	if ((rc = sys_tmp_resize(st, (uint32_t)n, len))) { /* counted in the bound as a file */
		sys_tmp_unlink(st, (uint32_t)n);
		return rc;
	}
	memcpy(st->tmp->n[n].data, target, len);
	return 0;
}

long sys_tmp_readlink(struct sys_state *st, uint32_t node, uint64_t buf, uint64_t len)
{
	const struct sys_tmp_node *n = &st->tmp->n[node];
	if (!S_ISLNK(n->mode))
		return -EINVAL;
	uint64_t k = n->size < len ? n->size : len; /* cut short, no NUL: Linux's */
	return sys_put(st, buf, n->data, k) ? -EFAULT : (long)k;
}

long sys_tmp_link(struct sys_state *st, const struct sys_tmp_at *from, const struct sys_tmp_at *to)
{
	if (from->in && !from->found)
		return -ENOENT;
	if (to->in && to->found)
		return -EEXIST;
	if (to->in && to->trailing)
		return -ENOENT;
	if (from->in != to->in)
		return -EXDEV; /* another file system: the function's files, /dev, /proc */
	long rc = sys_tmp_may(st, to->parent, 3);
	if (rc)
		return rc;
	const struct sys_tmp_node *f = &st->tmp->n[from->node];
	if (S_ISDIR(f->mode))
		return -EPERM;
	if (f->parent == SYS_TMP_GONE)
		return -ENOENT; /* removed while open */
	long n = sys_tmp_new(st, to->parent, to->name, f->mode & S_IFMT);
	if (n < 0)
		return n;
	st->tmp->n[n].same = from->node;
	return 0;
}
