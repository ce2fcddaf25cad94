/* memfuzz: a randomized differential test of brk and the anonymous memory calls. After the
 * request is read (the snapshot point) it runs a seeded sequence of mmap, munmap, mremap,
 * mprotect, madvise, MAP_FIXED and brk calls and bad-argument calls, keeps its own table of the
 * regions it mapped with the expected content of every page, checks the pages each call touched,
 * and folds what Linux's answers must be (the call, success or the errno, a few yes/no facts,
 * the checks) into a hash. No address is ever printed or hashed, so a native run prints the same
 * line as a virtine in either --syscalls mode:
 *   memfuzz [SEED [OPS [strict] [trace]]]    memfuzz seed=S ops=N hash=XXXXXXXX bad=K
 * K counts pages whose content differed from the model (0 when the calls are right).
 * "trace" also prints a line per operation with the values it hashed (never an address):
 * diffing a native run's trace with a virtine's shows the first call answered differently.
 *
 * What Linux decides from the address layout is kept out of the hash, and the table is kept the
 * same whatever it decided:
 *   - mremap growing without MREMAP_MAYMOVE: in place only when nothing is mapped after the
 *     region, which depends on where the mappings went. Either answer is accepted; a region
 *     that grew is checked and shrunk back at once. The one case the program controls (it maps
 *     a region, unmaps its tail and grows it into that tail at once) must grow in place.
 *   - mremap needs the old range inside one VMA. Linux merges pieces split off by mprotect back
 *     only when they share an anon_vma: a region counts as one VMA ("single") while it is as
 *     mapped, or was written before mprotect split it. MAP_FIXED over part of it, or a split
 *     before its first write, make that unknown, and such a region is not grown. A region with
 *     pages of different permissions spans several VMAs for sure: growing it fails with EFAULT.
 *   - Addresses: a fresh mapping goes wherever the system puts it; only a hint naming the hole
 *     the program has just unmapped must be honoured.
 *   - The heap grows by at most 1 MiB, far from anything else natively and in a virtine.
 * Avoided: madvise(MADV_DONTNEED) over a hole and any access to unmapped memory (documented
 * differences), writes to pages that are not writable, MADV_FREE (its content is up to the
 * kernel), advice that changes VMA flags, and growing a MAP_SHARED region (past the size of its
 * shmem object Linux raises SIGBUS).
 *
 * Known differences from Linux (Ember as of this test): by default the program works around
 * them (the answer is left out of the hash and the table brought to what Linux would have
 * done; "trace" shows them as "soft"); "strict" hashes Linux's answers there too:
 *   - (fixed since, kept as a workaround until strict passes) mremap of a range spanning
 *     mappings of other permissions: it failed with EFAULT when shrinking; with --syscalls
 *     guest, a range partly in the runtime's pool went to the host whole. So unless strict, a
 *     region that ever had pages of other permissions than the rest is never given to mremap:
 *     it is shrunk with munmap and moved by hand (mmap, copy, munmap).
 *   - With --syscalls guest, a hint naming a hole that is partly free pool memory and partly
 *     not is not honoured (the mapping goes elsewhere).
 *   - madvise(MADV_DONTNEED) on MAP_SHARED|MAP_ANONYMOUS memory zeroes it (Linux keeps the
 *     shmem data). */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PG	4096L
#define RW	(PROT_READ | PROT_WRITE)
#define ANON	(MAP_PRIVATE | MAP_ANONYMOUS)
#define MAXR	64   /* live regions */
#define MAXP	512  /* pages in one region */
#define BUDGET	6144 /* pages in all regions: 24 MiB */
#define HEAPMAX 256  /* pages of heap above the first break */
#ifndef PROT_SEM
#define PROT_SEM 0x8
#endif
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif

enum { P_NONE, P_R, P_RW };
static const int prot_of[] = {PROT_NONE, PROT_READ, RW};

struct region {
	char *base;
	int n;			  /* pages */
	int single;		  /* Linux holds all of it in one VMA */
	int anon;		  /* written while single (Linux gave it an anon_vma), or shared */
	int mixed;		  /* part of it once had other permissions than the rest */
	int shared;		  /* MAP_SHARED */
	unsigned char fill[MAXP]; /* every byte of page i is fill[i] */
	unsigned char prot[MAXP]; /* P_* */
	unsigned char shm[MAXP];  /* MAP_SHARED memory: madvise(MADV_DONTNEED) keeps its data */
};

static struct region reg[MAXR];
static int nreg;

static unsigned char hfill[HEAPMAX];
static long brk0, hbase, hcur; /* the first break, the page above it, the break now */
static int hpages;	       /* pages from hbase to the break */

static uint64_t rs;
static uint32_t hash = 2166136261u;
static long bad, soft;
static int strict, trace;

/* ---- helpers ---------------------------------------------------------------------------- */

static uint64_t rnd64(void)
{
	rs ^= rs >> 12;
	rs ^= rs << 25;
	rs ^= rs >> 27;
	return rs * 2685821657736338717ULL;
}

/* 0 .. n-1 (0 when n is 0) */
static int rnd(int n)
{
	return n > 0 ? (int)(rnd64() % (uint64_t)n) : 0;
}

static int min(int a, int b)
{
	return a < b ? a : b;
}

static void tr(const char *fmt, ...)
{
	if (!trace)
		return;
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
}

/* folds v into the hash (FNV-1a over its four bytes) */
static void H(uint32_t v)
{
	for (int i = 0; i < 4; i++) {
		hash ^= (v >> (8 * i)) & 0xff;
		hash *= 16777619u;
	}
	tr(" %x", v);
}

static void note_soft(void)
{
	soft++;
	tr(" soft");
}

/* a raw system call: the result, or -errno (no libc checks in front of the kernel's) */
static long sc(long nr, long a, long b, long c, long d, long e, long f)
{
	long r = syscall(nr, a, b, c, d, e, f);
	return r == -1 ? -errno : r;
}

/* 0 for success, else the errno */
static uint32_t cls(long r)
{
	return r < 0 && r > -4096 ? (uint32_t)-r : 0;
}

static long xmmap(void *a, long len, int prot, int flags)
{
	return sc(SYS_mmap, (long)a, len, prot, flags, -1, 0);
}

static long xmunmap(void *a, long len)
{
	return sc(SYS_munmap, (long)a, len, 0, 0, 0, 0);
}

static long xmprotect(void *a, long len, int prot)
{
	return sc(SYS_mprotect, (long)a, len, prot, 0, 0, 0);
}

static long xmremap(void *a, long old_len, long new_len, int flags)
{
	return sc(SYS_mremap, (long)a, old_len, new_len, flags, 0, 0);
}

static long xmadvise(void *a, long len, int advice)
{
	return sc(SYS_madvise, (long)a, len, advice, 0, 0, 0);
}

static long xbrk(long a)
{
	return sc(SYS_brk, a, 0, 0, 0, 0, 0);
}

/* a length of k pages, sometimes short of the last page by up to a page less one byte (the
 * calls round it up) */
static long plen(int k)
{
	return k * PG - (rnd(4) ? 0 : rnd(PG));
}

/* the number of pages of the page at p that differ from the byte b (0 or 1) */
static int page_bad(const char *p, unsigned char b)
{
	const uint64_t want = b * 0x0101010101010101ULL;
	const uint64_t *w = (const uint64_t *)p;
	for (size_t i = 0; i < PG / sizeof(*w); i++)
		if (w[i] != want)
			return 1;
	return 0;
}

static int live(void)
{
	int n = 0;
	for (int i = 0; i < nreg; i++)
		n += reg[i].n;
	return n;
}

/* the permission all pages share, or -1 */
static int uniform(const struct region *g)
{
	for (int i = 1; i < g->n; i++)
		if (g->prot[i] != g->prot[0])
			return -1;
	return g->prot[0];
}

/* pages of g that differ from the model; the readable ones only */
static int verify(const struct region *g)
{
	int n = 0;
	for (int i = 0; i < g->n; i++) {
		if (g->prot[i] == P_NONE || !page_bad(g->base + i * PG, g->fill[i]))
			continue;
		n++;
		tr(" BAD(region %d page %d/%d want %02x got %02x)", (int)(g - reg), i, g->n,
		   g->fill[i], (unsigned char)g->base[i * PG]);
	}
	return n;
}

static int verify_heap(void)
{
	int n = 0;
	for (int i = 0; i < hpages; i++) {
		if (!page_bad((const char *)hbase + i * PG, hfill[i]))
			continue;
		n++;
		tr(" BAD(heap page %d/%d want %02x)", i, hpages, hfill[i]);
	}
	return n;
}

/* folds a check's result into the hash and the count */
static void checked(int nbad)
{
	bad += nbad;
	H(nbad == 0);
}

/* a fresh region of n zero pages with permission p */
static struct region *add(long base, int n, int p, int shared)
{
	struct region *g = &reg[nreg++];
	g->base = (char *)base;
	g->n = n;
	g->single = 1;
	g->anon = shared;
	g->mixed = 0;
	g->shared = shared;
	memset(g->fill, 0, sizeof(g->fill));
	memset(g->prot, p, sizeof(g->prot));
	memset(g->shm, shared, sizeof(g->shm));
	return g;
}

static void drop(struct region *g)
{
	*g = reg[--nreg];
}

/* Linux gives a private VMA its anon_vma at the first write fault: a region still in one VMA is
 * written once (with the byte it holds) so that pieces mprotect splits off later merge back */
static void touch(struct region *g)
{
	if (g->anon || !g->single || uniform(g) != P_RW)
		return;
	*(volatile char *)g->base = (char)g->fill[0];
	g->anon = 1;
}

/* fill (if >= 0) and permission (if >= 0) of [s, s+k); a fresh page (fill 0 and a permission)
 * is private memory */
static void set_pages(struct region *g, int s, int k, int fill, int p)
{
	for (int i = s; i < s + k; i++) {
		if (fill >= 0 && p >= 0)
			g->shm[i] = 0;
		if (fill >= 0)
			g->fill[i] = (unsigned char)fill;
		if (p >= 0)
			g->prot[i] = (unsigned char)p;
	}
}

/* writes byte b to the writable pages of [s, s+k) */
static void write_pages(struct region *g, int s, int k, unsigned char b)
{
	for (int i = s; i < s + k; i++) {
		if (g->prot[i] != P_RW)
			continue;
		memset(g->base + i * PG, b, PG);
		g->fill[i] = b;
	}
}

/* takes [s, s+k) out of the table: the region shrinks, is cut in two or goes */
static void cut(struct region *g, int s, int k)
{
	int n = g->n;
	if (s == 0 && k == n) {
		drop(g);
	} else if (s == 0) {
		memmove(g->fill, g->fill + k, n - k);
		memmove(g->prot, g->prot + k, n - k);
		memmove(g->shm, g->shm + k, n - k);
		g->base += k * PG;
		g->n = n - k;
	} else if (s + k == n) {
		g->n = s;
	} else {
		struct region *t = &reg[nreg++];
		*t = *g;
		t->base = g->base + (s + k) * PG;
		t->n = n - s - k;
		memmove(t->fill, g->fill + s + k, t->n);
		memmove(t->prot, g->prot + s + k, t->n);
		memmove(t->shm, g->shm + s + k, t->n);
		g->n = s;
	}
}

/* the region now at base holds m pages, the ones past the old end zero with the permission of
 * the old last page */
static void adopt(struct region *g, long base, int m)
{
	set_pages(g, g->n, m - g->n, 0, g->prot[g->n - 1]);
	g->base = (char *)base;
	g->n = m;
}

static struct region *pick(void)
{
	return nreg ? &reg[rnd(nreg)] : NULL;
}

/* a range of pages in a region of n: mostly short */
static void range(int n, int *s, int *k)
{
	*k = 1 + (rnd(2) ? rnd(n) : rnd(min(n, 8)));
	*s = rnd(n - *k + 1);
}

static int map_size(void)
{
	int v = rnd(10);
	return 1 + (v < 5 ? rnd(16) : v < 8 ? rnd(64) : rnd(300));
}

/* ---- the operations --------------------------------------------------------------------- */

static void op_unmap(void);

static void op_map(void)
{
	int n = map_size();
	if (nreg == MAXR || live() + n > BUDGET) {
		op_unmap();
		return;
	}
	tr(" map");
	int v = rnd(100), p = P_RW, flags = ANON, later = 0;
	long len = n * PG;
	if (v < 55) {
	} else if (v < 65) {
		flags = MAP_SHARED | MAP_ANONYMOUS;
	} else if (v < 72) {
		flags |= rnd(2) ? MAP_POPULATE : MAP_NORESERVE;
	} else if (v < 78) {
		len = plen(n);
	} else if (v < 88) {
		p = P_NONE; /* reserved first, made writable (all of it or a first part) at once */
		later = rnd(2) ? n : 1 + rnd(n);
	} else if (v < 94) {
		p = P_R;
	} else {
		p = P_NONE;
	}
	H(1);
	H((uint32_t)v);
	long r = xmmap(NULL, len, prot_of[p], flags);
	H(cls(r));
	if (cls(r))
		return;
	struct region *g = add(r, n, p, !(flags & MAP_PRIVATE));
	if (later) {
		H(cls(xmprotect(g->base, later * PG, RW)));
		set_pages(g, 0, later, -1, P_RW);
		if (later < n)
			g->single = 0; /* split before any write: the pieces may not merge back */
	}
	touch(g);
	checked(verify(g));
}

static void op_unmap(void)
{
	struct region *g = pick();
	if (!g) {
		op_map();
		return;
	}
	tr(" unmap");
	int v = rnd(10), n = g->n, s = 0, k = n;
	if (v < 4 || n < 2) {
	} else if (v < 6) {
		k = 1 + rnd(n - 1);
	} else if (v < 8 || n < 3 || nreg == MAXR) {
		s = 1 + rnd(n - 1);
		k = n - s;
	} else {
		s = 1 + rnd(n - 2);
		k = 1 + rnd(n - 1 - s);
	}
	H(2);
	H(s == 0 && k == n);
	H(cls(xmunmap(g->base + s * PG, plen(k))));
	int whole = s == 0 && k == n, split = s > 0 && s + k < n;
	cut(g, s, k);
	if (!whole)
		checked(verify(g));
	if (split)
		checked(verify(&reg[nreg - 1]));
}

static void op_write(void)
{
	struct region *g = pick();
	if (!g)
		return;
	tr(" write");
	int s, k;
	range(g->n, &s, &k);
	write_pages(g, s, k, (unsigned char)(1 + rnd(255)));
	H(3);
	checked(verify(g));
}

/* Known differences (see the top): mremap of a region with pages of other permissions is
 * answered wrongly when it shrinks, and in guest mode mremap of a region that once had some can
 * act on pool memory behind the runtime's back. Unless strict, the program does what Linux's
 * mremap would have done with other calls there. */
static int remap_known_wrong(const struct region *g)
{
	return !strict && (g->mixed || uniform(g) < 0);
}

/* mremap to fewer pages: Linux always shrinks in place (unmapping the tail), whatever spans */
static void op_shrink(void)
{
	struct region *g = pick();
	if (!g || g->n < 2)
		return;
	tr(" shrink");
	int n = g->n, m = 1 + rnd(n - 1), flags = rnd(2) ? MREMAP_MAYMOVE : 0;
	long old_len = plen(n), new_len = plen(m);
	H(4);
	if (remap_known_wrong(g)) {
		note_soft();
		H(cls(xmunmap(g->base + m * PG, (n - m) * PG)));
		g->n = m;
		checked(verify(g));
		return;
	}
	long r = xmremap(g->base, old_len, new_len, flags);
	H(cls(r));
	H(r == (long)g->base);
	if (r == (long)g->base || r == -EFAULT) {
		if (r == -EFAULT) /* wrong (strict only): keep the table as Linux has it */
			xmunmap(g->base + m * PG, (n - m) * PG);
		g->n = m;
	}
	checked(verify(g));
}

/* may the region grow? It must be one VMA for Linux, or span some for sure (then EFAULT) */
static struct region *growable(int *room)
{
	struct region *g = pick();
	if (!g || g->shared)
		return NULL;
	if (uniform(g) >= 0 && !g->single)
		return NULL;
	*room = min(min(MAXP - g->n, BUDGET - live()), 64);
	return *room > 0 ? g : NULL;
}

/* mremap to more pages with MREMAP_MAYMOVE: in place or moved, the content kept, the rest zero;
 * EFAULT when the region spans mappings of other permissions */
static void op_grow_move(void)
{
	int room;
	struct region *g = growable(&room);
	if (!g)
		return;
	tr(" grow_move");
	int n = g->n, m = n + 1 + rnd(room), u = uniform(g);
	long old_len = plen(n), new_len = plen(m);
	H(5);
	if (u >= 0 && remap_known_wrong(g)) {
		note_soft();
		if (u != P_RW) {
			H(0);
			return;
		}
		/* moved by hand, as Linux moves it */
		long q = xmmap(NULL, m * PG, RW, ANON);
		H(cls(q));
		if (!cls(q)) {
			memcpy((void *)q, g->base, n * PG);
			H(cls(xmunmap(g->base, n * PG)));
			adopt(g, q, m);
			g->mixed = 0;
			g->single = 1;
		}
	} else {
		long r = xmremap(g->base, old_len, new_len, MREMAP_MAYMOVE);
		H(cls(r));
		if (!cls(r))
			adopt(g, r, m);
	}
	touch(g);
	checked(verify(g));
}

/* mremap to more pages without MREMAP_MAYMOVE: grows in place when nothing is mapped after the
 * region, which depends on the layout: either answer is right (never EFAULT for one VMA), a
 * region that grew is checked and shrunk back; EFAULT when it spans mappings of other
 * permissions */
static void op_grow_nomove(void)
{
	int room;
	struct region *g = growable(&room);
	if (!g)
		return;
	int n = g->n, m = n + 1 + rnd(room), u = uniform(g);
	if (u >= 0 && remap_known_wrong(g))
		return;
	tr(" grow_nomove");
	long r = xmremap(g->base, n * PG, m * PG, 0);
	H(6);
	if (u < 0) {
		H(cls(r)); /* EFAULT */
		if (!cls(r))
			adopt(g, r, m);
		checked(verify(g));
		return;
	}
	int ok = 1;
	if (r == (long)g->base) {
		adopt(g, r, m);
		int nbad = verify(g);
		bad += nbad;
		ok = nbad == 0;
		if (xmremap(g->base, m * PG, n * PG, 0) == (long)g->base)
			g->n = n;
		else
			ok = 0;
	} else if (r != -ENOMEM) {
		ok = 0;
	}
	H(ok);
	checked(verify(g));
}

/* a region mapped, its tail unmapped and grown into at once without MREMAP_MAYMOVE: the tail is
 * free, so it must grow in place, and read as zero though it was written before */
static void op_grow_inplace(void)
{
	int n = 1 + rnd(64), k = 1 + rnd(32), j = 1 + rnd(k);
	if (nreg == MAXR || live() + n + k > BUDGET)
		return;
	tr(" grow_inplace");
	H(7);
	long r = xmmap(NULL, (n + k) * PG, RW, ANON);
	H(cls(r));
	if (cls(r))
		return;
	struct region *g = add(r, n + k, P_RW, 0);
	write_pages(g, 0, n + k, (unsigned char)(1 + rnd(255)));
	touch(g);
	H(cls(xmunmap(g->base + n * PG, k * PG)));
	g->n = n;
	long q = xmremap(g->base, n * PG, plen(n + j), 0);
	H(cls(q));
	H(q == r);
	if (q == r)
		adopt(g, r, n + j);
	checked(verify(g));
}

/* mprotect of part or all of a region to p */
static void op_protect(int p)
{
	struct region *g = pick();
	if (!g)
		return;
	tr(" protect%d", p);
	int s, k;
	range(g->n, &s, &k);
	H(8);
	H((uint32_t)p);
	H(cls(xmprotect(g->base + s * PG, plen(k), prot_of[p])));
	set_pages(g, s, k, -1, p);
	if (k == g->n)
		g->mixed = 0;
	else if (p != P_RW)
		g->mixed = 1;
	if (k < g->n && !g->anon)
		g->single = 0;
	touch(g);
	checked(verify(g));
}

static void op_dontneed(void)
{
	struct region *g = pick();
	if (!g || (g->shared && !strict))
		return;
	tr(" dontneed");
	int s, k;
	range(g->n, &s, &k);
	H(9);
	H(cls(xmadvise(g->base + s * PG, plen(k), MADV_DONTNEED)));
	for (int i = s; i < s + k; i++)
		if (!g->shm[i]) /* shmem keeps the data */
			g->fill[i] = 0;
	checked(verify(g));
}

/* advice that changes neither the content nor the VMA's flags */
static void op_advise(void)
{
	static const int adv[] = {MADV_NORMAL, MADV_WILLNEED, MADV_COLD, MADV_PAGEOUT};
	struct region *g = pick();
	if (!g)
		return;
	tr(" advise");
	int s, k, a = adv[rnd(4)];
	range(g->n, &s, &k);
	H(10);
	H((uint32_t)a);
	H(cls(xmadvise(g->base + s * PG, plen(k), a)));
	checked(verify(g));
}

/* MAP_FIXED over part of a region: fresh zero pages there, the rest kept */
static void op_fixed(void)
{
	struct region *g = pick();
	if (!g)
		return;
	tr(" fixed");
	int s, k, p = rnd(5) ? P_RW : P_NONE;
	range(g->n, &s, &k);
	char *a = g->base + s * PG;
	H(11);
	H((uint32_t)p);
	long r = xmmap(a, plen(k), prot_of[p], ANON | MAP_FIXED);
	H(cls(r));
	H(r == (long)a);
	set_pages(g, s, k, 0, p);
	g->single = 0;
	if (k < g->n && p != P_RW)
		g->mixed = 1;
	checked(verify(g));
}

/* MAP_FIXED_NOREPLACE over part of a region: EEXIST, nothing changed */
static void op_noreplace(void)
{
	struct region *g = pick();
	if (!g)
		return;
	tr(" noreplace");
	int s, k;
	range(g->n, &s, &k);
	char *a = g->base + s * PG;
	H(12);
	long r = xmmap(a, k * PG, RW, ANON | MAP_FIXED_NOREPLACE);
	H(cls(r));
	if (!cls(r) && r != (long)a)
		xmunmap((void *)r, k * PG); /* a kernel that ignores the flag */
	checked(verify(g));
}

/* a hole unmapped in a region and mapped again at once, with MAP_FIXED, MAP_FIXED_NOREPLACE or
 * as a hint: the hole is free, so each must map it */
static void op_refill(void)
{
	struct region *g = pick();
	if (!g || g->n < 3 || nreg == MAXR)
		return;
	tr(" refill");
	int s = 1 + rnd(g->n - 2), k = 1 + rnd(g->n - 1 - s), v = rnd(3);
	char *a = g->base + s * PG;
	static const int how[] = {MAP_FIXED, MAP_FIXED_NOREPLACE, 0};
	H(13);
	H((uint32_t)v);
	H(cls(xmunmap(a, k * PG)));
	long r = xmmap(a, plen(k), RW, ANON | how[v]);
	int hashed = strict || how[v] || !g->mixed;
	if (!hashed && !cls(r) && r != (long)a) {
		note_soft();
		xmunmap((void *)r, k * PG);
		r = xmmap(a, k * PG, RW, ANON | MAP_FIXED);
	}
	H(cls(r));
	if (hashed)
		H(r == (long)a);
	if (r == (long)a) {
		set_pages(g, s, k, 0, P_RW);
		g->single = 0;
		checked(verify(g));
		return;
	}
	if (!cls(r))
		xmunmap((void *)r, k * PG);
	cut(g, s, k); /* the hole stays */
	checked(verify(g));
	checked(verify(&reg[nreg - 1]));
}

static void op_brk(void)
{
	int v = rnd(10);
	tr(" brk");
	H(14);
	if (v < 4 && hpages < HEAPMAX) {
		int k = hpages + 1 + rnd(min(32, HEAPMAX - hpages));
		long want = hbase + k * PG, r = xbrk(want);
		H(1);
		H(r == want);
		if (r == want) {
			memset(hfill + hpages, 0, k - hpages);
			hpages = k;
			hcur = want;
		}
	} else if (v < 7) {
		int k = rnd(hpages + 1);
		long want = hbase + k * PG, r = xbrk(want);
		H(2);
		H(r == want);
		if (r == want) {
			hpages = k;
			hcur = want;
		}
	} else if (v < 9) {
		if (hpages) {
			int s, k;
			range(hpages, &s, &k);
			unsigned char b = (unsigned char)(1 + rnd(255));
			memset((char *)hbase + s * PG, b, k * PG);
			memset(hfill + s, b, k);
		}
		H(3);
	} else {
		H(4); /* a query, and a break below the start: both answer the break */
		H(xbrk(0) == hcur);
		H(xbrk(1) == hcur);
	}
	checked(verify_heap());
}

/* calls with bad or odd arguments: the answer is hashed; none changes the table */
static void op_bad(void)
{
	struct region *g = pick();
	if (!g)
		return;
	char *a = g->base;
	int c = rnd(23);
	long r = 0;
	tr(" bad%d", c);
	switch (c) {
	case 0:
		r = xmunmap(a + 1, PG); /* EINVAL */
		break;
	case 1:
		r = xmunmap(a, 0); /* EINVAL */
		break;
	case 2:
		r = xmunmap(a, -PG); /* EINVAL */
		break;
	case 3:
		r = xmmap(NULL, 0, RW, ANON); /* EINVAL */
		break;
	case 4:
		r = xmmap(NULL, PG, RW, MAP_ANONYMOUS); /* EINVAL: neither private nor shared */
		break;
	case 5:
		r = xmmap(a + 1, PG, RW, ANON | MAP_FIXED); /* EINVAL */
		break;
	case 6:
		r = xmmap(NULL, -PG, RW, ANON); /* ENOMEM */
		break;
	case 7:
		r = xmprotect(a + 1, PG, PROT_READ); /* EINVAL */
		break;
	case 8:
		r = xmprotect(a, PG, 0x10); /* EINVAL */
		break;
	case 9:
		r = xmprotect(a, 0, PROT_READ); /* 0, nothing changed */
		break;
	case 10:
		r = xmremap(a, PG, PG, 8); /* EINVAL */
		break;
	case 11:
		r = xmremap(a + 1, PG, PG, 0); /* EINVAL */
		break;
	case 12:
		r = xmremap(a, PG, 0, MREMAP_MAYMOVE); /* EINVAL */
		break;
	case 13:
		r = xmremap(a, PG, 2 * PG, MREMAP_FIXED); /* EINVAL: without MREMAP_MAYMOVE */
		break;
	case 14:
		r = xmremap(a, PG, PG, MREMAP_DONTUNMAP); /* EINVAL: without MREMAP_MAYMOVE */
		break;
	case 15:
		r = xmadvise(a + 1, PG, MADV_DONTNEED); /* EINVAL */
		break;
	case 16:
		r = xmadvise(a, 0, MADV_DONTNEED); /* 0 */
		break;
	case 17:
		r = xmmap(NULL, -1, RW, ANON); /* ENOMEM: the length rounds up to 0 */
		break;
	case 18:
		r = xmmap(NULL, PG, RW | PROT_SEM, ANON); /* mapped: mmap ignores other bits */
		break;
	case 19:
		r = xmprotect(a, PG, prot_of[g->prot[0]] | PROT_SEM); /* 0 */
		break;
	case 20:
		r = xmadvise(a, PG, 12345); /* EINVAL */
		break;
	case 21:
		/* EINVAL for a private mapping (a shared one would be duplicated) */
		r = g->shared ? -EINVAL : xmremap(a, 0, PG, MREMAP_MAYMOVE);
		break;
	case 22:
		r = xmmap(a + 1, PG, RW, ANON); /* mapped: the hint is only a hint */
		break;
	}
	H(15);
	H((uint32_t)c);
	H(cls(r));
	if ((c == 18 || c == 22) && !cls(r))
		xmunmap((void *)r, PG);
	checked(verify(g));
}

static int check_all(void)
{
	int n = verify_heap();
	for (int i = 0; i < nreg; i++)
		n += verify(&reg[i]);
	return n;
}

int main(int argc, char **argv)
{
	char buf[256];
	while (read(0, buf, sizeof(buf)) > 0)
		;
	unsigned long seed = argc > 1 ? strtoul(argv[1], NULL, 0) : 1;
	long ops = argc > 2 ? strtol(argv[2], NULL, 0) : 3000;
	for (int i = 3; i < argc; i++) {
		strict |= !strcmp(argv[i], "strict");
		trace |= !strcmp(argv[i], "trace");
	}
	if (trace) /* what a crash leaves is all written */
		setvbuf(stdout, NULL, _IONBF, 0);
	rs = seed * 0x9e3779b97f4a7c15ULL + 0x2545f4914f6cdd1dULL;
	if (!rs)
		rs = 1;
	brk0 = hcur = xbrk(0);
	hbase = (brk0 + PG - 1) & ~(PG - 1);

	/* weights of the operations, out of 100 */
	static const unsigned char w[] = {15, 10, 12, 5, 6, 3, 3, 6, 6, 2, 7, 2, 4, 2, 5, 7, 5};
	for (long i = 0; i < ops; i++) {
		tr("%ld:", i);
		int x = rnd(100), op = 0;
		while (x >= w[op])
			x -= w[op++];
		switch (op) {
		case 0:
			op_map();
			break;
		case 1:
			op_unmap();
			break;
		case 2:
			op_write();
			break;
		case 3:
			op_shrink();
			break;
		case 4:
			op_grow_move();
			break;
		case 5:
			op_grow_nomove();
			break;
		case 6:
			op_grow_inplace();
			break;
		case 7:
			op_protect(P_R);
			break;
		case 8:
			op_protect(P_RW);
			break;
		case 9:
			op_protect(P_NONE);
			break;
		case 10:
			op_dontneed();
			break;
		case 11:
			op_advise();
			break;
		case 12:
			op_fixed();
			break;
		case 13:
			op_noreplace();
			break;
		case 14:
			op_refill();
			break;
		case 15:
			op_brk();
			break;
		default:
			op_bad();
			break;
		}
		if (i % 200 == 199) {
			tr(" all");
			checked(check_all());
		}
		tr("\n");
	}
	tr("end:");
	checked(check_all());
	while (nreg) {
		struct region *g = &reg[nreg - 1];
		H(cls(xmunmap(g->base, g->n * PG)));
		drop(g);
	}
	H(xbrk(brk0) == brk0);
	tr(" soft=%ld\n", soft);
	printf("memfuzz seed=%lu ops=%ld hash=%08x bad=%ld\n", seed, ops, (unsigned)hash, bad);
	return 0;
}
