/* The in-guest runtime's file reads: the bundle's files the host published a read-only window
 * of (EMBER_RT_FILES) are read, sought, read at offsets and stat'd here; the rest goes to the
 * host; so are stat and statx of Ember's own descriptors (fds 0 to 4). */
#include <asm/unistd.h>

#include "rt.h"

#define EINVAL	      22
#define EFAULT	      14
#define SEEK_SET      0
#define SEEK_CUR      1
#define SEEK_END      2
#define POS_MAX	      0x7fffffffffffffffULL
#define ENOTTY	      25
#define AT_EMPTY_PATH 0x1000
#define AT_FDCWD      (-100)
/* statx's flags (AT_SYMLINK_NOFOLLOW, AT_NO_AUTOMOUNT, AT_EMPTY_PATH, the two sync types) and
 * masks, as fs_stat.c checks them */
#define STATX_SYNC_TYPE	  0x6000
#define STATX_FLAGS	  (0x100 | 0x800 | AT_EMPTY_PATH | STATX_SYNC_TYPE)
#define STATX_RESERVED	  0x80000000U
#define STATX_BASIC_STATS 0x7ffU
#define STATX_MNT_ID	  0x1000U

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

/* up to n bytes at pos: what is left of the file; a bad buffer for them writes nothing
 * (-EFAULT), as the host checks all of it first (sys_fs_read) */
static long copy_at(volatile struct ember_rt_file *f, uint8_t *dst, uint64_t n, uint64_t pos)
{
	uint64_t size = f->size, left = pos < size ? size - pos : 0, k = n < left ? n : left;
	if (rt_usable((uint64_t)dst, k, 1))
		return -EFAULT;
	memcpy(dst, (const uint8_t *)f->addr + pos, k);
	return (long)k;
}

long rt_file_read(long fd, long buf, long n, long a3, long a4, long a5)
{
	volatile struct ember_rt_file *f = file_of(fd);
	if (!f || n < 0)
		return RT_FORWARD;
	long k = copy_at(f, (uint8_t *)buf, (uint64_t)n, f->pos);
	if (k > 0)
		f->pos += (uint64_t)k;
	return k;
}

long rt_file_pread(long fd, long buf, long n, long off, long a4, long a5)
{
	volatile struct ember_rt_file *f = file_of(fd);
	if (!f || n < 0 || off < 0)
		return RT_FORWARD;
	return copy_at(f, (uint8_t *)buf, (uint64_t)n, (uint64_t)off);
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
	for (long i = 0; i < cnt; i++) { /* a bad piece ends it, as the host's file_read */
		long k = copy_at(f, (uint8_t *)v[i].base, v[i].len, f->pos);
		if (k < 0)
			return total ? (long)total : k;
		f->pos += (uint64_t)k;
		total += (uint64_t)k;
		if ((uint64_t)k < v[i].len)
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

/* the stat the host gives of fd: a bundle's file's (sys_fs_stat_of: its owner root, one link)
 * or one of Ember's own descriptors' (sys_fd_stat: the guest's uid, device and inode 0); 0 when
 * the host is to answer */
static int stat_of(long fd, struct kstat *s)
{
	volatile struct ember_rt_file *f = file_of(fd);
	uint32_t mode;
	uint64_t size;
	memset(s, 0, sizeof(*s));
	s->nlink = 1;
	s->blksize = 4096;
	if (!f) {
		if (!rt_std_stat(fd, &mode, &size))
			return 0;
		s->mode = mode;
		s->size = (int64_t)size;
		s->uid = s->gid = EMBER_GUEST_UID;
		return 1;
	}
	s->dev = EMBER_RT_FILE_DEV;
	s->ino = f->ino;
	s->mode = f->mode;
	s->size = (int64_t)f->size;
	s->blocks = (int64_t)((f->size + 511) / 512);
	s->atime = s->mtime = s->ctime = f->mtime_sec;
	s->atime_nsec = s->mtime_nsec = s->ctime_nsec = f->mtime_nsec;
	return 1;
}

/* path is "" in the program's memory (a zero byte in page 0 or in the runtime's area is a bad
 * pointer, the host's to refuse); a bad one faults: EFAULT */
static int empty_path(long path)
{
	return rt_program_range((uint64_t)path, 1) && !*(const volatile char *)path;
}

static long put_stat(long fd, long buf)
{
	struct kstat s;
	if (!stat_of(fd, &s))
		return RT_FORWARD;
	/* a bad buffer writes nothing, as the host's check of all of it first */
	if (rt_usable((uint64_t)buf, sizeof(s), 1))
		return -EFAULT;
	memcpy((void *)buf, &s, sizeof(s));
	return 0;
}

long rt_file_fstat(long fd, long buf, long a2, long a3, long a4, long a5)
{
	return put_stat(fd, buf);
}

/* the descriptor itself: an empty path with AT_EMPTY_PATH (glibc's fstat) */
long rt_file_fstatat(long fd, long path, long buf, long flags, long a4, long a5)
{
	if ((int)fd == AT_FDCWD || !(flags & AT_EMPTY_PATH) || !empty_path(path))
		return RT_FORWARD;
	return put_stat(fd, buf);
}

/* Linux's struct statx */
struct kstatx_time {
	int64_t sec;
	uint32_t nsec;
	int32_t reserved;
};
struct kstatx {
	uint32_t mask, blksize;
	uint64_t attributes;
	uint32_t nlink, uid, gid;
	uint16_t mode, pad0;
	uint64_t ino, size, blocks, attributes_mask;
	struct kstatx_time atime, btime, ctime, mtime;
	uint32_t rdev_major, rdev_minor, dev_major, dev_minor;
	uint64_t mnt_id;
	uint64_t spare[13]; /* dio_mem_align, dio_offset_align and what is still spare */
};
_Static_assert(sizeof(struct kstatx) == 256, "struct statx");

/* statx of the descriptor itself (libuv's fstat), as the host builds it from the stat
 * (fs_stat.c); flags Linux refuses, or any path, are the host's to answer */
long rt_file_statx(long dirfd, long path, long flags, long mask, long buf, long a5)
{
	struct kstat s;
	if ((int)dirfd == AT_FDCWD || (flags & ~STATX_FLAGS) ||
	    (flags & STATX_SYNC_TYPE) == STATX_SYNC_TYPE || ((uint32_t)mask & STATX_RESERVED) ||
	    !(flags & AT_EMPTY_PATH) || !empty_path(path) || !stat_of(dirfd, &s))
		return RT_FORWARD;
	if (rt_usable((uint64_t)buf, sizeof(struct kstatx), 1))
		return -EFAULT;
	struct kstatx x;
	memset(&x, 0, sizeof(x));
	x.mask = STATX_BASIC_STATS | STATX_MNT_ID;
	x.mnt_id = s.dev + 1; /* a mount per file system, as st_dev tells them apart */
	x.blksize = (uint32_t)s.blksize;
	x.nlink = (uint32_t)s.nlink;
	x.uid = s.uid;
	x.gid = s.gid;
	x.mode = (uint16_t)s.mode;
	x.ino = s.ino;
	x.size = (uint64_t)s.size;
	x.blocks = (uint64_t)s.blocks;
	x.mtime = (struct kstatx_time){s.mtime, (uint32_t)s.mtime_nsec, 0};
	x.atime = x.ctime = x.mtime;
	x.dev_major = (uint32_t)(s.dev >> 8);
	x.dev_minor = (uint32_t)(s.dev & 0xff);
	memcpy((void *)buf, &x, sizeof(x));
	return 0;
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
