/* Bytes copied from file to file (copy_file_range), and what a program tells or asks of a
 * file's storage (posix_fadvise, fallocate); preadv and pwritev are fd_io_at.c's. */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <string.h>
#include <sys/syscall.h>

#include "fd/fd.h"
#include "fs/fs.h"
#include "fs/fs_tmp.h"

/* advice a file takes and forgets (its bytes are in memory already); a pipe's: ESPIPE */
static long sys_fadvise64(struct sys_state *st, const uint64_t a[6])
{
	struct sys_obj *o = sys_fd_obj(st, a[0]);
	if (!o)
		return -EBADF;
	if (o->kind != SYS_KIND_TMP && o->kind != SYS_KIND_FILE && o->kind != SYS_KIND_PROC &&
	    o->kind != SYS_KIND_DEV)
		return -ESPIPE;
	return a[3] > POSIX_FADV_NOREUSE || (int64_t)a[2] < 0 ? -EINVAL : 0;
}

/* room for [offset, offset + len) in a /tmp file: it grows to hold it (mode 0, or KEEP_SIZE
 * which only reserves); punching holes and the like: EOPNOTSUPP, as a file system without them */
static long sys_fallocate(struct sys_state *st, const uint64_t a[6])
{
	struct sys_obj *o = sys_fd_obj(st, a[0]);
	int64_t off = (int64_t)a[2], len = (int64_t)a[3];
	if (!o)
		return -EBADF;
	if (off < 0 || len <= 0)
		return -EINVAL;
	if (o->kind == SYS_KIND_FILE || o->kind == SYS_KIND_PROC ||
	    (o->flags & O_ACCMODE) == O_RDONLY)
		return -EBADF;
	if (o->kind != SYS_KIND_TMP)
		return o->kind == SYS_KIND_PIPE || o->kind == SYS_KIND_SOCK ||
			       o->kind == SYS_KIND_FIFO
			   ? -ESPIPE
			   : -ENODEV;
	if (S_ISDIR(st->tmp->n[o->id].mode))
		return -EISDIR;
	if (!S_ISREG(st->tmp->n[o->id].mode)) /* a named pipe's node holds its ring: never sized */
		return S_ISFIFO(st->tmp->n[o->id].mode) ? -ESPIPE : -ENODEV;
	if (a[1] & ~(uint64_t)FALLOC_FL_KEEP_SIZE)
		return -EOPNOTSUPP;
	if (off > INT64_MAX - len)
		return -EFBIG;
	uint64_t end = (uint64_t)(off + len);
	if (a[1] & FALLOC_FL_KEEP_SIZE || end <= st->tmp->n[o->id].size)
		return 0;
	return sys_tmp_resize(st, o->id, end);
}

/* the bytes of a regular file open on o (a /tmp file, or the bundle's), and how many */
static const uint8_t *file_bytes(struct sys_state *st, const struct sys_obj *o, uint64_t *size)
{
	if (o->kind == SYS_KIND_TMP && S_ISREG(st->tmp->n[o->id].mode)) {
		*size = st->tmp->n[o->id].size;
		return st->tmp->n[o->id].data;
	}
	if (o->kind == SYS_KIND_FILE && bnd_is(st->bundle, o->id, S_IFREG)) {
		*size = st->bundle->nodes[o->id].size;
		return st->bundle->data + st->bundle->nodes[o->id].data_off;
	}
	return NULL;
}

/* copy_file_range(in, off_in, out, off_out, len, flags): into a /tmp file; each offset given
 * is used and moved, else the descriptor's position */
static long sys_copy_file_range(struct sys_state *st, const uint64_t a[6])
{
	struct sys_obj *in = sys_fd_obj(st, a[0]), *out = sys_fd_obj(st, a[2]);
	uint64_t in_size, from, to;
	if (!in || !out)
		return -EBADF;
	if (in->kind == SYS_KIND_FILE)
		sys_fs_file(st, a[0]); /* its position taken back from the in-guest runtime */
	if (a[5])
		return -EINVAL;
	if ((in->flags & O_ACCMODE) == O_WRONLY || (out->flags & O_ACCMODE) == O_RDONLY ||
	    out->flags & O_APPEND || out->kind == SYS_KIND_FILE)
		return -EBADF;
	const uint8_t *src = file_bytes(st, in, &in_size);
	if (!src && in->kind == SYS_KIND_TMP && S_ISREG(st->tmp->n[in->id].mode))
		src = (const uint8_t *)""; /* an empty file holds no data yet */
	if (!src || out->kind != SYS_KIND_TMP || !S_ISREG(st->tmp->n[out->id].mode))
		return in->kind == SYS_KIND_TMP || out->kind == SYS_KIND_TMP ? -EINVAL : -EXDEV;
	if ((a[1] && sys_get(st, &from, a[1], sizeof(from))) ||
	    (a[3] && sys_get(st, &to, a[3], sizeof(to))))
		return -EFAULT;
	from = a[1] ? from : in->pos;
	to = a[3] ? to : out->pos;
	if ((int64_t)from < 0 || (int64_t)to < 0)
		return -EINVAL;
	uint64_t len = from < in_size ? in_size - from : 0;
	len = a[4] < len ? a[4] : len;
	if (in == out && from < to + len && to < from + len)
		return -EINVAL; /* overlapping ranges of one file */
	if (len > INT64_MAX - to)
		return -EFBIG;
	uint64_t end = to + len, size = st->tmp->n[out->id].size;
	long rc = len && end > size ? sys_tmp_resize(st, out->id, end) : 0;
	if (rc)
		return rc;
	if (in->kind == SYS_KIND_TMP) /* out's data may have moved, and in may be out */
		src = st->tmp->n[in->id].data;
	else if (len)
		bnd_want(st->bundle, st->bundle->nodes[in->id].data_off + from, len);
	if (len)
		memmove(st->tmp->n[out->id].data + to, src + from, len);
	if ((a[1] && sys_put(st, a[1], &(uint64_t){from + len}, 8)) ||
	    (a[3] && sys_put(st, a[3], &(uint64_t){to + len}, 8)))
		return -EFAULT;
	if (!a[1])
		in->pos = from + len;
	if (!a[1] && in->kind == SYS_KIND_FILE)
		sys_fs_rt_push(st, a[0], in);
	if (!a[3])
		out->pos = to + len;
	return (long)len;
}

const struct sys_entry sys_vec_table[] = {
    {SYS_copy_file_range, "copy_file_range", sys_copy_file_range, 0, NULL},
    {SYS_fadvise64, "fadvise64", sys_fadvise64, 0, NULL},
    {SYS_fallocate, "fallocate", sys_fallocate, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};
