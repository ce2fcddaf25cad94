/* The in-guest runtime's I/O: the request (fd 0) and its metadata (fd 4) in, stdout and stderr
 * out, through buffers the host fills and empties; a bad buffer faults before anything moves. */
#include <asm/unistd.h>

#include "rt.h"

#define EBADF  9
#define EFAULT 14
#define ENOTTY 25

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

/* [p, p+n) is program memory as far as the runtime can tell: not page 0 (the sled, readable
 * here, unmapped on Linux), not the runtime's own area, no wrap-around */
int rt_program_range(uint64_t p, uint64_t n)
{
	return !n ||
	       (p + n > p && p >= EMBER_PAGE_SIZE && (p + n <= EMBER_RT_CPUS || p >= EMBER_RT_END));
}

/* 0 when [p, p+n) is program memory the call may use, else -EFAULT. Every page is touched
 * (written back what it holds, to check that writing is allowed too), so that a bad buffer
 * faults before a call consumed or wrote anything: the fault sends the runtime to rt_efault,
 * and the call returns EFAULT, as a pipe's read or write would. */
long rt_usable(uint64_t p, uint64_t n, int write)
{
	if (!rt_program_range(p, n))
		return -EFAULT;
	for (uint64_t a = p, last = p + n - 1; n; a = (a | (EMBER_PAGE_SIZE - 1)) + 1) {
		volatile uint8_t *q = (volatile uint8_t *)a;
		uint8_t v = *q;
		if (write)
			*q = v;
		if ((a | (EMBER_PAGE_SIZE - 1)) >= last)
			break;
	}
	return 0;
}

/* the request's next bytes are in the buffer, unless the request has ended: 0 at its end */
static int fill_in(void)
{
	volatile struct ember_rt_ctl *c = RT_CTL;
	while (c->in_pos >= c->in_len) {
		if (c->in_eof)
			return 0;
		input_hypercall();
	}
	return 1;
}

/* one contiguous read of the request; refills through the host when the buffer is used up */
static long read_in(uint8_t *dst, uint64_t n)
{
	volatile struct ember_rt_ctl *c = RT_CTL;
	if (!fill_in())
		return 0;
	uint64_t avail = c->in_len - c->in_pos;
	if (n > avail)
		n = avail;
	if (!rt_program_range((uint64_t)dst, n))
		return -EFAULT;
	memcpy(dst, (const uint8_t *)EMBER_RT_IN + c->in_pos, n); /* a fault: nothing consumed */
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
	if (rt_usable((uint64_t)dst, n, 1)) /* the host's check of all of it first */
		return -EFAULT;
	memcpy(dst, (const uint8_t *)EMBER_RT_META + c->meta_pos, n);
	c->meta_pos += n;
	return (long)n;
}

/* fd is still what Ember opened there (0 to 4): else its calls are the host's (a pipe dup2'd
 * over it, say) */
static int ours(long fd)
{
	return fd >= 0 && fd <= EMBER_META_FD && !(RT_CTL->fd_moved >> fd & 1);
}

int rt_std_stat(long fd, uint32_t *mode, uint64_t *size)
{
	if (!ours(fd) || fd == EMBER_CODE_FD)
		return 0;
	if (fd == EMBER_META_FD && RT_CTL->meta_len == EMBER_RT_META_FORWARD)
		return 0;
	*mode = fd == EMBER_META_FD ? 0100400 : 010600; /* S_IFREG | 0400, S_IFIFO | 0600 */
	*size = fd == EMBER_META_FD ? RT_CTL->meta_len : 0;
	return 1;
}

long rt_read(long fd, long buf, long n, long a3, long a4, long a5)
{
	if (fd >= 0 && fd <= EMBER_META_FD && !ours(fd))
		return RT_FORWARD;
	if (fd == EMBER_META_FD && RT_CTL->meta_len != EMBER_RT_META_FORWARD && n >= 0)
		return read_meta((uint8_t *)buf, (uint64_t)n);
	if (fd >= EMBER_RT_FD0)
		return rt_file_read(fd, buf, n, a3, a4, a5);
	if (fd != 0)
		return RT_FORWARD;
	return read_in((uint8_t *)buf, (uint64_t)n);
}

long rt_write(long fd, long buf, long n, long a3, long a4, long a5)
{
	if ((fd != 1 && fd != 2) || !ours(fd))
		return RT_FORWARD;
	if (rt_usable((uint64_t)buf, (uint64_t)n, 0))
		return -EFAULT;
	return write_out(fd, (const uint8_t *)buf, (uint64_t)n);
}

long rt_readv(long fd, long iov, long cnt, long a3, long a4, long a5)
{
	if (fd >= EMBER_RT_FD0)
		return rt_file_readv(fd, iov, cnt, a3, a4, a5);
	if (fd != 0 || !ours(fd) || cnt < 0 || cnt > 1024)
		return RT_FORWARD;
	volatile struct ember_rt_ctl *c = RT_CTL;
	const struct iov *v = (const struct iov *)iov;
	if (!rt_program_range((uint64_t)iov, (uint64_t)cnt * sizeof(*v)))
		return -EFAULT;
	uint64_t want = 0;
	for (long i = 0; i < cnt; i++) /* a bad iovec array faults here */
		want += v[i].len;
	if (!want || !fill_in())
		return 0;
	/* what the buffer holds, no more (as from a pipe): every piece checked first, then copied,
	 * then consumed, so that a bad one consumes nothing */
	uint64_t avail = c->in_len - c->in_pos, left = avail;
	for (long i = 0; i < cnt && left; i++) {
		uint64_t k = v[i].len < left ? v[i].len : left;
		if (rt_usable(v[i].base, k, 1))
			return -EFAULT;
		left -= k;
	}
	uint64_t done = 0;
	for (long i = 0; i < cnt && done < avail; i++) {
		uint64_t k = v[i].len < avail - done ? v[i].len : avail - done;
		memcpy((uint8_t *)v[i].base, (const uint8_t *)EMBER_RT_IN + c->in_pos + done, k);
		done += k;
	}
	c->in_pos += done;
	return (long)done;
}

long rt_writev(long fd, long iov, long cnt, long a3, long a4, long a5)
{
	if ((fd != 1 && fd != 2) || !ours(fd) || cnt < 0 || cnt > 1024)
		return RT_FORWARD;
	const struct iov *v = (const struct iov *)iov;
	if (!rt_program_range((uint64_t)iov, (uint64_t)cnt * sizeof(*v)))
		return -EFAULT;
	/* every piece checked before any is written: a bad one writes nothing */
	for (long i = 0; i < cnt; i++) {
		if (rt_usable(v[i].base, v[i].len, 0))
			return -EFAULT;
	}
	long total = 0;
	for (long i = 0; i < cnt; i++)
		total += write_out(fd, (const uint8_t *)v[i].base, v[i].len);
	return total;
}

/* a terminal's ioctls on Ember's own fds answer ENOTTY here (stdio sees no terminal); those any
 * descriptor takes (FIONBIO, which libuv sets on Node.js's stdout; FIOCLEX, FIONCLEX) are the
 * host's, as in trap mode */
long rt_ioctl(long fd, long req, long arg, long a3, long a4, long a5)
{
	unsigned r = (unsigned)req;
	if (r == 0x5421 || r == 0x5450 || r == 0x5451) /* FIONBIO, FIONCLEX, FIOCLEX */
		return RT_FORWARD;
	if (fd >= 0 && fd <= 2 && ours(fd))
		return -ENOTTY;
	/* a bundle's file answers FIONREAD alone (the host's), and no terminal's (TCGETS) */
	if (r != 0x541b && rt_file_is(fd))
		return -ENOTTY;
	return RT_FORWARD;
}
