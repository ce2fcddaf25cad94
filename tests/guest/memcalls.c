/* memcalls: brk and anonymous mmap/munmap/mremap/mprotect/madvise/msync after the request is
 * read, with results that do not depend on addresses, so a native run prints the same lines.
 *   memcalls        every case, one "name=value" line each
 *   memcalls light  a few small calls only (no pool growth): one exit per warm invocation
 *   memcalls wp     writes to a page made read-only: dies of SIGSEGV
 *   memcalls bounce only an mmap from a site that keeps the trapping form, and its munmap
 *   memcalls heap   the break moved down over heap pages the program unmapped, and up again */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PG   4096UL
#define RW   (PROT_READ | PROT_WRITE)
#define ANON (MAP_PRIVATE | MAP_ANONYMOUS)

static long raw(long nr, long a, long b, long c, long d, long e, long f)
{
	return syscall(nr, a, b, c, d, e, f);
}

static int zeros(const void *p, size_t n)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < n; i++)
		if (c[i])
			return 0;
	return 1;
}

static char *map(size_t n)
{
	char *p = mmap(NULL, n, RW, ANON, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* an mmap whose site keeps the trapping form (live data in the red zone around it): in guest
 * mode the host sends it to the runtime, which must keep the same memory map */
static long __attribute__((noinline)) trapped_mmap(long len, long *kept)
{
	long r = SYS_mmap, k;
	register long r10 __asm__("r10") = MAP_PRIVATE | MAP_ANONYMOUS;
	register long r8 __asm__("r8") = -1;
	register long r9 __asm__("r9") = 0;
	__asm__ volatile("movq $0x5eed, -8(%%rsp)\n\t"
			 "syscall\n\t"
			 "movq -8(%%rsp), %[k]\n\t"
			 : "+a"(r), [k] "=&r"(k)
			 : "D"(0L), "S"(len), "d"((long)RW), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	*kept = k;
	return r;
}

/* a trapping munmap of [p, p+len): 1 when rcx and r11 come back as a syscall leaves them (the
 * return address, and the flags) */
static int __attribute__((noinline)) trapped_munmap_regs(long p, long len)
{
	long r = SYS_munmap, rcx, r11, want_rcx, flags;
	__asm__ volatile(
	    "pushfq\n\t"
	    "popq %[f]\n\t"
	    "movq $0, -8(%%rsp)\n\t"
	    "leaq 1f(%%rip), %[w]\n\t"
	    "syscall\n"
	    "1:\n\t"
	    "movq %%rcx, %[c]\n\t"
	    "movq %%r11, %[e]\n\t"
	    "addq -8(%%rsp), %[c]\n\t"
	    : "+a"(r), [c] "=&r"(rcx), [e] "=&r"(r11), [w] "=&r"(want_rcx), [f] "=&r"(flags)
	    : "D"(p), "S"(len)
	    : "rcx", "r11", "memory", "cc");
	return r == 0 && rcx == want_rcx && (r11 & 0xcd5) == (flags & 0xcd5);
}

static void light(void)
{
	char *p = map(64 * 1024);
	memset(p, 0xab, 64 * 1024);
	munmap(p, 64 * 1024);
	p = map(64 * 1024);
	printf("light_reuse_zero=%d\n", p && zeros(p, 64 * 1024));
	p[0] = 1;
	char *q = mremap(p, 64 * 1024, 8 * PG, 0);
	printf("light_shrink_same=%d\n", q == p);
	munmap(q, 8 * PG);
	long cur = raw(SYS_brk, 0, 0, 0, 0, 0, 0);
	printf("light_brk_grow=%d\n",
	       raw(SYS_brk, cur + 3 * PG, 0, 0, 0, 0, 0) == cur + 3 * (long)PG);
	raw(SYS_brk, cur, 0, 0, 0, 0, 0);
}

static void every(void)
{
	/* freed memory comes back zeroed, small and large (the large one grows the pool) */
	for (size_t n = 64 * 1024; n <= 3 * 1024 * 1024; n *= 48) {
		char *p = map(n);
		memset(p, 0xcd, n);
		munmap(p, n);
		p = map(n);
		printf("reuse_zero_%zuk=%d\n", n / 1024, p && zeros(p, n));
		munmap(p, n);
	}
	/* MAP_FIXED replaces one page of three with a fresh one; NOREPLACE refuses */
	char *t = map(3 * PG);
	memset(t, 7, 3 * PG);
	char *f = mmap(t + PG, PG, RW, ANON | MAP_FIXED, -1, 0);
	printf("fixed_same=%d fixed_zero=%d fixed_kept=%d\n", f == t + PG, zeros(f, PG),
	       t[0] == 7 && t[2 * PG] == 7);
	errno = 0;
	f = mmap(t + PG, PG, RW, ANON | MAP_FIXED_NOREPLACE, -1, 0);
	printf("noreplace=%s\n", f == MAP_FAILED && errno == EEXIST ? "EEXIST" : "mapped");
	/* a hole: mprotect and madvise over it fail with ENOMEM */
	munmap(t + PG, PG);
	errno = 0;
	printf("mprotect_hole=%s\n",
	       mprotect(t, 3 * PG, PROT_READ) && errno == ENOMEM ? "ENOMEM" : "ok");
	errno = 0;
	printf("madvise_hole=%s\n",
	       madvise(t, 3 * PG, MADV_DONTNEED) && errno == ENOMEM ? "ENOMEM" : "ok");
	errno = 0;
	printf("msync_hole=%s msync=%d\n",
	       msync(t, 3 * PG, MS_SYNC) && errno == ENOMEM ? "ENOMEM" : "ok",
	       msync(t, PG, MS_ASYNC));
	/* DONTNEED reads as zero afterwards */
	int rc = madvise(t, PG, MADV_DONTNEED);
	printf("dontneed=%d dontneed_zero=%d\n", rc, zeros(t, PG));
	/* read-only, then writable again: the data stays */
	t[2 * PG] = 9;
	int ro = mprotect(t + 2 * PG, PG, PROT_READ), rw = mprotect(t + 2 * PG, PG, RW);
	printf("ro=%d rw=%d data=%d\n", ro, rw, t[2 * PG]);
	munmap(t, 3 * PG);
	/* mremap: in place when the next page is free of mappings, refused without MAYMOVE when it
	 * is not, moved with it */
	char *a = mmap(NULL, 2 * PG, RW, ANON, -1, 0);
	a[0] = 'x';
	errno = 0;
	char *b = mremap(a, PG, 2 * PG, 0);
	printf("mremap_blocked=%s\n", b == MAP_FAILED && errno == ENOMEM ? "ENOMEM" : "grew");
	b = mremap(a, PG, 4 * PG, MREMAP_MAYMOVE);
	printf("mremap_moved_kept=%d mremap_tail_zero=%d\n", b != MAP_FAILED && b[0] == 'x',
	       b != MAP_FAILED && zeros(b + 1, 4 * PG - 1));
	errno = 0;
	printf("mremap_flags=%s\n",
	       mremap(b, PG, PG, 4) == MAP_FAILED && errno == EINVAL ? "EINVAL" : "ok");
	munmap(b, 4 * PG);
	munmap(a, 2 * PG);
	/* bad arguments */
	errno = 0;
	printf("munmap_unaligned=%s\n", munmap(a + 1, PG) && errno == EINVAL ? "EINVAL" : "ok");
	errno = 0;
	printf("munmap_zero=%s\n", munmap(a, 0) && errno == EINVAL ? "EINVAL" : "ok");
	errno = 0;
	printf("mmap_zero=%s\n",
	       mmap(NULL, 0, RW, ANON, -1, 0) == MAP_FAILED && errno == EINVAL ? "EINVAL" : "ok");
	errno = 0;
	printf("mprotect_unaligned=%s\n",
	       raw(SYS_mprotect, (long)a + 1, PG, RW, 0, 0, 0) && errno == EINVAL ? "EINVAL"
										  : "ok");
	/* reserved first, made writable later */
	char *r = mmap(NULL, 4 * PG, PROT_NONE, ANON, -1, 0);
	int ok = r != MAP_FAILED && !mprotect(r, 2 * PG, RW);
	if (ok)
		r[PG] = 0;
	printf("reserve=%d\n", ok && zeros(r, 2 * PG));
	munmap(r, 4 * PG);
	/* the break: grown, written, shrunk and grown again reads as zero */
	long cur = raw(SYS_brk, 0, 0, 0, 0, 0, 0);
	long up = raw(SYS_brk, cur + 5 * PG, 0, 0, 0, 0, 0);
	memset((char *)cur, 0xee, 5 * PG);
	raw(SYS_brk, cur, 0, 0, 0, 0, 0);
	raw(SYS_brk, cur + 5 * PG, 0, 0, 0, 0, 0);
	printf("brk_grow=%d brk_regrow_zero=%d\n", up == cur + 5 * (long)PG,
	       zeros((char *)((cur + PG - 1) & ~(PG - 1)), 4 * PG));
	printf("brk_below_start=%d\n", raw(SYS_brk, 4096, 0, 0, 0, 0, 0) == cur + 5 * (long)PG);
	raw(SYS_brk, cur, 0, 0, 0, 0, 0);
	/* the heap's neighbourhood: a mapping just above the break stops it, and memory given back
	 * there is gone */
	cur = raw(SYS_brk, 0, 0, 0, 0, 0, 0);
	char *top = (char *)((cur + PG - 1) & ~(PG - 1));
	char *nb = mmap(top + 4 * PG, PG, RW, ANON | MAP_FIXED_NOREPLACE, -1, 0);
	if (nb != MAP_FAILED)
		nb[0] = 42;
	long grown = raw(SYS_brk, (long)(top + 16 * PG), 0, 0, 0, 0, 0);
	printf("brk_blocked=%d neighbour_kept=%d\n", grown == cur, nb != MAP_FAILED && nb[0] == 42);
	munmap(nb, PG);
	printf("munmap_above_brk=%d\n", munmap(top, 8 * PG));
	grown = raw(SYS_brk, cur + 2 * PG, 0, 0, 0, 0, 0);
	if (grown == cur + 2 * (long)PG)
		memset((char *)cur, 1, 2 * PG);
	printf("brk_after_munmap=%d\n", grown == cur + 2 * (long)PG);
	raw(SYS_brk, cur, 0, 0, 0, 0, 0);
	/* empty ranges, and NOREPLACE together with MAP_FIXED */
	char *e = map(2 * PG);
	printf("mprotect_empty=%d madvise_empty=%d\n", mprotect(e + PG, 0, PROT_READ),
	       madvise(e + PG, 0, MADV_DONTNEED));
	errno = 0;
	f = mmap(e, PG, RW, ANON | MAP_FIXED | MAP_FIXED_NOREPLACE, -1, 0);
	printf("fixed_noreplace=%s\n", f == MAP_FAILED && errno == EEXIST ? "EEXIST" : "mapped");
	/* a refused munmap changes nothing */
	e[0] = 5;
	errno = 0;
	rc = munmap(e, 1UL << 46);
	printf("munmap_huge=%s e_kept=%d\n", rc && errno == EINVAL ? "EINVAL" : "ok", e[0] == 5);
	munmap(e, 2 * PG);
	/* given back, then asked for again without permissions at the same place */
	char *g = map(4 * PG);
	munmap(g, 4 * PG);
	char *h = mmap(g, 4 * PG, PROT_NONE, ANON | MAP_FIXED_NOREPLACE, -1, 0);
	printf("noreplace_none=%d\n", h == g);
	if (h != MAP_FAILED)
		munmap(h, 4 * PG);
	/* a region partly made read-only and back: shrunk (its tail is gone for good, and what is
	 * mapped there next is usable), and grown over a hole (EFAULT) */
	char *s3 = map(3 * PG);
	mprotect(s3, PG, PROT_READ);
	mprotect(s3, PG, RW);
	char *s1 = mremap(s3, 3 * PG, PG, 0);
	char *nx = mmap(NULL, PG, PROT_NONE, ANON, -1, 0);
	ok = s1 == s3 && nx != MAP_FAILED && !mprotect(nx, PG, RW);
	if (ok)
		nx[0] = 1;
	printf("mixed_shrink=%d\n", ok);
	munmap(nx, PG);
	munmap(s1, PG);
	s3 = map(3 * PG);
	mprotect(s3, PG, PROT_READ);
	mprotect(s3, PG, RW);
	munmap(s3 + 2 * PG, PG);
	errno = 0;
	s1 = mremap(s3, 3 * PG, 6 * PG, MREMAP_MAYMOVE);
	printf("mixed_grow_over_hole=%s\n",
	       s1 == MAP_FAILED && errno == EFAULT ? "EFAULT" : "moved");
	munmap(s3, 3 * PG);
	/* a site that stays trapping, and its red zone */
	long kept = 0;
	long m = trapped_mmap(8 * PG, &kept);
	ok = m > 0 && zeros((void *)m, 8 * PG);
	printf("trapped_mmap=%d redzone=%d\n", ok, kept == 0x5eed);
	if (m > 0) {
		((char *)m)[0] = 1;
		printf("trapped_munmap=%d\n", munmap((void *)m, 8 * PG));
	}
}

/* pages of the heap unmapped below the break, the break moved down over them and up again:
 * fresh pages there, as Linux maps them (raw calls: musl's malloc keeps out of the way) */
static void heap(void)
{
	long b0 = raw(SYS_brk, 0, 0, 0, 0, 0, 0), b1 = b0 + 16 * (long)PG;
	long p = (b0 + (long)PG - 1) & ~((long)PG - 1);
	int grown = raw(SYS_brk, b1, 0, 0, 0, 0, 0) == b1;
	if (grown)
		memset((char *)p, 3, 8 * PG);
	int hole = grown && munmap((char *)p + 2 * PG, 4 * PG) == 0;
	int down = raw(SYS_brk, p + (long)PG, 0, 0, 0, 0, 0) == p + (long)PG;
	int up = raw(SYS_brk, b1, 0, 0, 0, 0, 0) == b1;
	int fresh = up && zeros((char *)p + PG, 8 * PG);
	if (up)
		memset((char *)p + PG, 4, 8 * PG);
	printf("heap_grown=%d hole=%d down=%d up=%d fresh=%d\n", grown, hole, down, up, fresh);
	raw(SYS_brk, b0, 0, 0, 0, 0, 0);
}

int main(int argc, char **argv)
{
	char buf[256];
	while (read(0, buf, sizeof(buf)) > 0)
		;
	if (argc > 1 && !strcmp(argv[1], "light")) {
		light();
	} else if (argc > 1 && !strcmp(argv[1], "bounce")) {
		long kept = 0, m = trapped_mmap(16 * PG, &kept);
		int ok = m > 0 && zeros((void *)m, 16 * PG);
		if (ok)
			memset((void *)m, 1, 16 * PG);
		printf("trapped_mmap=%d redzone=%d munmap=%d\n", ok, kept == 0x5eed,
		       ok ? trapped_munmap_regs(m, 16 * PG) : -1);
	} else if (argc > 1 && !strcmp(argv[1], "heap")) {
		heap();
	} else if (argc > 1 && !strcmp(argv[1], "wp")) {
		char *p = map(PG);
		mprotect(p, PG, PROT_READ);
		printf("before\n");
		fflush(stdout);
		p[0] = 1;
		printf("after\n");
	} else {
		every();
	}
	return 0;
}
