/* /proc/self/fd/N and /proc/self/fdinfo/N: what a descriptor is, as a link's text, opened again
 * through the link, and its position and flags. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "fd/fd.h"
#include "fs/fs.h"
#include "fs/fs_tmp.h"

/* the anonymous kinds' names, as Linux's anon_inode files give them */
static const char *const anon[SYS_KINDS] = {
    [SYS_KIND_EVENT] = "anon_inode:[eventfd]",
    [SYS_KIND_TIMER] = "anon_inode:[timerfd]",
    [SYS_KIND_EPOLL] = "anon_inode:[eventpoll]",
};

long sys_procfs_fd_link(struct sys_state *st, uint64_t fd, char *buf, size_t cap)
{
	struct sys_obj *o = sys_fd_obj(st, fd);
	struct stat s;
	long n;
	if (!o)
		return -ENOENT;
	switch (o->kind) {
	case SYS_KIND_FILE:
		return bnd_path_of(st->bundle, o->id, buf, cap);
	case SYS_KIND_TMP:
	case SYS_KIND_FIFO:
		n = sys_tmp_path_of(st, o->id, buf, cap);
		if (n == -ENOENT) /* unlinked while open */
			n = snprintf(buf, cap, "/tmp/%s (deleted)", st->tmp->n[o->id].name);
		return n;
	case SYS_KIND_DEV:
		return snprintf(buf, cap, "%s", sys_dev_path((int)o->id));
	case SYS_KIND_PROC:
		sys_procfs_path(o, buf, cap);
		return (long)strlen(buf);
	case SYS_KIND_PIPE:
	case SYS_KIND_STD: /* the request and the outputs are pipes, as far as it can tell */
		sys_fd_stat(st, fd, &s);
		return snprintf(buf, cap, "pipe:[%" PRIu64 "]", (uint64_t)s.st_ino);
	default:
		return snprintf(buf, cap, "%s",
				o->kind < SYS_KINDS && anon[o->kind] ? anon[o->kind]
								     : "anon_inode:[ember]");
	}
}

/* a new descriptor naming o too (what a pipe's end opened through its link is here) */
static long share(struct sys_state *st, struct sys_obj *o, int flags)
{
	long nfd = sys_fd_lowest(st, 0);
	if (nfd < 0)
		return nfd;
	sys_fd_set(st, (uint64_t)nfd, o, (flags & O_CLOEXEC) != 0);
	return nfd;
}

/* a new object of o's kind on the same file, at its start */
static long again(struct sys_state *st, const struct sys_obj *o, uint32_t oflags, int flags)
{
	if (sys_fd_lowest(st, 0) < 0)
		return sys_fd_lowest(st, 0);
	struct sys_obj *n = sys_obj_new(st, (enum sys_kind)o->kind, oflags);
	n->id = o->id;
	return sys_fd_open(st, n, (flags & O_CLOEXEC) != 0);
}

long sys_procfs_fd_reopen(struct sys_state *st, uint64_t fd, int flags)
{
	struct sys_obj *o = sys_fd_obj(st, fd);
	int acc = flags & O_ACCMODE;
	struct stat s;
	if (!o)
		return -ENOENT;
	if (acc == O_ACCMODE)
		return -EINVAL;
	sys_fd_stat(st, fd, &s);
	if ((flags & O_DIRECTORY) && !S_ISDIR(s.st_mode))
		return -ENOTDIR;
	if (S_ISDIR(s.st_mode) && (acc != O_RDONLY || (flags & O_TRUNC)))
		return -EISDIR;
	switch (o->kind) {
	case SYS_KIND_FILE:
		return acc != O_RDONLY ? -EROFS : again(st, o, O_RDONLY, flags);
	case SYS_KIND_PROC:
		return acc != O_RDONLY ? -EACCES : again(st, o, O_RDONLY, flags);
	case SYS_KIND_TMP: {
		/* as Linux: a link (an O_PATH|O_NOFOLLOW descriptor's) is not opened through
		 * its descriptor, and the file's mode bits hold as at open (the guest owns it) */
		unsigned want =
		    (acc != O_WRONLY ? 4 : 0) | (acc != O_RDONLY || (flags & O_TRUNC) ? 2 : 0);
		if (S_ISLNK(s.st_mode))
			return -ELOOP;
		if ((((unsigned)s.st_mode >> 6) & want) != want)
			return -EACCES;
		if (S_ISFIFO(s.st_mode)) /* an O_PATH descriptor of a named pipe: its pipe */
			return sys_tmp_fifo_open(st, o->id, flags);
		if ((flags & O_TRUNC) && S_ISREG(s.st_mode)) /* O_RDONLY too, as Linux */
			sys_tmp_resize(st, o->id, 0);
		return again(st, o, (uint32_t)flags & (O_ACCMODE | O_APPEND), flags);
	}
	case SYS_KIND_FIFO: { /* opened again as Linux opens its node: a new reader or writer */
		unsigned want = (acc != O_WRONLY ? 4 : 0) | (acc != O_RDONLY ? 2 : 0);
		if ((((unsigned)s.st_mode >> 6) & want) != want)
			return -EACCES;
		return sys_tmp_fifo_open(st, o->id, flags);
	}
	case SYS_KIND_PIPE: { /* the end asked for, while it is open */
		int reader = (o->flags & O_ACCMODE) == O_RDONLY;
		struct sys_obj *p = o->id ? &st->obj[o->id - 1] : NULL;
		struct sys_obj *want = acc == O_RDONLY	 ? (reader ? o : p)
				       : acc == O_WRONLY ? (reader ? p : o)
							 : NULL;
		if (acc == O_RDWR)
			return -EACCES; /* one object per end: not both at once */
		return want ? share(st, want, flags) : -ENXIO;
	}
	default: /* the same object, when it is open for what is asked */
		if (acc != O_RDONLY && (o->flags & O_ACCMODE) != (uint32_t)acc &&
		    (o->flags & O_ACCMODE) != O_RDWR)
			return -EACCES;
		return share(st, o, flags);
	}
}

size_t sys_procfs_fd_info(struct sys_state *st, uint64_t fd, char *buf, size_t cap)
{
	struct sys_obj *o = sys_fd_obj(st, fd);
	struct stat s;
	if (!o)
		return 0;
	if (o->kind == SYS_KIND_FILE)
		sys_fs_file(st, fd); /* its position taken back from the in-guest runtime */
	sys_fd_stat(st, fd, &s);
	uint32_t flags = o->flags | (st->fd[fd].cloexec ? O_CLOEXEC : 0);
	uint64_t pos =
	    o->kind == SYS_KIND_FILE || o->kind == SYS_KIND_TMP || o->kind == SYS_KIND_PROC ? o->pos
											    : 0;
	int n =
	    snprintf(buf, cap, "pos:\t%" PRIu64 "\nflags:\t0%o\nmnt_id:\t%d\nino:\t%" PRIu64 "\n",
		     pos, flags, 15, (uint64_t)s.st_ino);
	return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}
