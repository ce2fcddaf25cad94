/* The in-guest runtime's memory calls: brk and anonymous mmap/munmap/mremap/mprotect/madvise,
 * served from a pool of memory the host made writable; what the pool cannot serve is forwarded. */
#include <asm/unistd.h>

#include "rt.h"

#define ENOMEM 12
#define EFAULT 14
#define EEXIST 17
#define EINVAL 22

#define PAGE		    4096ULL
#define PROT_RW		    3 /* PROT_READ | PROT_WRITE */
#define MAP_SHARED	    0x01
#define MAP_PRIVATE	    0x02
#define MAP_FIXED	    0x10
#define MAP_ANONYMOUS	    0x20
#define MAP_FIXED_NOREPLACE 0x100000
#define MREMAP_MAYMOVE	    1
#define MREMAP_FIXED	    2
#define MADV_DONTNEED	    4
#define MADV_FREE	    8

#define USED   EMBER_RT_SEG_USED
#define FREE   EMBER_RT_SEG_FREE
#define DIRTY  EMBER_RT_SEG_DIRTY
#define BIT(s) ((s) < 32 ? 1u << (s) : 0u)

/* used memory larger than this is given back to the host to be zeroed, not cleared here: the
 * host drops the pages, which costs one exit but neither touches nor keeps them */
#define ZERO_INLINE (256 * 1024ULL)
#define SEG_MAX	    (EMBER_RT_MAP_SIZE / sizeof(struct ember_rt_seg))

static struct ember_rt_seg *const seg = (struct ember_rt_seg *)EMBER_RT_MAP;

static uint64_t page_up(uint64_t x)
{
	return (x + PAGE - 1) & ~(PAGE - 1);
}

/* the host wrote the first count; the program could have written any, so it is clamped */
static uint64_t nseg(void)
{
	uint64_t n = RT_CTL->nseg;
	return n < SEG_MAX ? n : SEG_MAX;
}

/* index of the first range whose end is above addr */
static uint64_t first_above(uint64_t addr)
{
	uint64_t lo = 0, hi = nseg();
	while (lo < hi) {
		uint64_t mid = (lo + hi) / 2;
		if (seg[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void move(uint64_t to, uint64_t from, uint64_t n)
{
	if (to > from)
		for (uint64_t i = n; i-- > 0;)
			seg[to + i] = seg[from + i];
	else
		for (uint64_t i = 0; i < n; i++)
			seg[to + i] = seg[from + i];
}

/* cuts the range holding addr in two there; -1 when the table is full */
static int split(uint64_t addr)
{
	uint64_t n = nseg(), i = first_above(addr);
	if (i == n || seg[i].start >= addr)
		return 0;
	if (n == SEG_MAX)
		return -1;
	move(i + 1, i, n - i);
	seg[i].end = addr;
	seg[i + 1].start = addr;
	RT_CTL->nseg = n + 1;
	return 0;
}

/* joins neighbours that touch and are in the same state */
static void merge(void)
{
	uint64_t n = nseg(), k = 0;
	for (uint64_t i = 0; i < n; i++) {
		if (k && seg[k - 1].end == seg[i].start && seg[k - 1].state == seg[i].state)
			seg[k - 1].end = seg[i].end;
		else
			seg[k++] = seg[i];
	}
	RT_CTL->nseg = k;
}

/* how many bytes of [a, b) the pool holds, and the states met there (a bit per state) */
static uint64_t cover(uint64_t a, uint64_t b, unsigned *states)
{
	uint64_t got = 0;
	*states = 0;
	for (uint64_t i = first_above(a), n = nseg(); i < n && seg[i].start < b; i++) {
		uint64_t lo = seg[i].start > a ? seg[i].start : a;
		uint64_t hi = seg[i].end < b ? seg[i].end : b;
		got += hi - lo;
		*states |= BIT(seg[i].state);
	}
	return got;
}

/* every range of the pool in [a, b) whose state is in `from` goes to state `to`; to == 0 takes
 * them out of the pool (the host keeps them mapped and is told what to do with them next) */
static int retag(uint64_t a, uint64_t b, unsigned from, uint64_t to)
{
	if (split(a) || split(b))
		return -ENOMEM; /* as Linux when a call would need more map entries than it allows
				 */
	uint64_t n = nseg(), k = first_above(a);
	for (uint64_t i = k; i < n; i++) {
		if (seg[i].start < b && (from & BIT(seg[i].state))) {
			if (!to)
				continue;
			seg[i].state = to;
		}
		seg[k++] = seg[i];
	}
	RT_CTL->nseg = k;
	merge();
	return 0;
}

/* the host's answer to a forwarded memory call */
static long fwd(long nr, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4,
		uint64_t a5)
{
	return rt_forward(nr, (long)a0, (long)a1, (long)a2, (long)a3, (long)a4, (long)a5);
}

/* [a, b), in the pool, reads as zero afterwards: small used ranges are cleared here, large ones
 * dropped by the host */
static long zero(uint64_t a, uint64_t b)
{
	for (uint64_t i = first_above(a), n = nseg(); i < n && seg[i].start < b; i++) {
		if (seg[i].state == FREE)
			continue;
		uint64_t lo = seg[i].start > a ? seg[i].start : a;
		uint64_t hi = seg[i].end < b ? seg[i].end : b;
		if (hi - lo <= ZERO_INLINE)
			memset((void *)lo, 0, hi - lo);
		else if (fwd(__NR_madvise, lo, hi - lo, MADV_DONTNEED, 0, 0, 0))
			return -ENOMEM;
	}
	return 0;
}

/* the highest run of free (or dirty) pool memory of len bytes; 0 if none */
static uint64_t fit(uint64_t len)
{
	uint64_t lo = 0, hi = 0;
	for (uint64_t i = nseg(); i-- > 0;) {
		if (seg[i].state == USED) {
			hi = 0;
			continue;
		}
		if (!hi || seg[i].end != lo)
			hi = seg[i].end;
		lo = seg[i].start;
		if (hi - lo >= len)
			return hi - len;
	}
	return 0;
}

/* new pool memory from the host: a step at least, else just what is needed */
static int grow(uint64_t len)
{
	uint64_t n = nseg();
	if (n + 1 >= SEG_MAX)
		return -ENOMEM;
	uint64_t want = len > EMBER_RT_POOL_STEP ? len : EMBER_RT_POOL_STEP;
	long a = rt_forward(EMBER_SYS_POOL, (long)want, 0, 0, 0, 0, 0);
	if (a < 0 && want > len) {
		want = len;
		a = rt_forward(EMBER_SYS_POOL, (long)want, 0, 0, 0, 0, 0);
	}
	if (a < 0)
		return -ENOMEM;
	uint64_t i = first_above((uint64_t)a);
	move(i + 1, i, n - i);
	seg[i] = (struct ember_rt_seg){(uint64_t)a, (uint64_t)a + want, FREE};
	RT_CTL->nseg = n + 1;
	merge();
	return 0;
}

/* len bytes of zeroed memory, marked used; the address or -ENOMEM */
static long alloc(uint64_t len)
{
	uint64_t a = fit(len);
	if (!a && (grow(len) || !(a = fit(len))))
		return -ENOMEM;
	if (zero(a, a + len) || retag(a, a + len, BIT(FREE) | BIT(DIRTY), USED))
		return -ENOMEM;
	return (long)a;
}

long rt_mmap(long addr, long len0, long prot, long flags, long fd, long off)
{
	uint64_t a = (uint64_t)addr, len = page_up((uint64_t)len0);
	unsigned st;
	int fixed = (int)flags & (MAP_FIXED | MAP_FIXED_NOREPLACE);
	int noreplace = ((int)flags & MAP_FIXED_NOREPLACE) && !((int)flags & MAP_FIXED);
	if (!len0 || len < (uint64_t)len0 || !((int)flags & MAP_ANONYMOUS) ||
	    !((int)flags & (MAP_SHARED | MAP_PRIVATE)) || a % PAGE || a + len < a)
		return fwd(__NR_mmap, a, len0, prot, flags, fd, off); /* the host's errors */
	uint64_t got = a ? cover(a, a + len, &st) : 0;
	if (fixed) {
		if (got == len && prot == PROT_RW) {
			if (noreplace && (st & BIT(USED)))
				return -EEXIST;
			if (zero(a, a + len) || retag(a, a + len, ~0u, USED))
				return -ENOMEM;
			return addr;
		}
		/* a mapping over pool memory the host must make: that memory leaves the pool */
		if (got && !(noreplace && (st & BIT(USED))) && retag(a, a + len, ~0u, 0))
			return -ENOMEM;
		return fwd(__NR_mmap, a, len0, prot, flags, fd, off);
	}
	if (prot != PROT_RW)
		return fwd(__NR_mmap, a, len0, prot, flags, fd, off);
	if (got == len && !(st & BIT(USED))) { /* a hint that names free pool memory */
		if (zero(a, a + len) || retag(a, a + len, ~0u, USED))
			return -ENOMEM;
		return addr;
	}
	return alloc(len);
}

/* calls fwd(nr, gap, len) for each gap of [a, b) the pool does not hold */
static long each_gap(long nr, uint64_t a, uint64_t b, uint64_t a2)
{
	long rc = 0;
	for (uint64_t i = first_above(a), n = nseg(); a < b; i++) {
		uint64_t next = i < n && seg[i].start < b ? seg[i].start : b;
		if (next > a && (rc = fwd(nr, a, next - a, a2, 0, 0, 0)))
			return rc;
		if (next == b)
			break;
		a = seg[i].end;
	}
	return rc;
}

long rt_munmap(long addr, long len0, long a2, long a3, long a4, long a5)
{
	uint64_t a = (uint64_t)addr, len = page_up((uint64_t)len0);
	unsigned st;
	if (!len0 || len < (uint64_t)len0 || a % PAGE || a + len < a || !cover(a, a + len, &st))
		return fwd(__NR_munmap, a, len0, a2, a3, a4, a5);
	if (retag(a, a + len, BIT(USED), DIRTY))
		return -ENOMEM;
	return each_gap(__NR_munmap, a, a + len, 0);
}

long rt_mprotect(long addr, long len0, long prot, long a3, long a4, long a5)
{
	uint64_t a = (uint64_t)addr, len = page_up((uint64_t)len0);
	unsigned st;
	if (a % PAGE || (prot & ~7L))
		return -EINVAL;
	if (len < (uint64_t)len0 || a + len < a)
		return fwd(__NR_mprotect, a, len0, prot, a3, a4, a5);
	uint64_t got = cover(a, a + len, &st);
	if (!got)
		return fwd(__NR_mprotect, a, len0, prot, a3, a4, a5);
	if (st & (BIT(FREE) | BIT(DIRTY)))
		return -ENOMEM; /* part of the range is not mapped */
	if (got == len && prot == PROT_RW)
		return 0;
	/* other permissions only the host can give: the range leaves the pool */
	if (retag(a, a + len, BIT(USED), 0))
		return -ENOMEM;
	return fwd(__NR_mprotect, a, len0, prot, a3, a4, a5);
}

long rt_mremap(long old0, long old_len0, long new_len0, long flags, long new_addr, long a5)
{
	uint64_t old = (uint64_t)old0, old_len = page_up((uint64_t)old_len0);
	uint64_t new_len = page_up((uint64_t)new_len0);
	unsigned st;
	if (old % PAGE || !cover(old, old + 1, &st))
		return fwd(__NR_mremap, old, old_len0, new_len0, flags, new_addr, a5);
	if (!new_len || new_len < (uint64_t)new_len0 || (flags & ~(long)MREMAP_MAYMOVE))
		return -EINVAL;
	if (!old_len || old_len < (uint64_t)old_len0 || old + old_len < old ||
	    cover(old, old + old_len, &st) != old_len || st != BIT(USED))
		return -EFAULT;
	if (new_len <= old_len) {
		if (new_len < old_len && retag(old + new_len, old + old_len, BIT(USED), DIRTY))
			return -ENOMEM;
		return old0;
	}
	uint64_t end = old + new_len;
	if (end > old && cover(old + old_len, end, &st) == new_len - old_len &&
	    !(st & BIT(USED))) { /* grows in place */
		if (zero(old + old_len, end) || retag(old + old_len, end, ~0u, USED))
			return -ENOMEM;
		return old0;
	}
	if (!(flags & MREMAP_MAYMOVE))
		return -ENOMEM;
	long to = alloc(new_len);
	if (to < 0)
		return to;
	memcpy((void *)to, (const void *)old, old_len);
	if (retag(old, old + old_len, BIT(USED), DIRTY))
		return -ENOMEM;
	return to;
}

long rt_madvise(long addr, long len0, long advice, long a3, long a4, long a5)
{
	uint64_t a = (uint64_t)addr, len = page_up((uint64_t)len0);
	unsigned st;
	if (a % PAGE)
		return -EINVAL;
	/* only advice over pool memory alone is served here; the host drops pages for the rest */
	if (len < (uint64_t)len0 || a + len < a || cover(a, a + len, &st) != len)
		return fwd(__NR_madvise, a, len0, advice, a3, a4, a5);
	if (st & (BIT(FREE) | BIT(DIRTY)))
		return -ENOMEM;
	if (advice == MADV_DONTNEED || advice == MADV_FREE)
		return zero(a, a + len);
	return 0;
}

/* the break moves freely below the top the host made writable; higher, the host is asked once
 * for a step more */
long rt_brk(long want0, long a1, long a2, long a3, long a4, long a5)
{
	(void)a1, (void)a2, (void)a3, (void)a4, (void)a5;
	volatile struct ember_rt_ctl *c = RT_CTL;
	uint64_t want = (uint64_t)want0, cur = c->brk_cur;
	if (want < c->brk_start || want > ~0ULL - EMBER_RT_BRK_STEP - PAGE)
		return (long)cur;
	uint64_t old_end = page_up(cur), new_end = page_up(want);
	if (new_end > c->brk_top) {
		uint64_t top = new_end + EMBER_RT_BRK_STEP;
		if ((uint64_t)fwd(__NR_brk, top, 0, 0, 0, 0, 0) != top) {
			top = new_end;
			if ((uint64_t)fwd(__NR_brk, top, 0, 0, 0, 0, 0) != top)
				return (long)cur;
		}
		c->brk_top = top;
	}
	/* pages given back by an earlier shrink read as zero when the heap grows over them */
	uint64_t dirty = c->brk_dirty < new_end ? c->brk_dirty : new_end;
	if (old_end < dirty) {
		if (dirty - old_end <= ZERO_INLINE)
			memset((void *)old_end, 0, dirty - old_end);
		else if (fwd(__NR_madvise, old_end, dirty - old_end, MADV_DONTNEED, 0, 0, 0))
			return (long)cur;
	}
	if (new_end > c->brk_dirty)
		c->brk_dirty = new_end;
	c->brk_cur = want;
	return (long)want;
}
