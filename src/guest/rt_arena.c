/* The in-guest runtime's arena: a sorted table of ranges the host made writable, each used, free
 * (reads as zero) or dirty (used once, zeroed before it is handed out again). */
#include <asm/unistd.h>

#include "rt_arena.h"

#define ENOMEM	      12
#define MADV_DONTNEED 4

/* used memory larger than this is given back to the host to be zeroed, not cleared here: the
 * host drops the pages, which costs one exit but neither touches nor keeps them */
#define ZERO_INLINE (256 * 1024ULL)
#define SEG_MAX	    (EMBER_RT_MAP_SIZE / sizeof(struct ember_rt_seg))

static struct ember_rt_seg *const seg = (struct ember_rt_seg *)EMBER_RT_MAP;

long rt_own(long nr, uint64_t a0, uint64_t a1, uint64_t a2)
{
	RT_CTL->internal = 1;
	long r = rt_hc_syscall(nr, (long)a0, (long)a1, (long)a2, 0, 0, 0);
	RT_CTL->internal = 0;
	return r;
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

uint64_t arena_cover(uint64_t a, uint64_t b, unsigned *states)
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

int arena_prepare(uint64_t a, uint64_t b)
{
	return split(a) || split(b) ? -ENOMEM : 0;
}

int arena_retag(uint64_t a, uint64_t b, unsigned from, uint64_t to)
{
	if (arena_prepare(a, b))
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

long arena_zero(uint64_t a, uint64_t b)
{
	for (uint64_t i = first_above(a), n = nseg(); i < n && seg[i].start < b; i++) {
		if (seg[i].state == FREE)
			continue;
		uint64_t lo = seg[i].start > a ? seg[i].start : a;
		uint64_t hi = seg[i].end < b ? seg[i].end : b;
		if (hi - lo <= ZERO_INLINE)
			memset((void *)lo, 0, hi - lo);
		else if (rt_own(__NR_madvise, lo, hi - lo, MADV_DONTNEED))
			return -ENOMEM;
	}
	return 0;
}

/* the highest run of free (or dirty) arena memory of len bytes; 0 if none */
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

/* new arena memory from the host: a step at least, else just what is needed */
static int grow(uint64_t len)
{
	uint64_t n = nseg();
	if (n + 1 >= SEG_MAX)
		return -ENOMEM;
	uint64_t want = len > EMBER_RT_ARENA_STEP ? len : EMBER_RT_ARENA_STEP;
	long a = rt_own(EMBER_SYS_ARENA, want, 0, 0);
	if (a < 0 && want > len) {
		want = len;
		a = rt_own(EMBER_SYS_ARENA, want, 0, 0);
	}
	if (a < 0)
		return -ENOMEM;
	n = nseg();
	uint64_t i = first_above((uint64_t)a);
	move(i + 1, i, n - i);
	seg[i] = (struct ember_rt_seg){(uint64_t)a, (uint64_t)a + want, FREE};
	RT_CTL->nseg = n + 1;
	merge();
	return 0;
}

long arena_alloc(uint64_t len)
{
	uint64_t a = fit(len);
	if (!a) {
		/* no run large enough: more from the host; failing that, the free runs go back to
		 * it first, so that it can place the whole request where they were */
		if (grow(len) && (!arena_release_free() || grow(len)))
			return -ENOMEM;
		if (!(a = fit(len)))
			return -ENOMEM;
	}
	if (arena_prepare(a, a + len) || arena_zero(a, a + len))
		return -ENOMEM;
	arena_retag(a, a + len, ANY_STATE, USED);
	return (long)a;
}

long arena_each_gap(long nr, uint64_t a, uint64_t b, uint64_t a2)
{
	long rc = 0;
	for (uint64_t i = first_above(a), n = nseg(); a < b; i++) {
		uint64_t next = i < n && seg[i].start < b ? seg[i].start : b;
		if (next > a && (rc = rt_forward(nr, (long)a, (long)(next - a), (long)a2, 0, 0, 0)))
			return rc;
		if (next == b)
			break;
		a = seg[i].end;
	}
	return rc;
}

int arena_give_up(uint64_t a, uint64_t b)
{
	if (arena_prepare(a, b))
		return -ENOMEM;
	for (uint64_t i = first_above(a), n = nseg(); i < n && seg[i].start < b; i++)
		if (seg[i].state != USED)
			rt_own(__NR_munmap, seg[i].start, seg[i].end - seg[i].start, 0);
	return arena_retag(a, b, ANY_STATE, 0);
}

int arena_release_free(void)
{
	int any = 0;
	for (uint64_t i = 0; i < nseg();) {
		if (seg[i].state == USED ||
		    rt_own(__NR_munmap, seg[i].start, seg[i].end - seg[i].start, 0)) {
			i++;
			continue;
		}
		move(i, i + 1, nseg() - i - 1);
		RT_CTL->nseg = nseg() - 1;
		any = 1;
	}
	return any;
}
