/* The in-guest runtime: serves the common syscalls inside the virtine, forwards the rest. */
#include <asm/unistd.h>

#include "rt.h"

#define EINVAL	  22
#define GUEST_PID 1
#define GUEST_UID EMBER_GUEST_UID

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

_Static_assert(__builtin_offsetof(struct ember_rt_cpu, self) == 0 &&
		   __builtin_offsetof(struct ember_rt_cpu, saved_rsp) == 8 &&
		   __builtin_offsetof(struct ember_rt_cpu, site) == 16 &&
		   __builtin_offsetof(struct ember_rt_cpu, forward) == 24 &&
		   __builtin_offsetof(struct ember_rt_cpu, bounce) == 32 &&
		   EMBER_RT_CPU_SIZE == 0x4000 && EMBER_HC_SYSCALL == 0x10 &&
		   EMBER_RT_FORWARD_OUT == EMBER_RT_BASE + 0x200,
	       "rt_entry.S's constants");

typedef long (*rt_fn)(long a0, long a1, long a2, long a3, long a4, long a5);

static long sys_rt_sigprocmask(long how, long set, long old, long size, long a4, long a5)
{
	(void)a4, (void)a5;
	volatile struct ember_rt_cpu *c = rt_cpu(); /* the mask of the thread on this vCPU */
	if (size != 8)
		return -EINVAL;
	uint64_t s = set ? *(const uint64_t *)set : 0, m = c->sigmask;
	if (set && how == 0)
		m |= s;
	else if (set && how == 1)
		m &= ~s;
	else if (set && how == 2)
		m = s;
	else if (set)
		return -EINVAL;
	m &= ~((1ULL << 8) | (1ULL << 18)); /* SIGKILL, SIGSTOP */
	/* a signal this unblocks is delivered as the call returns: the host's to do */
	if (c->pending & ~m)
		return RT_FORWARD;
	if (old)
		*(uint64_t *)old = c->sigmask;
	c->sigmask = m;
	return 0;
}

static long ret_tid(long a0, long a1, long a2, long a3, long a4, long a5)
{
	(void)a0, (void)a1, (void)a2, (void)a3, (void)a4, (void)a5;
	uint64_t tid = rt_cpu()->tid;
	return tid ? (long)tid : RT_CTL->pid ? (long)RT_CTL->pid : GUEST_PID;
}

/* with one thread there is nobody to yield to; with more, the host schedules them */
static long w_sched_yield(long a0, long a1, long a2, long a3, long a4, long a5)
{
	(void)a0, (void)a1, (void)a2, (void)a3, (void)a4, (void)a5;
	return RT_CTL->nthreads > 1 ? RT_FORWARD : 0;
}

static long ret_pid(long a0, long a1, long a2, long a3, long a4, long a5)
{
	(void)a0, (void)a1, (void)a2, (void)a3, (void)a4, (void)a5;
	return RT_CTL->pid ? (long)RT_CTL->pid : GUEST_PID;
}

static long ret_uid(long a0, long a1, long a2, long a3, long a4, long a5)
{
	(void)a0, (void)a1, (void)a2, (void)a3, (void)a4, (void)a5;
	return GUEST_UID;
}

static long w_clock_gettime(long a0, long a1, long a2, long a3, long a4, long a5)
{
	(void)a2, (void)a3, (void)a4, (void)a5;
	long rc = rt_clock_gettime(a0, a1);
	return rc == -EINVAL ? RT_FORWARD : rc;
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
	(void)a2, (void)a3, (void)a4, (void)a5;
	long rc = rt_clock_getres(a0, a1);
	return rc == -EINVAL ? RT_FORWARD : rc;
}

static long w_getrandom(long a0, long a1, long a2, long a3, long a4, long a5)
{
	(void)a3, (void)a4, (void)a5;
	return rt_getrandom(a0, a1, a2);
}

#define NR_MAX 512

static const rt_fn table[NR_MAX] = {
    [__NR_read] = rt_read,
    [__NR_write] = rt_write,
    [__NR_readv] = rt_readv,
    [__NR_writev] = rt_writev,
    [__NR_ioctl] = rt_ioctl,
    [__NR_pread64] = rt_file_pread,
    [__NR_lseek] = rt_file_lseek,
    [__NR_fstat] = rt_file_fstat,
    [__NR_close] = rt_file_close,
    [__NR_newfstatat] = rt_file_fstatat,
    [__NR_statx] = rt_file_statx,
    [__NR_brk] = rt_brk,
    [__NR_mmap] = rt_mmap,
    [__NR_munmap] = rt_munmap,
    [__NR_mremap] = rt_mremap,
    [__NR_mprotect] = rt_mprotect,
    [__NR_madvise] = rt_madvise,
    [__NR_msync] = rt_msync,
    [__NR_mincore] = rt_mincore,
    [__NR_rt_sigprocmask] = sys_rt_sigprocmask,
    [__NR_getpid] = ret_pid,
    [__NR_gettid] = ret_tid,
    [__NR_getuid] = ret_uid,
    [__NR_geteuid] = ret_uid,
    [__NR_getgid] = ret_uid,
    [__NR_getegid] = ret_uid,
    [__NR_sched_yield] = w_sched_yield,
    [__NR_clock_gettime] = w_clock_gettime,
    [__NR_gettimeofday] = w_gettimeofday,
    [__NR_time] = w_time,
    [__NR_clock_getres] = w_clock_getres,
    [__NR_getrandom] = w_getrandom,
};

static int in_table(uint64_t ret)
{
	const volatile uint32_t *t = (const volatile uint32_t *)EMBER_RT_SITES;
	uint64_t n = RT_CTL->nsites, lo = 0, hi = n < EMBER_RT_SITES_MAX ? n : EMBER_RT_SITES_MAX;
	while (lo < hi) {
		uint64_t mid = (lo + hi) / 2;
		if (t[mid] < ret)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && lo < EMBER_RT_SITES_MAX && t[lo] == ret;
}

/* ret is the return address of a site the host rewrote (its table at EMBER_RT_SITES). The host
 * inserts the sites of a library the program maps while threads on other vCPUs may be here: an
 * entry found is a site (one being removed was one, and a call from there gains nothing it could
 * not make itself), but a search that ran while the table moved may miss one, so a miss counts
 * only when sites_gen was even and unchanged around it. */
static int known_site(uint64_t ret)
{
	volatile uint64_t *gen = &RT_CTL->sites_gen;
	for (;;) {
		uint64_t g = __atomic_load_n(gen, __ATOMIC_ACQUIRE);
		if (in_table(ret))
			return 1;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (!(g & 1) && __atomic_load_n(gen, __ATOMIC_ACQUIRE) == g)
			return 0;
		__asm__ volatile("pause");
	}
}

/* a `call *%rax` to an address in page 0 that is no site: the program's own bug, ended as the
 * call to rax would have ended */
__attribute__((noreturn)) static void bad_call(long target)
{
	__asm__ volatile("jmp rt_badcall" : : "a"(target));
	__builtin_unreachable();
}

/* rt_efault: the call being served faulted on the program's memory; it is counted as served
 * here, none is in progress any more, and the shared state is free again */
void rt_efaulted(void)
{
	volatile struct ember_rt_cpu *me = rt_cpu();
	uint64_t nr = me->in_call - 1;
	if (nr < NR_MAX)
		((volatile uint64_t *)EMBER_RT_COUNTS)[nr]++;
	me->in_call = 0;
	rt_unlock(me);
}

/* the program's call goes to the host as it made it: from EMBER_RT_FORWARD_OUT once the
 * runtime has left (rt_entry), or from here for a call the host sent (no site to return to) */
static long hand_over(volatile struct ember_rt_cpu *me, long nr, long a0, long a1, long a2, long a3,
		      long a4, long a5)
{
	if (!me->site)
		return rt_forward(nr, a0, a1, a2, a3, a4, a5);
	me->forward = 1;
	return nr;
}

long rt_syscall(long nr, long a0, long a1, long a2, long a3, long a4, long a5)
{
	volatile struct ember_rt_ctl *c = RT_CTL;
	volatile struct ember_rt_cpu *me = rt_cpu();
	if (me->site && !known_site(me->site))
		bad_call(nr);
	rt_fn fn = nr >= 0 && nr < NR_MAX ? table[nr] : 0;
	if (!fn)
		return hand_over(me, nr, a0, a1, a2, a3, a4, a5);
	rt_lock(me);
	uint64_t forwarded = c->forwarded;
	me->in_call = (uint64_t)nr + 1; /* a fault from here on may be a bad buffer (rt_fault) */
	long r = fn(a0, a1, a2, a3, a4, a5);
	me->in_call = 0;
	/* served here, counted by number for the host; the host counts those it was handed */
	if (r != RT_FORWARD && c->forwarded == forwarded)
		((volatile uint64_t *)EMBER_RT_COUNTS)[nr]++;
	rt_unlock(me);
	return r == RT_FORWARD ? hand_over(me, nr, a0, a1, a2, a3, a4, a5) : r;
}
