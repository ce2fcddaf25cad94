/* The in-guest runtime's memory calls: brk and anonymous mmap/munmap/mremap/mprotect/madvise,
 * served from its arena (rt_arena.c); what the arena cannot serve is forwarded to the host. */
#include <asm/unistd.h>

#include "rt_arena.h"

#define ENOMEM 12
#define EFAULT 14
#define EEXIST 17
#define EINVAL 22

#define PROT_RW		    3 /* PROT_READ | PROT_WRITE */
#define MAP_PRIVATE	    0x02
#define MAP_TYPE	    0x0f
#define MAP_FIXED	    0x10
#define MAP_ANONYMOUS	    0x20
#define MAP_FIXED_NOREPLACE 0x100000
#define MREMAP_MAYMOVE	    1
#define MADV_DONTNEED	    4
#define MADV_FREE	    8
#define MADV_MERGEABLE	    12
#define MS_ASYNC	    1
#define MS_INVALIDATE	    2
#define MS_SYNC		    4

/* The heap is writable up to brk_top, beyond the break the program knows of. Before the host is
 * asked to do anything there for the program (a fixed mapping, munmap, mprotect...), it takes
 * that spare part back, so that its map and the program's agree. */
static void heap_yield(uint64_t a, uint64_t b)
{
	volatile struct ember_rt_ctl *c = RT_CTL;
	uint64_t end = page_up(c->brk_cur);
	if (a < c->brk_top && b > end && (uint64_t)rt_own(__NR_brk, end, 0, 0) == end) {
		c->brk_top = end;
		if (c->brk_dirty > end)
			c->brk_dirty = end;
	}
	/* the heap below the break, which the program may give the host like any memory */
	uint64_t lo = (a > c->brk_start ? a : c->brk_start) & ~(PAGE - 1);
	if (a < end && b > c->brk_start && (!c->brk_hole || lo < c->brk_hole))
		c->brk_hole = lo;
}

/* forwards a call on [a, b) to the host, the heap's spare part taken back first */
static long fwd_range(long nr, uint64_t a, uint64_t b, const long args[6])
{
	heap_yield(a, b);
	return rt_forward(nr, args[0], args[1], args[2], args[3], args[4], args[5]);
}

/* forwards a call that may need room the arena holds: on ENOMEM its free runs go back to the host
 * and the call is tried once more */
static long fwd_room(long nr, const long args[6])
{
	long r = rt_forward(nr, args[0], args[1], args[2], args[3], args[4], args[5]);
	if (r == -ENOMEM && arena_release_free())
		r = rt_forward(nr, args[0], args[1], args[2], args[3], args[4], args[5]);
	return r;
}

/* [a, b), all in the arena, becomes used and zeroed */
static long take(uint64_t a, uint64_t b)
{
	if (arena_prepare(a, b) || arena_zero(a, b))
		return -ENOMEM;
	arena_retag(a, b, ANY_STATE, USED);
	return 0;
}

long rt_mmap(long addr, long len0, long prot, long flags, long fd, long off)
{
	const long args[6] = {addr, len0, prot, flags, fd, off};
	uint64_t a = (uint64_t)addr, len = page_up((uint64_t)len0);
	unsigned st = 0;
	/* Linux: MAP_FIXED_NOREPLACE never replaces, with MAP_FIXED or without */
	int fixed = (int)flags & (MAP_FIXED | MAP_FIXED_NOREPLACE);
	int noreplace = (int)flags & MAP_FIXED_NOREPLACE;
	/* private memory only: shared memory is the host's (a fork child sees its pages) */
	if (!len0 || len < (uint64_t)len0 || !((int)flags & MAP_ANONYMOUS) ||
	    ((int)flags & MAP_TYPE) != MAP_PRIVATE || a % PAGE || a + len < a || (prot & ~7L))
		return rt_forward(__NR_mmap, addr, len0, prot, flags, fd, off); /* its errors */
	uint64_t got = a ? arena_cover(a, a + len, &st) : 0;
	if (fixed) {
		if (noreplace && (st & BIT(USED)))
			return -EEXIST;
		if (got == len && prot == PROT_RW)
			return take(a, a + len) ? -ENOMEM : addr;
		/* a mapping over arena memory that the host must make: that memory leaves the arena
		 */
		if (got && arena_give_up(a, a + len))
			return -ENOMEM;
		return fwd_range(__NR_mmap, a, a + len, args);
	}
	if (prot != PROT_RW)
		return fwd_room(__NR_mmap, args);
	if (got == len && !(st & BIT(USED))) /* a hint that names free arena memory */
		return take(a, a + len) ? -ENOMEM : addr;
	if (a && !got) /* a hint outside the arena: the host honours it if it can */
		return fwd_room(__NR_mmap, args);
	return arena_alloc(len);
}

long rt_munmap(long addr, long len0, long a2, long a3, long a4, long a5)
{
	const long args[6] = {addr, len0, a2, a3, a4, a5};
	uint64_t a = (uint64_t)addr, len = page_up((uint64_t)len0);
	unsigned st;
	if (!len0 || len < (uint64_t)len0 || a % PAGE || a + len < a)
		return rt_forward(__NR_munmap, addr, len0, a2, a3, a4, a5);
	if (!arena_cover(a, a + len, &st))
		return fwd_range(__NR_munmap, a, a + len, args);
	/* the host's part first: when it refuses, nothing changes in the arena either */
	heap_yield(a, a + len);
	long rc = arena_prepare(a, a + len);
	if (!rc)
		rc = arena_each_gap(__NR_munmap, a, a + len, 0);
	if (!rc)
		arena_retag(a, a + len, BIT(USED), DIRTY);
	return rc;
}

long rt_mprotect(long addr, long len0, long prot, long a3, long a4, long a5)
{
	const long args[6] = {addr, len0, prot, a3, a4, a5};
	uint64_t a = (uint64_t)addr, len = page_up((uint64_t)len0);
	unsigned st;
	/* Linux's order: alignment, an empty range, overflow, then the permissions */
	if (a % PAGE)
		return -EINVAL;
	if (!len0)
		return 0;
	if (len < (uint64_t)len0 || a + len <= a)
		return -ENOMEM;
	if (prot & ~0xfL) /* PROT_SEM (8) is accepted, and means nothing here */
		return -EINVAL;
	prot &= 7;
	uint64_t got = arena_cover(a, a + len, &st);
	if (!got)
		return fwd_range(__NR_mprotect, a, a + len, args);
	if (st & (BIT(FREE) | BIT(DIRTY)))
		return -ENOMEM; /* part of the range is not mapped */
	if (got == len && prot == PROT_RW)
		return 0;
	/* other permissions only the host can give: the range leaves the arena */
	if (arena_retag(a, a + len, BIT(USED), 0))
		return -ENOMEM;
	return fwd_range(__NR_mprotect, a, a + len, args);
}

long rt_mremap(long old0, long old_len0, long new_len0, long flags, long new_addr, long a5)
{
	const long args[6] = {old0, old_len0, new_len0, flags, new_addr, a5};
	uint64_t old = (uint64_t)old0, old_len = page_up((uint64_t)old_len0);
	uint64_t new_len = page_up((uint64_t)new_len0);
	unsigned st;
	uint64_t got = 0;
	if (old % PAGE || old_len < (uint64_t)old_len0 || old + old_len < old ||
	    !(got = arena_cover(old, old + old_len, &st)))
		return fwd_range(__NR_mremap, old, old + old_len, args); /* not the arena's */
	if (!new_len || new_len < (uint64_t)new_len0 || (flags & ~(long)MREMAP_MAYMOVE))
		return -EINVAL;
	unsigned first;
	if (new_len <= old_len && arena_cover(old, old + PAGE, &first) == PAGE) {
		/* as Linux: the tail goes, whatever mappings it spans (munmap's way) */
		if (first != BIT(USED))
			return -EFAULT;
		long rc = new_len < old_len ? rt_munmap((long)(old + new_len),
							(long)(old_len - new_len), 0, 0, 0, 0)
					    : 0;
		return rc ? rc : old0;
	}
	if (got != old_len) {
		/* partly the arena's, partly the host's (made read-only and back, say): the host
		 * takes the whole range; the arena's free parts in it are unmapped there first, so
		 * that it sees the holes the program sees */
		if (arena_give_up(old, old + old_len))
			return -ENOMEM;
		return fwd_range(__NR_mremap, old, old + old_len, args);
	}
	if (st & (BIT(FREE) | BIT(DIRTY)))
		return -EFAULT; /* not one mapping: a hole in it */
	uint64_t end = old + new_len;
	if (end > old && arena_cover(old + old_len, end, &st) == new_len - old_len &&
	    !(st & BIT(USED))) /* grows in place */
		return take(old + old_len, end) ? -ENOMEM : old0;
	if (!(flags & MREMAP_MAYMOVE))
		return -ENOMEM;
	if (arena_prepare(old, old + old_len))
		return -ENOMEM;
	long to = arena_alloc(new_len);
	if (to < 0)
		return to;
	memcpy((void *)to, (const void *)old, old_len);
	arena_retag(old, old + old_len, BIT(USED), DIRTY);
	return to;
}

long rt_madvise(long addr, long len0, long advice, long a3, long a4, long a5)
{
	const long args[6] = {addr, len0, advice, a3, a4, a5};
	uint64_t a = (uint64_t)addr, len = page_up((uint64_t)len0);
	unsigned st;
	if (!EMBER_MADV_KNOWN(advice) || a % PAGE)
		return -EINVAL;
	if (!len0)
		return 0;
	if (advice == MADV_MERGEABLE) /* the host merges pages (UPM): always its call */
		return rt_forward(__NR_madvise, args[0], args[1], args[2], args[3], args[4],
				  args[5]);
	/* only advice over arena memory alone is served here; the host drops pages for the rest */
	if (len < (uint64_t)len0 || a + len < a || arena_cover(a, a + len, &st) != len)
		return fwd_range(__NR_madvise, a, a + len, args);
	if (st & (BIT(FREE) | BIT(DIRTY)))
		return -ENOMEM;
	if (advice == MADV_DONTNEED || advice == MADV_FREE)
		return arena_zero(a, a + len);
	return 0;
}

/* msync: no memory has anything to write back; over arena memory alone its holes are known here
 * (ENOMEM), the rest is the host's */
long rt_msync(long addr, long len0, long flags, long a3, long a4, long a5)
{
	const long args[6] = {addr, len0, flags, a3, a4, a5};
	uint64_t a = (uint64_t)addr, len = page_up((uint64_t)len0);
	unsigned st;
	if (a % PAGE || flags & ~(long)(MS_ASYNC | MS_SYNC | MS_INVALIDATE) ||
	    ((flags & MS_ASYNC) && (flags & MS_SYNC)))
		return -EINVAL;
	if (len < (uint64_t)len0 || a + len < a || arena_cover(a, a + len, &st) != len)
		return fwd_range(__NR_msync, a, a + len, args);
	return st & (BIT(FREE) | BIT(DIRTY)) ? -ENOMEM : 0;
}

/* mincore is the host's (it knows which pages hold memory), but the arena's free memory, mapped
 * for the host, is not for the program: ENOMEM there */
long rt_mincore(long addr, long len0, long vec, long a3, long a4, long a5)
{
	uint64_t a = (uint64_t)addr, len = page_up((uint64_t)len0);
	unsigned st = 0;
	if (a % PAGE == 0 && len >= (uint64_t)len0 && a + len > a && arena_cover(a, a + len, &st) &&
	    (st & (BIT(FREE) | BIT(DIRTY))))
		return -ENOMEM;
	return rt_forward(__NR_mincore, addr, len0, vec, a3, a4, a5);
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
		if ((uint64_t)rt_own(__NR_brk, top, 0, 0) != top) {
			top = new_end;
			if ((uint64_t)rt_own(__NR_brk, top, 0, 0) != top &&
			    (!arena_release_free() || (uint64_t)rt_own(__NR_brk, top, 0, 0) != top))
				return (long)cur;
		}
		c->brk_top = top;
	}
	/* down over a heap the host may have unmapped parts of: it takes the heap above the new
	 * break back, so that growing again maps fresh pages there */
	if (new_end < old_end && c->brk_hole) {
		if ((uint64_t)rt_own(__NR_brk, new_end, 0, 0) != new_end)
			return (long)cur;
		c->brk_top = new_end;
		if (c->brk_dirty > new_end)
			c->brk_dirty = new_end;
		if (new_end <= c->brk_hole)
			c->brk_hole = 0;
	}
	/* pages given back by an earlier shrink read as zero when the heap grows over them */
	uint64_t dirty = c->brk_dirty < new_end ? c->brk_dirty : new_end;
	if (old_end < dirty) {
		if (dirty - old_end <= 256 * 1024)
			memset((void *)old_end, 0, dirty - old_end);
		else if (rt_own(__NR_madvise, old_end, dirty - old_end, MADV_DONTNEED))
			return (long)cur;
	}
	if (new_end > c->brk_dirty)
		c->brk_dirty = new_end;
	c->brk_cur = want;
	return (long)want;
}
