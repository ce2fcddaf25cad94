/* The in-guest runtime's file reads: the bundle's files the host published a read-only window
 * of (EMBER_RT_FILES) are read, sought and read at offsets here; the rest goes to the host. */
#include <asm/unistd.h>

#include "rt.h"

#define EINVAL	 22
#define SEEK_SET 0
#define SEEK_CUR 1
#define SEEK_END 2
#define POS_MAX	 0x7fffffffffffffffULL

struct iov {
	uint64_t base, len;
};

/* the file's entry if fd is one the runtime reads, else NULL */
static volatile struct ember_rt_file *file_of(long fd)
{
	if (fd < EMBER_RT_FD0 || fd >= EMBER_RT_FD0 + EMBER_RT_NFILES)
		return 0;
	volatile struct ember_rt_file *f =
	    (volatile struct ember_rt_file *)EMBER_RT_FILES + (fd - EMBER_RT_FD0);
	return f->addr ? f : 0;
}

/* up to n bytes at pos: what is left of the file */
static uint64_t copy_at(volatile struct ember_rt_file *f, uint8_t *dst, uint64_t n, uint64_t pos)
{
	uint64_t size = f->size, left = pos < size ? size - pos : 0, k = n < left ? n : left;
	memcpy(dst, (const uint8_t *)f->addr + pos, k);
	return k;
}

long rt_file_read(long fd, long buf, long n, long a3, long a4, long a5)
{
	volatile struct ember_rt_file *f = file_of(fd);
	if (!f || n < 0)
		return RT_FORWARD;
	uint64_t k = copy_at(f, (uint8_t *)buf, (uint64_t)n, f->pos);
	f->pos += k;
	return (long)k;
}

long rt_file_pread(long fd, long buf, long n, long off, long a4, long a5)
{
	volatile struct ember_rt_file *f = file_of(fd);
	if (!f || n < 0 || off < 0)
		return RT_FORWARD;
	return (long)copy_at(f, (uint8_t *)buf, (uint64_t)n, (uint64_t)off);
}

long rt_file_readv(long fd, long iov, long cnt, long a3, long a4, long a5)
{
	volatile struct ember_rt_file *f = file_of(fd);
	if (!f || cnt < 0 || cnt > 1024)
		return RT_FORWARD;
	const struct iov *v = (const struct iov *)iov;
	uint64_t total = 0;
	for (long i = 0; i < cnt; i++) /* Linux's check first: the lengths' sum fits a ssize_t */
		if (v[i].len > POS_MAX - total)
			return -EINVAL;
		else
			total += v[i].len;
	total = 0;
	for (long i = 0; i < cnt; i++) {
		uint64_t k = copy_at(f, (uint8_t *)v[i].base, v[i].len, f->pos);
		f->pos += k;
		total += k;
		if (k < v[i].len)
			break;
	}
	return (long)total;
}

long rt_file_lseek(long fd, long off, long whence, long a3, long a4, long a5)
{
	volatile struct ember_rt_file *f = file_of(fd);
	if (!f || (whence != SEEK_SET && whence != SEEK_CUR && whence != SEEK_END))
		return RT_FORWARD;
	uint64_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? f->pos : f->size;
	if (base > POS_MAX || (off > 0 && (uint64_t)off > POS_MAX - base) ||
	    (off < 0 && (uint64_t) - (off + 1) + 1 > base))
		return -EINVAL;
	f->pos = base + (uint64_t)off;
	return (long)f->pos;
}
