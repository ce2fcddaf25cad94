/* Vector I/O at an offset: preadv, pwritev and their "2" forms, on the kinds that have positions
 * (a bundle file, a made /proc file, a /tmp file); ESPIPE on the others, as Linux's pipes. */
#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>

#include "fd/fd.h"
#include "fs/fs.h"
#include "fs/fs_tmp.h"

/* a bundle file's piece at pos, through the call its descriptor reads with */
static long file_at(struct sys_state *st, struct sys_obj *o, uint64_t addr, uint64_t len,
		    uint64_t pos)
{
	for (uint64_t fd = 0; fd < SYS_FDS; fd++)
		if (sys_fd_obj(st, fd) == o)
			return sys_fs_read(st, fd, addr, len, (int64_t)pos);
	return -EBADF;
}

/* the kind's piece-at-an-offset call for reading or writing, or NULL: not seekable */
static sys_at_fn at_of(const struct sys_obj *o, int writing)
{
	static const struct {
		uint32_t kind;
		sys_at_fn read, write;
	} kinds[] = {
	    {SYS_KIND_FILE, file_at, NULL},
	    {SYS_KIND_PROC, sys_procfs_pread, NULL},
	    {SYS_KIND_TMP, sys_tmp_read_at, sys_tmp_write_at},
	};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (kinds[i].kind == o->kind)
			return writing ? kinds[i].write : kinds[i].read;
	return NULL;
}

static int seekable(const struct sys_obj *o)
{
	return at_of(o, 0) != NULL;
}

/* a[0] fd, a[1] iovec, a[2] count, a[3] offset (-1 in the "2" forms: the position, as readv) */
static long vector_at(struct sys_state *st, const uint64_t a[6], int writing, int two)
{
	struct sys_obj *o = sys_fd_obj(st, a[0]);
	if (!o)
		return -EBADF;
	int64_t off = (int64_t)a[3];
	int here = two && off == -1;
	if (!here && !seekable(o))
		return -ESPIPE; /* before the access mode, as Linux's */
	uint32_t acc = o->flags & O_ACCMODE;
	if (acc == O_ACCMODE || acc == (writing ? O_RDONLY : O_WRONLY))
		return -EBADF;
	if (!here && off < 0)
		return -EINVAL;
	struct sys_iov v[SYS_IOV_MAX];
	uint64_t total;
	long rc = sys_iov_get(st, a[1], a[2], v, &total);
	if (rc)
		return rc;
	if (here) { /* readv or writev, as the kind does them */
		const struct sys_fd_ops *ops = sys_obj_ops(o);
		long (*fn)(struct sys_state *, uint64_t, struct sys_obj *, const struct sys_iov *,
			   int) = writing ? ops->write : ops->read;
		return fn ? fn(st, a[0], o, v, (int)a[2]) : -EINVAL;
	}
	sys_at_fn at = at_of(o, writing);
	if (!at)
		return -EBADF; /* a read-only file: never open for writing */
	/* the pieces at off, the descriptor's own position left where it was */
	uint64_t pos = o->pos, end = o->kind == SYS_KIND_TMP && (o->flags & O_APPEND)
					 ? st->tmp->n[o->id].size
					 : (uint64_t)off;
	o->pos = end;
	rc = sys_iov_at(st, o, v, (int)a[2], at, NULL);
	o->pos = pos;
	return rc;
}

static long sys_preadv(struct sys_state *st, const uint64_t a[6])
{
	return vector_at(st, a, 0, 0);
}

static long sys_pwritev(struct sys_state *st, const uint64_t a[6])
{
	return vector_at(st, a, 1, 0);
}

/* RWF_* flags: none is known here but 0, as a kernel without them */
static long sys_preadv2(struct sys_state *st, const uint64_t a[6])
{
	return a[5] ? -EOPNOTSUPP : vector_at(st, a, 0, 1);
}

static long sys_pwritev2(struct sys_state *st, const uint64_t a[6])
{
	return a[5] ? -EOPNOTSUPP : vector_at(st, a, 1, 1);
}

const struct sys_entry sys_io_at_table[] = {
    {SYS_preadv, "preadv", sys_preadv, 0, NULL},
    {SYS_pwritev, "pwritev", sys_pwritev, 0, NULL},
    {SYS_preadv2, "preadv2", sys_preadv2, 0, NULL},
    {SYS_pwritev2, "pwritev2", sys_pwritev2, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};
