/* The in-guest runtime's memory calls (src/guest/rt_mem.c, rt_arena.c), compiled for the host
 * (EMBER_RT_HOSTED): its control block and arena table at their guest addresses, the program's
 * memory a region of this process at a fixed address, and this file playing the host: the
 * calls the runtime forwards or makes for itself are served on that region with real mappings,
 * so the kernel faults any access the runtime makes outside what the host gave it. Per input, a
 * sequence of brk, mmap, munmap, mprotect, mremap and madvise calls with fuzzed arguments, the
 * program writing into what it got; after each, the arena table holds together, holds only memory
 * the host mapped writable, and fresh memory reads as zero. */
#include <asm/unistd.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "common.h"
#include "rt_arena.h"

#define LO	  0x10000000ULL /* the program's memory: the heap, then the mmap area */
#define HEAP	  (16ULL << 20)
#define HI	  (LO + (64ULL << 20))
#define NPAGES	  ((HI - LO) / PAGE)
#define MAX_CALLS 16
#define SEG_MAX	  (EMBER_RT_MAP_SIZE / sizeof(struct ember_rt_seg))

static uint8_t prot_of[NPAGES]; /* the host's map: 0 unmapped, else PROT_* + 1 */
static uint64_t brk_cur;	/* the host's break */
static struct ember_rt_seg *const seg = (struct ember_rt_seg *)EMBER_RT_MAP;

static int in_region(uint64_t a, uint64_t len)
{
	return a >= LO && a % PAGE == 0 && len <= HI - LO && a <= HI - len;
}

#define UNMAP (-1)

/* the host maps [a, a+len) with prot (UNMAP: unmaps it), fresh pages reading as zero */
static void host_map(uint64_t a, uint64_t len, int prot, int fresh)
{
	if (!len)
		return;
	if (fresh || prot == UNMAP)
		FZ_CHECK(mmap((void *)a, len, PROT_NONE,
			      MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
			      0) == (void *)a,
			 "mmap");
	FZ_CHECK(mprotect((void *)a, len, prot == UNMAP ? PROT_NONE : prot) == 0, "mprotect");
	memset(prot_of + (a - LO) / PAGE, prot + 1, len / PAGE);
}

static int mapped(uint64_t a, uint64_t len)
{
	if (!in_region(a, len))
		return 0;
	for (uint64_t p = a; p < a + len; p += PAGE)
		if (!prot_of[(p - LO) / PAGE])
			return 0;
	return 1;
}

static int free_run(uint64_t a, uint64_t b)
{
	if (b < a || !in_region(a, b - a))
		return 0;
	for (uint64_t p = a; p < b; p += PAGE)
		if (prot_of[(p - LO) / PAGE])
			return 0;
	return 1;
}

/* the highest free run of len bytes above the heap; 0 if none */
static uint64_t gap(uint64_t len)
{
	if (len > HI - LO - HEAP)
		return 0;
	for (uint64_t top = HI; top >= LO + HEAP + len; top -= PAGE)
		if (free_run(top - len, top))
			return top - len;
	return 0;
}

static long host_brk(uint64_t want)
{
	uint64_t cur = (brk_cur + PAGE - 1) & ~(PAGE - 1), end = (want + PAGE - 1) & ~(PAGE - 1);
	if (want < LO || want > LO + HEAP || (end > cur && !free_run(cur, end)))
		return (long)brk_cur;
	if (end > cur)
		host_map(cur, end - cur, PROT_READ | PROT_WRITE, 1);
	else if (end < cur)
		host_map(end, cur - end, UNMAP, 0);
	brk_cur = want;
	return (long)want;
}

static long host_mmap(uint64_t a, uint64_t len, int prot, int flags)
{
	len = (len + PAGE - 1) & ~(PAGE - 1);
	if (!len || !(flags & MAP_ANONYMOUS) || !(flags & (MAP_SHARED | MAP_PRIVATE)))
		return -EINVAL;
	if (!(flags & MAP_FIXED) || !in_region(a, len))
		a = (flags & MAP_FIXED) ? 0 : gap(len);
	if (!a)
		return -ENOMEM;
	host_map(a, len, prot & 7, 1);
	return (long)a;
}

static long host_mremap(uint64_t old, uint64_t old_len, uint64_t new_len, long flags)
{
	if (!in_region(old, old_len) || !mapped(old, old_len ? old_len : PAGE) || !new_len)
		return -EFAULT;
	int prot = prot_of[(old - LO) / PAGE] - 1;
	if (new_len <= old_len) {
		if (new_len < old_len)
			host_map(old + new_len, old_len - new_len, UNMAP, 0);
		return (long)old;
	}
	if (in_region(old, new_len) && free_run(old + old_len, old + new_len)) {
		host_map(old + old_len, new_len - old_len, prot, 1);
		return (long)old;
	}
	uint64_t to = flags & 1 ? gap(new_len) : 0;
	if (!to)
		return -ENOMEM;
	host_map(to, new_len, PROT_READ | PROT_WRITE, 1);
	FZ_CHECK(mprotect((void *)old, old_len, PROT_READ) == 0, "mprotect"); /* to move it */
	memcpy((void *)to, (void *)old, old_len);
	host_map(to, new_len, prot, 0);
	host_map(old, old_len, UNMAP, 0);
	return (long)to;
}

/* The host side of the runtime's hypercall: Ember's arena call, and the memory calls on the
 * program's region as Linux would answer them there (anything outside it is refused). */
long rt_hc_syscall(long nr, long a0, long a1, long a2, long a3, long a4, long a5)
{
	uint64_t a = (uint64_t)a0, len = ((uint64_t)a1 + PAGE - 1) & ~(PAGE - 1);
	(void)a4, (void)a5;
	switch (nr) {
	case EMBER_SYS_ARENA:
		return host_mmap(0, a, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
	case __NR_brk:
		return host_brk(a);
	case __NR_mmap:
		return host_mmap(a, (uint64_t)a1, (int)a2, (int)a3);
	case __NR_munmap:
		if (!a1 || !in_region(a, len))
			return -EINVAL;
		host_map(a, len, UNMAP, 0);
		return 0;
	case __NR_mprotect:
		if (!in_region(a, len) || !mapped(a, len))
			return -ENOMEM;
		host_map(a, len, (int)a2 & 7, 0);
		return 0;
	case __NR_madvise:
		if (!in_region(a, len) || !mapped(a, len))
			return -ENOMEM;
		return madvise((void *)a, len, (int)a2) ? -EINVAL : 0;
	case __NR_mremap:
		return host_mremap(a, len, ((uint64_t)a2 + PAGE - 1) & ~(PAGE - 1), a3);
	default:
		return -ENOSYS;
	}
}

/* a fresh start: everything unmapped, the control block as the guest mode's setup leaves it */
static void reset(void)
{
	static int reserved;
	if (!reserved) {
		FZ_CHECK(mmap((void *)EMBER_RT_BASE, EMBER_RT_END - EMBER_RT_BASE,
			      PROT_READ | PROT_WRITE,
			      MAP_FIXED_NOREPLACE | MAP_PRIVATE | MAP_ANONYMOUS, -1,
			      0) == (void *)EMBER_RT_BASE &&
			     mmap((void *)LO, HI - LO, PROT_NONE,
				  MAP_FIXED_NOREPLACE | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
				  -1, 0) == (void *)LO,
			 "the runtime's and the program's addresses are taken in this process");
		reserved = 1;
	}
	host_map(LO, HI - LO, UNMAP, 0);
	volatile struct ember_rt_ctl *c = RT_CTL;
	memset((void *)c, 0, sizeof(*c));
	c->magic = EMBER_RT_MAGIC;
	brk_cur = LO;
	c->brk_start = c->brk_cur = c->brk_dirty = LO;
	c->brk_top = (uint64_t)host_brk(LO + EMBER_RT_BRK_STEP);
	long p = rt_hc_syscall(EMBER_SYS_ARENA, EMBER_RT_ARENA_STEP, 0, 0, 0, 0, 0);
	FZ_CHECK(p > 0, "the first arena");
	seg[0] = (struct ember_rt_seg){(uint64_t)p, (uint64_t)p + EMBER_RT_ARENA_STEP, FREE};
	c->nseg = 1;
}

FZ_UNTRACED static void check_arena(void)
{
	uint64_t n = RT_CTL->nseg;
	FZ_CHECK(n <= SEG_MAX, "%lu ranges", n);
	for (uint64_t i = 0; i < n; i++) {
		const struct ember_rt_seg *s = &seg[i];
		FZ_CHECK(s->start < s->end && s->start % PAGE == 0 && s->end % PAGE == 0 &&
			     (i == 0 || seg[i - 1].end <= s->start),
			 "range %lu: %#lx-%#lx", i, s->start, s->end);
		FZ_CHECK(s->state == USED || s->state == FREE || s->state == DIRTY,
			 "range %lu: state %lu", i, s->state);
		FZ_CHECK(in_region(s->start, s->end - s->start), "range %lu outside", i);
		for (uint64_t p = s->start; p < s->end; p += PAGE)
			FZ_CHECK(prot_of[(p - LO) / PAGE] == (PROT_READ | PROT_WRITE) + 1,
				 "arena page %#lx is not writable for the host", p);
	}
	const volatile struct ember_rt_ctl *c = RT_CTL;
	FZ_CHECK(c->brk_start <= c->brk_cur && c->brk_cur <= c->brk_top, "break %#lx top %#lx",
		 c->brk_cur, c->brk_top);
}

/* an address for an argument: in the arena, in the region, near what was mapped, or anything */
static uint64_t addr(struct fz *f, const uint64_t *got, int ngot)
{
	uint8_t k = fz_u8(f);
	uint64_t n = RT_CTL->nseg;
	switch (k % 5) {
	case 0:
		return n ? seg[(k >> 3) % n].start + (uint64_t)fz_u8(f) * PAGE : LO;
	case 1:
		return ngot ? got[(k >> 3) % ngot] + (uint64_t)(int8_t)fz_u8(f) * (int64_t)PAGE
			    : LO;
	case 2:
		return LO + (uint64_t)fz_u16(f) * PAGE;
	case 3:
		return RT_CTL->brk_cur + (uint64_t)(int8_t)fz_u8(f) * (int64_t)PAGE;
	default:
		return fz_u64(f);
	}
}

static uint64_t length(struct fz *f)
{
	uint8_t k = fz_u8(f);
	return k < 0xf0 ? (uint64_t)k * PAGE / 4 + (k & 3) : fz_u64(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = {data, size};
	uint64_t got[MAX_CALLS];
	int ngot = 0;
	reset();
	for (int i = 0; i < MAX_CALLS && f.n; i++) {
		uint8_t op = fz_u8(&f);
		uint64_t a = addr(&f, got, ngot), len = length(&f);
		long r, flags = fz_u8(&f), prot = fz_u8(&f) & 0xf;
		switch (op % 6) {
		case 0:
			r = rt_brk((long)a, 0, 0, 0, 0, 0);
			break;
		case 1: /* mostly an anonymous private read-write mapping, anywhere */
			flags = (flags & 0x13) | MAP_ANONYMOUS | (flags & 0x80 ? 0x100000 : 0);
			r = rt_mmap(flags & 0x40 ? (long)a : 0, (long)len,
				    prot & 8 ? prot : PROT_READ | PROT_WRITE, flags, -1, 0);
			if (r > 0 && len && (flags & 0x40) == 0 && ngot < MAX_CALLS)
				got[ngot++] = (uint64_t)r;
			break;
		case 2:
			r = rt_munmap((long)a, (long)len, 0, 0, 0, 0);
			break;
		case 3:
			r = rt_mprotect((long)a, (long)len, prot & 7, 0, 0, 0);
			break;
		case 4:
			r = rt_mremap((long)a, (long)len, (long)length(&f), flags & 1, 0, 0);
			break;
		default:
			r = rt_madvise((long)a, (long)len, flags % 26, 0, 0, 0);
			break;
		}
		check_arena();
		/* fresh anonymous memory reads as zero; the program then writes all of it */
		if (op % 6 == 1 && r > 0 && (uint64_t)r % PAGE == 0 && in_region((uint64_t)r, 0) &&
		    len && len < HI - LO) {
			uint64_t n = (len + PAGE - 1) & ~(PAGE - 1);
			FZ_CHECK(mapped((uint64_t)r, n), "mmap gave %#lx, unmapped", (uint64_t)r);
			int prot = prot_of[((uint64_t)r - LO) / PAGE] - 1;
			for (uint64_t p = (uint64_t)r; (prot & PROT_READ) && p < (uint64_t)r + n;
			     p += 8)
				FZ_CHECK(!*(volatile uint64_t *)p, "fresh memory at %#lx not zero",
					 p);
			if (prot == (PROT_READ | PROT_WRITE))
				memset((void *)r, 0xa5, n);
		}
	}
	return 0;
}
