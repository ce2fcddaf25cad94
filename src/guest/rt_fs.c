/* The in-guest runtime's file reads: the bundle's files the host published a read-only window
 * of (EMBER_RT_FILES) are read, sought, read at offsets and stat'd here; the rest goes to the
 * host. */
#include <asm/unistd.h>

#include "rt.h"

#define EINVAL	      22
#define SEEK_SET      0
#define SEEK_CUR      1
#define SEEK_END      2
#define POS_MAX	      0x7fffffffffffffffULL
#define ENOTTY	      25
#define AT_EMPTY_PATH 0x1000

/* Linux's struct stat on x86-64, as the host fills it for a bundle's file (fs_stat.c) */
struct kstat {
	uint64_t dev, ino, nlink;
	uint32_t mode, uid, gid, pad0;
	uint64_t rdev;
	int64_t size, blksize, blocks;
	int64_t atime, atime_nsec, mtime, mtime_nsec, ctime, ctime_nsec;
	int64_t unused[3];
};
_Static_assert(sizeof(struct kstat) == 144, "struct stat of x86-64");

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

/* the stat the host gives of the file (sys_fs_stat_of): its owner root, one link */
static long put_stat(volatile struct ember_rt_file *f, long buf)
{
	struct kstat s;
	memset(&s, 0, sizeof(s));
	s.dev = EMBER_RT_FILE_DEV;
	s.ino = f->ino;
	s.nlink = 1;
	s.mode = f->mode;
	s.size = (int64_t)f->size;
	s.blksize = 4096;
	s.blocks = (int64_t)((f->size + 511) / 512);
	s.atime = s.mtime = s.ctime = f->mtime_sec;
	s.atime_nsec = s.mtime_nsec = s.ctime_nsec = f->mtime_nsec;
	memcpy((void *)buf, &s, sizeof(s)); /* a bad buffer faults: EFAULT (rt_efault) */
	return 0;
}

long rt_file_fstat(long fd, long buf, long a2, long a3, long a4, long a5)
{
	volatile struct ember_rt_file *f = file_of(fd);
	return f ? put_stat(f, buf) : RT_FORWARD;
}

/* the descriptor itself: an empty path with AT_EMPTY_PATH (glibc's fstat) */
long rt_file_fstatat(long fd, long path, long buf, long flags, long a4, long a5)
{
	volatile struct ember_rt_file *f = file_of(fd);
	if (!f || !(flags & AT_EMPTY_PATH) || *(const volatile char *)path)
		return RT_FORWARD;
	return put_stat(f, buf);
}

int rt_file_is(long fd)
{
	return file_of(fd) != 0;
}

/* a file the runtime serves: its entry cleared (its calls go to the host from now on, which
 * answers EBADF) and the close left for the host to make at the next call it serves */
long rt_file_close(long fd, long a1, long a2, long a3, long a4, long a5)
{
	volatile struct ember_rt_file *f = file_of(fd);
	if (!f)
		return RT_FORWARD;
	f->addr = f->size = f->pos = 0;
	__atomic_fetch_or(&RT_CTL->closed, 1ULL << (fd - EMBER_RT_FD0), __ATOMIC_RELEASE);
	return 0;
}
