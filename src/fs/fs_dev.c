/* The devices every program may open, with files or without: /dev/null, /dev/zero, /dev/full,
 * /dev/random and /dev/urandom, read and written as on Linux; none is the host's. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "fd/fd.h"
#include "fs/fs.h"

enum dev_read { DEV_EOF, DEV_ZEROS, DEV_RANDOM };

static const struct {
	const char *path;
	unsigned major, minor;
	enum dev_read read;
	int full; /* a write: ENOSPC (/dev/full); else every byte taken */
} devs[] = {
    {"/dev/null", 1, 3, DEV_EOF, 0},	   {"/dev/zero", 1, 5, DEV_ZEROS, 0},
    {"/dev/full", 1, 7, DEV_ZEROS, 1},	   {"/dev/random", 1, 8, DEV_RANDOM, 0},
    {"/dev/urandom", 1, 9, DEV_RANDOM, 0},
};
#define NDEVS (sizeof(devs) / sizeof(devs[0]))

int sys_dev_at(struct sys_state *st, uint64_t addr)
{
	char path[16];
	for (size_t i = 0; i < sizeof(path); i++) {
		const char *c = sys_user(st, addr + i, 1, PROT_READ);
		if (!c)
			return -1;
		if (!(path[i] = *c))
			break;
		if (i == sizeof(path) - 1)
			return -1;
	}
	return sys_dev_find(path);
}

int sys_dev_find(const char *path)
{
	for (size_t i = 0; i < NDEVS; i++)
		if (!strcmp(path, devs[i].path))
			return (int)i;
	return -1;
}

int sys_dev_count(void)
{
	return (int)NDEVS;
}

const char *sys_dev_path(int i)
{
	return i >= 0 && (size_t)i < NDEVS ? devs[i].path : "/dev/null";
}

void sys_dev_stat(int i, struct stat *s)
{
	memset(s, 0, sizeof(*s));
	s->st_dev = 0x0005; /* devtmpfs's, as far as a program can tell */
	s->st_ino = (ino_t)i + 1;
	s->st_mode = S_IFCHR | 0666;
	s->st_nlink = 1;
	s->st_rdev = makedev(devs[i].major, devs[i].minor);
	s->st_blksize = 4096;
}

long sys_dev_open(struct sys_state *st, int i, int flags)
{
	if ((flags & O_ACCMODE) == O_ACCMODE)
		return -EINVAL;
	if ((flags & O_CREAT) && (flags & O_EXCL))
		return -EEXIST;
	if (flags & O_DIRECTORY)
		return -ENOTDIR;
	if (sys_fd_lowest(st, 0) < 0)
		return -EMFILE;
	struct sys_obj *o =
	    sys_obj_new(st, SYS_KIND_DEV, (uint32_t)flags & (O_ACCMODE | O_NONBLOCK));
	o->id = (uint32_t)i;
	return sys_fd_open(st, o, (flags & O_CLOEXEC) != 0);
}

/* fd is /dev/zero, whose mapping is anonymous memory */
int sys_dev_zero(struct sys_state *st, uint64_t fd)
{
	struct sys_obj *o = sys_fd_obj(st, fd);
	return o && o->kind == SYS_KIND_DEV && devs[o->id].read == DEV_ZEROS && !devs[o->id].full;
}

/* Linux's checks of a mapping of it: a readable descriptor, a writable one to share writes */
long sys_dev_zero_check(struct sys_state *st, uint64_t fd, int prot, int flags)
{
	uint32_t mode = sys_fd_obj(st, fd)->flags & O_ACCMODE;
	if (mode == O_WRONLY)
		return -EACCES;
	if ((flags & MAP_TYPE) != MAP_PRIVATE && (prot & PROT_WRITE) && mode != O_RDWR)
		return -EACCES;
	return 0;
}

/* len bytes of the device into the guest at addr */
static long dev_read_at(struct sys_state *st, struct sys_obj *o, uint64_t addr, uint64_t len,
			uint64_t pos)
{
	(void)pos;
	if ((o->flags & O_ACCMODE) == O_WRONLY)
		return -EBADF;
	if (devs[o->id].read == DEV_EOF || !len)
		return 0;
	len = len > (1u << 20) ? (1u << 20) : len; /* as Linux, a read may be short */
	uint8_t *dst = sys_user(st, addr, len, PROT_WRITE);
	if (!dst)
		return -EFAULT;
	if (devs[o->id].read == DEV_ZEROS)
		memset(dst, 0, len);
	else if (getrandom(dst, len, 0) != (ssize_t)len)
		return -EIO;
	return (long)len;
}

/* pread and pwrite: the devices ignore the offset, as Linux's do */
long sys_dev_pread(struct sys_state *st, struct sys_obj *o, uint64_t addr, uint64_t len,
		   int64_t pos)
{
	return pos < 0 ? -EINVAL : dev_read_at(st, o, addr, len, (uint64_t)pos);
}

long sys_dev_pwrite(struct sys_state *st, struct sys_obj *o, uint64_t addr, uint64_t len,
		    int64_t pos)
{
	if ((o->flags & O_ACCMODE) == O_RDONLY)
		return -EBADF;
	if (pos < 0)
		return -EINVAL;
	if (devs[o->id].full)
		return -ENOSPC;
	return !len || sys_user(st, addr, len, PROT_READ) ? (long)len : -EFAULT;
}

static long dev_read(struct sys_state *st, uint64_t fd, struct sys_obj *o, const struct sys_iov *v,
		     int n)
{
	(void)fd;
	return sys_iov_at(st, o, v, n, dev_read_at, NULL);
}

static long dev_write(struct sys_state *st, uint64_t fd, struct sys_obj *o, const struct sys_iov *v,
		      int n)
{
	(void)fd;
	if ((o->flags & O_ACCMODE) == O_RDONLY)
		return -EBADF;
	if (devs[o->id].full)
		return -ENOSPC;
	uint64_t total = sys_iov_total(v, n);
	/* taken whole, as /dev/null takes it, once the pieces are the guest's to give */
	return sys_iov_ok(st, v, n, 0, total, 0) ? (long)total : -EFAULT;
}

static uint32_t dev_poll(struct sys_state *st, struct sys_obj *o, uint64_t *next)
{
	(void)st, (void)o, (void)next;
	return EPOLLIN | EPOLLRDNORM | EPOLLOUT | EPOLLWRNORM;
}

static void dev_stat(struct sys_state *st, struct sys_obj *o, struct stat *s)
{
	(void)st;
	sys_dev_stat((int)o->id, s);
}

int sys_dev_valid(const struct sys_obj *o)
{
	return o->id < NDEVS;
}

const struct sys_fd_ops sys_dev_ops = {
    .read = dev_read,
    .write = dev_write,
    .poll = dev_poll,
    .stat = dev_stat,
};
