/* What an execve names, found and read: the file of the function's, of /tmp's or open on a
 * descriptor. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fd/fd.h"
#include "fs/fs.h"
#include "fs/fs_tmp.h"
#include "func/exec_file.h"

/* a file of /tmp's: its bytes, its absolute path (name within parent) when it has one */
static int tmp_src(struct sys_state *st, uint32_t node, struct exec_src *src)
{
	const struct sys_tmp_node *n = &st->tmp->n[node];
	if (!S_ISREG(n->mode) || !(n->mode & 0111))
		return -EACCES;
	src->data = n->data;
	src->size = n->size;
	src->from_tmp = 1;
	char dir[BND_PATH_MAX];
	long dl = n->parent != SYS_TMP_GONE ? sys_tmp_path_of(st, n->parent, dir, sizeof(dir)) : -1;
	size_t nl = strnlen(n->name, sizeof(n->name));
	if (dl >= 0 && (size_t)dl + 1 + nl < sizeof(src->abs)) {
		memcpy(src->abs, dir, (size_t)dl);
		src->abs[dl] = '/';
		memcpy(src->abs + dl + 1, n->name, nl);
		src->abs[dl + 1 + nl] = 0;
	}
	return 0;
}

/* a file of the function's */
static int bundle_src(const struct bnd *b, uint32_t node, struct exec_src *src)
{
	const struct bnd_node *n = &b->nodes[node];
	if (!bnd_is(b, node, S_IFREG) || !(n->mode & 0111))
		return -EACCES;
	src->data = b->data + n->data_off;
	src->size = n->size;
	src->node = node;
	return 0;
}

/* AT_EMPTY_PATH: the file open on fd, named /dev/fd/N as Linux names it */
static int open_src(struct sys_state *st, int fd, struct exec_src *src)
{
	struct sys_obj *o = fd >= 0 ? sys_fd_obj(st, (uint64_t)fd) : NULL;
	if (!o)
		return -EBADF;
	snprintf(src->name, sizeof(src->name), "/dev/fd/%d", fd);
	src->cloexec = st->fd[fd].cloexec != 0;
	size_t len;
	const uint8_t *exe = sys_procfs_exe(st, (uint64_t)fd, &len);
	if (exe) { /* /proc/self/exe opened: the running program */
		src->data = exe;
		src->size = len;
		src->from_tmp = 1;
		src->exe = st->exe_path;
		return 0;
	}
	if (o->kind == SYS_KIND_TMP)
		return tmp_src(st, o->id, src);
	if (o->kind == SYS_KIND_FILE && st->bundle)
		return bundle_src(st->bundle, o->id, src);
	return -EACCES; /* a pipe, a socket, a device: no file to run */
}

/* where a relative path from dirfd starts in the function's files: 0 with *dir, or -errno */
static int bundle_dir(struct sys_state *st, const struct sys_exec_at *at, uint32_t *dir)
{
	if (at->path[0] == '/') {
		*dir = 0;
		return 0;
	}
	if (at->dirfd == AT_FDCWD) {
		*dir = st->cwd & ~SYS_CWD_TMP;
		return st->cwd & SYS_CWD_TMP ? -ENOENT : 0;
	}
	struct sys_obj *o = sys_fd_obj(st, (uint64_t)(int64_t)at->dirfd);
	if (!o)
		return -EBADF;
	if (o->kind != SYS_KIND_FILE || !st->bundle || !bnd_is(st->bundle, o->id, S_IFDIR))
		return -ENOTDIR;
	*dir = o->id;
	return 0;
}

int exec_find(struct sys_state *st, const struct sys_exec_at *at, struct exec_src *src)
{
	memset(src, 0, sizeof(*src));
	if (!at->path[0])
		return open_src(st, at->dirfd, src);
	if (at->path[0] == '/' || at->dirfd == AT_FDCWD)
		snprintf(src->name, sizeof(src->name), "%s", at->path);
	else { /* as Linux: a close-on-exec dirfd leaves a script no path to run it by */
		snprintf(src->name, sizeof(src->name), "/dev/fd/%d/%s", at->dirfd, at->path);
		src->cloexec = at->dirfd >= 0 && at->dirfd < SYS_FDS && st->fd[at->dirfd].cloexec;
	}
	int follow = !(at->flags & AT_SYMLINK_NOFOLLOW);
	struct sys_tmp_at w;
	long rc = sys_tmp_walk(st, (uint64_t)(int64_t)at->dirfd, at->path,
			       follow ? SYS_TMP_FOLLOW : SYS_TMP_NOFOLLOW, &w);
	if (rc)
		return (int)rc;
	if (w.in && !w.found)
		return -ENOENT;
	if (w.in && S_ISLNK(st->tmp->n[w.node].mode))
		return -ELOOP; /* AT_SYMLINK_NOFOLLOW's final link */
	if (w.in)
		return w.trailing && !S_ISDIR(st->tmp->n[w.node].mode) ? -ENOTDIR
								       : tmp_src(st, w.node, src);
	const struct bnd *b = st->bundle;
	if (!b)
		return -ENOENT;
	uint32_t dir = 0, node;
	const char *path = w.outside[0] ? w.outside : at->path;
	if (!w.outside[0] && (rc = bundle_dir(st, at, &dir)))
		return (int)rc;
	if ((rc = bnd_lookup(b, dir, path, follow, &node, NULL)))
		return (int)rc;
	if (!follow && bnd_is(b, node, S_IFLNK))
		return -ELOOP;
	return bundle_src(b, node, src);
}

static int spacetab(char c)
{
	return c == ' ' || c == '\t';
}

/* a space, a tab or the end of the string */
static int terminator(char c)
{
	return spacetab(c) || !c;
}

int exec_shebang(const struct exec_src *src, char *const *argv, char *interp, char **arg,
		 char ***out)
{
	/* the buffer Linux reads: the file's first bytes, zeros past its end */
	char buf[EXEC_SHEBANG_MAX];
	memset(buf, 0, sizeof(buf));
	memcpy(buf, src->data, src->size < sizeof(buf) ? src->size : sizeof(buf));
	char *end = memchr(buf, '\n', sizeof(buf)), *last = buf + sizeof(buf) - 1, *p;
	if (!end) {
		/* no line's end: the interpreter's name must end inside what was read */
		for (p = buf + 2; p < last && spacetab(*p); p++)
			;
		if (p >= last)
			return -ENOEXEC;
		while (p < last && !terminator(*p))
			p++;
		if (p >= last)
			return -ENOEXEC;
		end = last;
	}
	while (end > buf + 2 && spacetab(end[-1]))
		end--;
	*end = 0;
	char *name = buf + 2;
	while (name < end && spacetab(*name))
		name++;
	if (name >= end || !*name)
		return -ENOEXEC;
	char *sep = name;
	while (sep < end && !terminator(*sep))
		sep++;
	char *a = NULL;
	if (sep < end && *sep) { /* the optional argument: the rest, a NUL ends it too */
		*sep++ = 0;
		while (sep < end && spacetab(*sep))
			sep++;
		if (sep < end && *sep)
			a = sep;
	} else
		*sep = 0;
	snprintf(interp, EXEC_SHEBANG_MAX, "%s", name);
	*arg = a ? strdup(a) : NULL;
	size_t argc = 0;
	while (argv[argc])
		argc++;
	/* the vector, then the script's name, in one block (src is the caller's, short-lived) */
	size_t nl = strlen(src->name) + 1;
	char **v = malloc((argc + 4) * sizeof(*v) + nl);
	if (!v || (a && !*arg))
		return free(v), free(*arg), *arg = NULL, -ENOMEM;
	char *script = memcpy((char *)(v + argc + 4), src->name, nl);
	size_t m = 0;
	v[m++] = interp;
	if (*arg)
		v[m++] = *arg;
	v[m++] = script;
	for (size_t i = 1; i < argc; i++)
		v[m++] = argv[i];
	v[m] = NULL;
	*out = v;
	return 0;
}
