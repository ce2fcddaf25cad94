/* The in-guest runtime: serves the common syscalls inside the virtine, forwards the rest. */
#include <asm/unistd.h>

#include "rt.h"

#define EBADF	  9
#define EINVAL	  22
#define ENOTTY	  25
#define GUEST_PID 1
#define GUEST_UID 1000

void *memcpy(void *dst, const void *src, size_t n)
{
	uint8_t *d = dst;
	const uint8_t *s = src;
	while (n >= 8) {
		uint64_t v;
		__builtin_memcpy(&v, s, 8);
		__builtin_memcpy(d, &v, 8);
		d += 8, s += 8, n -= 8;
	}
	while (n--)
		*d++ = *s++;
	return dst;
}

void *memset(void *dst, int c, size_t n)
{
	uint8_t *d = dst;
	while (n--)
		*d++ = (uint8_t)c;
	return dst;
}

/* where the host leaves the return address and stack pointer of a bounced call (rt_entry.S) */
const uint64_t rt_bounce_slot = EMBER_RT_BOUNCE;

typedef long (*rt_fn)(long a0, long a1, long a2, long a3, long a4, long a5);

/* the state components XSAVE covers here (XCR0), 0 when it cannot be used; found once */
static uint64_t xsave_mask(void)
{
	static uint64_t mask;
	static int probed;
	if (!probed) {
		uint32_t a, b, c, d;
		__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(1), "c"(0));
		if (c & (1u << 27)) { /* OSXSAVE: XGETBV and XSAVE are usable at CPL3 */
			uint32_t lo, hi;
			__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
			__asm__ volatile("cpuid"
					 : "=a"(a), "=b"(b), "=c"(c), "=d"(d)
					 : "a"(0xd), "c"(0));
			if (b <=
			    EMBER_RT_XSAVE_SIZE) /* the area for every component XCR0 enables */
				mask = ((uint64_t)hi << 32) | lo;
		}
		probed = 1;
	}
	return mask;
}

/* The input hypercall, with the function's FPU state saved in guest memory around it: an
 * invocation restored from a snapshot taken here gets that state back from the snapshot's
 * memory, so the host does not have to set it (EMBER_RT_FPU_SAVED). */
static void input_hypercall(void)
{
	volatile struct ember_rt_ctl *c = RT_CTL;
	uint64_t mask = xsave_mask();
	uint32_t lo = (uint32_t)mask, hi = (uint32_t)(mask >> 32);
	c->fpu_saved = 0;
	if (mask) {
		__asm__ volatile("xsave64 (%0)"
				 :
				 : "r"(EMBER_RT_XSAVE), "a"(lo), "d"(hi)
				 : "memory");
		c->fpu_saved = EMBER_RT_FPU_SAVED;
	}
	rt_hypercall(EMBER_HC_INPUT);
	if (c->fpu_saved == EMBER_RT_FPU_SAVED)
		__asm__ volatile("xrstor64 (%0)"
				 :
				 : "r"(EMBER_RT_XSAVE), "a"(lo), "d"(hi)
				 : "memory");
	c->fpu_saved = 0;
}

/* one contiguous read of the request; refills through the host when the buffer is used up */
static long read_in(uint8_t *dst, uint64_t n)
{
	volatile struct ember_rt_ctl *c = RT_CTL;
	while (c->in_pos >= c->in_len) {
		if (c->in_eof)
			return 0;
		input_hypercall();
	}
	uint64_t avail = c->in_len - c->in_pos;
	if (n > avail)
		n = avail;
	memcpy(dst, (const uint8_t *)EMBER_RT_IN + c->in_pos, n);
	c->in_pos += n;
	return (long)n;
}

/* appends to the stdout or stderr buffer, handing full buffers to the host */
static long write_out(long fd, const uint8_t *src, uint64_t n)
{
	volatile struct ember_rt_ctl *c = RT_CTL;
	volatile uint64_t *len = fd == 1 ? &c->out_len : &c->log_len;
	uint8_t *buf = (uint8_t *)(fd == 1 ? EMBER_RT_OUT : EMBER_RT_LOG);
	uint64_t size = fd == 1 ? EMBER_RT_OUT_SIZE : EMBER_RT_LOG_SIZE, done = 0;
	while (done < n) {
		if (*len >= size)
			rt_hypercall(EMBER_HC_FLUSH); /* the host empties both buffers */
		uint64_t k = size - *len < n - done ? size - *len : n - done;
		memcpy(buf + *len, src + done, k);
		*len += k;
		done += k;
	}
	return (long)n;
}

struct iov {
	uint64_t base, len;
};

/* fd 4, the request's metadata, from its buffer */
static long read_meta(uint8_t *dst, uint64_t n)
{
	volatile struct ember_rt_ctl *c = RT_CTL;
	uint64_t avail = c->meta_len - c->meta_pos;
	if (n > avail)
		n = avail;
	memcpy(dst, (const uint8_t *)EMBER_RT_META + c->meta_pos, n);
	c->meta_pos += n;
	return (long)n;
}

static long sys_read(long fd, long buf, long n, long a3, long a4, long a5)
{
	if (fd == EMBER_META_FD && RT_CTL->meta_len != EMBER_RT_META_FORWARD && n >= 0)
		return read_meta((uint8_t *)buf, (uint64_t)n);
	if (fd >= EMBER_RT_FD0)
		return rt_file_read(fd, buf, n, a3, a4, a5);
	if (fd != 0)
		return rt_forward(__NR_read, fd, buf, n, a3, a4, a5);
	return read_in((uint8_t *)buf, (uint64_t)n);
}

static long sys_write(long fd, long buf, long n, long a3, long a4, long a5)
{
	if (fd != 1 && fd != 2)
		return rt_forward(__NR_write, fd, buf, n, a3, a4, a5);
	return write_out(fd, (const uint8_t *)buf, (uint64_t)n);
}

static long sys_readv(long fd, long iov, long cnt, long a3, long a4, long a5)
{
	if (fd >= EMBER_RT_FD0)
		return rt_file_readv(fd, iov, cnt, a3, a4, a5);
	if (fd != 0 || cnt < 0 || cnt > 1024)
		return rt_forward(__NR_readv, fd, iov, cnt, a3, a4, a5);
	const struct iov *v = (const struct iov *)iov;
	long total = 0;
	for (long i = 0; i < cnt; i++) {
		if (!v[i].len)
			continue;
		long k = read_in((uint8_t *)v[i].base, v[i].len);
		total += k;
		if ((uint64_t)k < v[i].len)
			break;
	}
	return total;
}

static long sys_writev(long fd, long iov, long cnt, long a3, long a4, long a5)
{
	if ((fd != 1 && fd != 2) || cnt < 0 || cnt > 1024)
		return rt_forward(__NR_writev, fd, iov, cnt, a3, a4, a5);
	const struct iov *v = (const struct iov *)iov;
	long total = 0;
	for (long i = 0; i < cnt; i++)
		total += write_out(fd, (const uint8_t *)v[i].base, v[i].len);
	return total;
}

static long sys_ioctl(long fd, long req, long arg, long a3, long a4, long a5)
{
	if (fd >= 0 && fd <= 2)
		return -ENOTTY;
	return rt_forward(__NR_ioctl, fd, req, arg, a3, a4, a5);
}

static long sys_rt_sigprocmask(long how, long set, long old, long size, long a4, long a5)
{
	(void)a4, (void)a5;
	volatile struct ember_rt_ctl *c = RT_CTL;
	if (size != 8)
		return -EINVAL;
	uint64_t s = set ? *(const uint64_t *)set : 0;
	if (old)
		*(uint64_t *)old = c->sigmask;
	if (!set)
		return 0;
	if (how == 0)
		c->sigmask |= s;
	else if (how == 1)
		c->sigmask &= ~s;
	else if (how == 2)
		c->sigmask = s;
	else
		return -EINVAL;
	c->sigmask &= ~((1ULL << 8) | (1ULL << 18)); /* SIGKILL, SIGSTOP */
	return 0;
}

static long ret_pid(long a0, long a1, long a2, long a3, long a4, long a5)
{
	(void)a0, (void)a1, (void)a2, (void)a3, (void)a4, (void)a5;
	return GUEST_PID;
}

static long ret_uid(long a0, long a1, long a2, long a3, long a4, long a5)
{
	(void)a0, (void)a1, (void)a2, (void)a3, (void)a4, (void)a5;
	return GUEST_UID;
}

static long ret_zero(long a0, long a1, long a2, long a3, long a4, long a5)
{
	(void)a0, (void)a1, (void)a2, (void)a3, (void)a4, (void)a5;
	return 0;
}

static long w_clock_gettime(long a0, long a1, long a2, long a3, long a4, long a5)
{
	long rc = rt_clock_gettime(a0, a1);
	return rc == -EINVAL ? rt_forward(__NR_clock_gettime, a0, a1, a2, a3, a4, a5) : rc;
}

static long w_gettimeofday(long a0, long a1, long a2, long a3, long a4, long a5)
{
	(void)a2, (void)a3, (void)a4, (void)a5;
	return rt_gettimeofday(a0, a1);
}

static long w_time(long a0, long a1, long a2, long a3, long a4, long a5)
{
	(void)a1, (void)a2, (void)a3, (void)a4, (void)a5;
	return rt_time(a0);
}

static long w_clock_getres(long a0, long a1, long a2, long a3, long a4, long a5)
{
	long rc = rt_clock_getres(a0, a1);
	return rc == -EINVAL ? rt_forward(__NR_clock_getres, a0, a1, a2, a3, a4, a5) : rc;
}

static long w_getrandom(long a0, long a1, long a2, long a3, long a4, long a5)
{
	(void)a3, (void)a4, (void)a5;
	return rt_getrandom(a0, a1, a2);
}

#define NR_MAX 512

static const rt_fn table[NR_MAX] = {
    [__NR_read] = sys_read,
    [__NR_write] = sys_write,
    [__NR_readv] = sys_readv,
    [__NR_writev] = sys_writev,
    [__NR_ioctl] = sys_ioctl,
    [__NR_pread64] = rt_file_pread,
    [__NR_lseek] = rt_file_lseek,
    [__NR_brk] = rt_brk,
    [__NR_mmap] = rt_mmap,
    [__NR_munmap] = rt_munmap,
    [__NR_mremap] = rt_mremap,
    [__NR_mprotect] = rt_mprotect,
    [__NR_madvise] = rt_madvise,
    [__NR_rt_sigprocmask] = sys_rt_sigprocmask,
    [__NR_getpid] = ret_pid,
    [__NR_gettid] = ret_pid,
    [__NR_getppid] = ret_zero,
    [__NR_getuid] = ret_uid,
    [__NR_geteuid] = ret_uid,
    [__NR_getgid] = ret_uid,
    [__NR_getegid] = ret_uid,
    [__NR_sched_yield] = ret_zero,
    [__NR_clock_gettime] = w_clock_gettime,
    [__NR_gettimeofday] = w_gettimeofday,
    [__NR_time] = w_time,
    [__NR_clock_getres] = w_clock_getres,
    [__NR_getrandom] = w_getrandom,
};

long rt_syscall(long nr, long a0, long a1, long a2, long a3, long a4, long a5)
{
	volatile struct ember_rt_ctl *c = RT_CTL;
	rt_fn fn = nr >= 0 && nr < NR_MAX ? table[nr] : 0;
	if (!fn)
		return rt_forward(nr, a0, a1, a2, a3, a4, a5);
	uint64_t forwarded = c->forwarded;
	long r = fn(a0, a1, a2, a3, a4, a5);
	/* served here, counted by number for the host; the host counts those it was handed */
	if (c->forwarded == forwarded)
		((volatile uint64_t *)EMBER_RT_COUNTS)[nr]++;
	return r;
}
