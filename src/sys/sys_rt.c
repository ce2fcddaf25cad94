/* The host side of the in-guest runtime: its control block, its memory at load, the request and
 * output buffers, the calls sent to it from trapping sites, as the guest mode's row of the
 * runtime's table (sys_rt.h). Every value read back is checked. */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <x86intrin.h>

#include "fd/fd.h"

_Static_assert(sizeof(struct ember_rt_ctl) <= EMBER_RT_BOUNCE - EMBER_RT_CTL,
	       "the control block overlaps the bounce slot");

static uint64_t tsc_mult;
static const uint32_t tsc_shift = 32;
static pthread_once_t calibrated = PTHREAD_ONCE_INIT;

static uint64_t ns_of(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* ns per TSC tick, as a 32.32 fixed-point number, from 20 ms of both clocks side by side */
static void calibrate(void)
{
	uint64_t n0 = ns_of(CLOCK_MONOTONIC_RAW), t0 = __rdtsc(), n1, t1;
	do {
		n1 = ns_of(CLOCK_MONOTONIC_RAW);
		t1 = __rdtsc();
	} while (n1 - n0 < 20000000ULL);
	tsc_mult = (uint64_t)(((unsigned __int128)(n1 - n0) << tsc_shift) / (t1 - t0));
}

static void rt_prepare(void)
{
	pthread_once(&calibrated, calibrate);
}

struct ember_rt_ctl *sys_rt_ctl(struct sys_state *st)
{
	struct ember_rt_ctl *c = vm_guest(st->vm, EMBER_RT_CTL, sizeof(*c));
	return c && c->magic == EMBER_RT_MAGIC ? c : NULL;
}

/* vCPU cpu's area of the runtime (abi.h) */
struct ember_rt_cpu *sys_rt_area(struct sys_state *st, int cpu)
{
	if (cpu < 0 || cpu >= EMBER_CPUS_MAX)
		return NULL;
	return vm_guest(st->vm, EMBER_RT_CPU(cpu), sizeof(struct ember_rt_cpu));
}

static int rt_setup(struct sys_state *st)
{
	struct ember_rt_ctl *c = sys_rt_ctl(st);
	struct ember_rt_seg *seg = vm_guest(st->vm, EMBER_RT_MAP, sizeof(*seg));
	if (!c || !seg)
		return -1;
	for (int i = 0; i < st->proc.cpus; i++) {
		struct ember_rt_cpu *a = sys_rt_area(st, i);
		if (!a)
			return -1;
		memset(a, 0, sizeof(*a));
		a->self = EMBER_RT_CPU(i);
	}
	sys_rt_area(st, 0)->tid = 1;
	c->nthreads = 1;
	uint64_t start = st->brk_cur;
	c->brk_start = c->brk_cur = start;
	c->brk_dirty = (start + EMBER_PAGE_SIZE - 1) & ~(EMBER_PAGE_SIZE - 1);
	/* the heap is writable a step beyond the break from the start (an untouched page costs
	 * nothing), so that a small heap grows without an exit */
	uint64_t top = c->brk_dirty + EMBER_RT_BRK_STEP;
	c->brk_top = (uint64_t)sys_brk_to(st, top) == top ? top : c->brk_dirty;
	c->nseg = 0;
	/* a first arena, so that a function's mmap calls need no exit unless it wants more; a small
	 * machine that has no room for it starts without */
	long a = sys_arena_grow(st, EMBER_RT_ARENA_STEP);
	if (a > 0) {
		*seg = (struct ember_rt_seg){(uint64_t)a, (uint64_t)a + EMBER_RT_ARENA_STEP,
					     EMBER_RT_SEG_FREE};
		c->nseg = 1;
	}
	return 0;
}

static int from_runtime(const struct vm_regs *r)
{
	return r->rip > EMBER_RT_BASE && r->rip <= EMBER_RT_BASE + EMBER_RT_CODE_SIZE;
}

static int rt_own_call(struct sys_state *st, const struct vm_regs *r)
{
	struct ember_rt_ctl *c;
	return from_runtime(r) && (c = sys_rt_ctl(st)) && c->internal == 1;
}

static int rt_bounce(struct sys_state *st, struct vm_regs *r)
{
	static const uint64_t owned[] = EMBER_RT_OWNED;
	int hit = 0;
	for (size_t i = 0; i < sizeof(owned) / sizeof(owned[0]); i++)
		hit |= r->rax == owned[i];
	/* the runtime's own forwards (from its code) are served here, not sent back */
	if (!hit || from_runtime(r))
		return 0;
	struct ember_rt_cpu *a = sys_rt_area(st, st->pr.cur_cpu);
	if (!a)
		return 0;
	uint64_t *slot = a->bounce;
	slot[0] = r->rip; /* past the `out` */
	slot[1] = r->rsp;
	slot[2] = r->rflags; /* a syscall leaves rcx = rip and r11 = rflags: so does the bounce */
	r->rip = EMBER_RT_BOUNCE_ENTRY;
	return 1;
}

/* the next piece of the request into the runtime's buffer */
static void refill(struct sys_state *st, struct ember_rt_ctl *c)
{
	struct sys_state *in = sys_in_of(st);
	size_t n = st->in_shared ? 0 : in->in_len - in->in_pos; /* shared: the host's reads */
	if (n > EMBER_RT_IN_SIZE)
		n = EMBER_RT_IN_SIZE;
	if (n)
		vm_copy_to(st->vm, EMBER_RT_IN, in->in + in->in_pos, n);
	in->in_pos += n;
	c->in_len = n;
	c->in_pos = 0;
	c->in_eof = !st->in_shared && in->in_pos == in->in_len;
}

static void rt_give_back(struct sys_state *st)
{
	struct ember_rt_ctl *c = sys_rt_ctl(st);
	struct sys_state *in = sys_in_of(st);
	if (!c || c->in_pos > c->in_len || c->in_len > EMBER_RT_IN_SIZE)
		return;
	size_t held = c->in_len - c->in_pos;
	in->in_pos = held <= in->in_pos ? in->in_pos - held : 0;
	c->in_len = c->in_pos = 0;
	c->in_eof = 0;
}

/* 32 bytes of host entropy never handed out before: read from getrandom a page at a time, per
 * thread, so that an invocation costs no system call for it. A forked child starts its own
 * page: it must not hand out the bytes its parent will. */
static __thread uint8_t key_bytes[4096];
static __thread size_t key_left;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static void key_forked(void)
{
	key_left = 0;
}

static void key_setup(void)
{
	pthread_atfork(NULL, NULL, key_forked);
}

static int fresh_key(uint8_t key[32])
{
	uint8_t *buf = key_bytes;
	size_t left = key_left;
	pthread_once(&key_once, key_setup);
	if (left < 32) {
		if (getrandom(buf, sizeof(key_bytes), 0) != (ssize_t)sizeof(key_bytes))
			return -1;
		left = sizeof(key_bytes);
	}
	left -= 32;
	memcpy(key, buf + left, 32);
	memset(buf + left, 0, 32);
	key_left = left;
	return 0;
}

static int rt_begin(struct sys_state *st)
{
	struct ember_rt_ctl *c = sys_rt_ctl(st);
	if (!c)
		return -1;
	pthread_once(&calibrated, calibrate);
	uint64_t tsc;
	if (vm_guest_tsc(st->vm, &tsc))
		return -1;
	c->tsc0 = tsc;
	c->mono0 = ns_of(CLOCK_MONOTONIC);
	c->real0 = ns_of(CLOCK_REALTIME);
	c->mult = tsc_mult;
	c->shift = tsc_shift;
	if (fresh_key(c->key))
		return -1;
	c->key_gen++;
	c->nthreads = (uint64_t)proc_threads(&st->pr);
	c->pid = (uint64_t)st->pid;
	sys_fs_rt_begin(st);
	/* the metadata goes to the runtime's buffer when it fits; else fd 4 reads exit to us */
	c->meta_pos = 0;
	int meta_open = !(sys_fd_moved(st) & (1u << EMBER_META_FD)); /* closed until then */
	c->fd_moved = sys_fd_moved(st);
	c->meta_len =
	    meta_open && st->meta_len <= EMBER_RT_META_SIZE ? st->meta_len : EMBER_RT_META_FORWARD;
	if (meta_open && st->meta_len && st->meta_len <= EMBER_RT_META_SIZE)
		vm_copy_to(st->vm, EMBER_RT_META, st->meta, st->meta_len);
	if (st->snap_armed) { /* init: no request yet; the first read asks, and is the snapshot */
		c->in_len = c->in_pos = 0;
		c->in_eof = 0;
	} else {
		refill(st, c);
	}
	return 0;
}

/* The host may touch the runtime's shared state when no vCPU that runs holds it: the lock is
 * free (it takes it meanwhile, so that none does), or held by a vCPU stopped in the host, the
 * one whose exit this is, say (it flushes its full buffers holding it). 0 when it may not: a
 * later exit collects what is there. */
static int rt_hold(struct sys_state *st, struct ember_rt_ctl *c, uint64_t *held)
{
	uint64_t free = 0, host = EMBER_CPUS_MAX + 1;
	*held = 0;
	if (__atomic_compare_exchange_n(&c->lock, &free, host, 0, __ATOMIC_ACQUIRE,
					__ATOMIC_RELAXED)) {
		*held = 1;
		return 1;
	}
	uint64_t owner = free;
	if (owner == host) /* a program that wrote the word: nothing holds it */
		return 1;
	return owner > 0 && owner <= (uint64_t)st->pr.ncpu && owner <= VM_CPUS_MAX &&
	       !st->pr.cpu[owner - 1].running;
}

static void rt_give(struct ember_rt_ctl *c, uint64_t held)
{
	if (held)
		__atomic_store_n(&c->lock, 0, __ATOMIC_RELEASE);
}

static void rt_exit(struct sys_state *st)
{
	struct ember_rt_ctl *c = sys_rt_ctl(st);
	if (!c) {
		sys_stop(st, SYS_SIGNALED, 11,
			 "the in-guest runtime's control block was destroyed");
		return;
	}
	uint64_t held;
	if (!rt_hold(st, c, &held))
		return;
	uint64_t *counts = vm_guest(st->vm, EMBER_RT_COUNTS, 512 * sizeof(uint64_t));
	for (int i = 0; i < 512 && i < SYS_NR_MAX; i++) {
		if (!counts[i])
			continue;
		st->stats.served[i] += counts[i];
		st->stats.in_guest[i] += counts[i];
		sys_stats_mark(&st->stats, (size_t)i);
		counts[i] = 0;
	}
	uint64_t out = c->out_len, log = c->log_len;
	c->out_len = c->log_len = 0;
	if (out > EMBER_RT_OUT_SIZE || log > EMBER_RT_LOG_SIZE) {
		rt_give(c, held);
		sys_stop(st, SYS_SIGNALED, 11,
			 "the in-guest runtime's output buffers were destroyed");
		return;
	}
	if (out && sys_append_out(st, 1, vm_guest(st->vm, EMBER_RT_OUT, out), out) < 0) {
		rt_give(c, held);
		return;
	}
	if (log)
		sys_append_out(st, 2, vm_guest(st->vm, EMBER_RT_LOG, log), log);
	rt_give(c, held);
}

static void rt_input(struct sys_state *st)
{
	struct ember_rt_ctl *c = sys_rt_ctl(st);
	if (!c) {
		sys_stop(st, SYS_SIGNALED, 11,
			 "the in-guest runtime's control block was destroyed");
		return;
	}
	if (st->snap_armed) { /* the first read of the request: init ends here */
		st->pending = EMBER_HC_INPUT;
		sys_stop(st, SYS_SNAPSHOT, 0, "snapshot point");
		return;
	}
	st->pending = 0;
	/* a second reader's ask while the buffer still holds bytes takes nothing away */
	if (c->in_pos >= c->in_len)
		refill(st, c);
}

/* request bytes not yet read: what the runtime's buffer still holds, then the rest */
static size_t rt_unread(struct sys_state *st)
{
	struct ember_rt_ctl *c = sys_rt_ctl(st);
	size_t in_buf = 0;
	if (c && c->in_pos <= c->in_len && c->in_len <= EMBER_RT_IN_SIZE)
		in_buf = c->in_len - c->in_pos;
	struct sys_state *in = sys_in_of(st);
	return in_buf + (in->in_len - in->in_pos);
}

/* A read of fd 0 served by the host in guest mode (a site left trapping, say): it takes the
 * bytes the runtime's buffer still holds first, so none is skipped or read twice. */
static size_t rt_take(struct sys_state *st, uint8_t *dst, size_t n)
{
	struct ember_rt_ctl *c = sys_rt_ctl(st);
	size_t done = 0;
	if (c && c->in_pos <= c->in_len && c->in_len <= EMBER_RT_IN_SIZE) {
		size_t k = c->in_len - c->in_pos < n ? c->in_len - c->in_pos : n;
		memcpy(dst, vm_guest(st->vm, EMBER_RT_IN + c->in_pos, k), k);
		c->in_pos += k;
		done = k;
	}
	struct sys_state *in = sys_in_of(st);
	size_t k = in->in_len - in->in_pos < n - done ? in->in_len - in->in_pos : n - done;
	memcpy(dst + done, in->in + in->in_pos, k);
	in->in_pos += k;
	if (c)
		c->in_eof = !st->in_shared && in->in_pos == in->in_len;
	return done + k;
}

/* read(0) served by the host: the bytes the runtime's buffer still holds come first */
static long rt_read_input(struct sys_state *st, uint64_t addr, uint64_t len)
{
	size_t n = rt_unread(st) < len ? rt_unread(st) : len;
	uint8_t *dst = sys_user(st, addr, n, PROT_WRITE);
	return dst ? (long)rt_take(st, dst, n) : -EFAULT;
}

static int rt_hypercall(struct sys_state *st, int port)
{
	if (port == EMBER_HC_INPUT)
		rt_input(st);
	/* EMBER_HC_FLUSH only asks for the exit, whose buffers rt_exit collected already */
	return port == EMBER_HC_INPUT || port == EMBER_HC_FLUSH;
}

/* stopped in the runtime's input hypercall, which saved the function's FPU state in guest
 * memory and restores it from there when resumed (src/guest/rt.c): the snapshot's memory
 * carries that state, and no restore or reset needs to set it */
static int rt_fpu_saved(const struct sys_state *st, const struct vm_regs *r)
{
	const struct ember_rt_ctl *c = vm_guest(st->vm, EMBER_RT_CTL, sizeof(*c));
	/* r is vCPU 0's: the thread there must be the one stopped in the hypercall, not another
	 * inside the runtime (waiting for its lock), whose state the runtime did not save */
	const struct proc_thread *t = st->pr.cpu[0].cur;
	return t && t->tid == st->snap_tid && st->pending == EMBER_HC_INPUT && from_runtime(r) &&
	       c && c->magic == EMBER_RT_MAGIC && c->fpu_saved == EMBER_RT_FPU_SAVED;
}

static void rt_swap(struct sys_state *st, int cpu, struct proc_thread *t, struct proc_thread *u)
{
	struct ember_rt_cpu *a = sys_rt_area(st, cpu);
	if (!a)
		return;
	if (t)
		t->sigmask = a->sigmask;
	if (u) {
		a->tid = (uint64_t)u->tid;
		a->sigmask = u->sigmask;
		a->pending = u->pending | st->pr.pending;
	}
}

static void rt_signals(struct sys_state *st)
{
	for (int i = 0; i < st->pr.ncpu && i < VM_CPUS_MAX; i++) {
		struct ember_rt_cpu *a = sys_rt_area(st, i);
		const struct proc_thread *t = st->pr.cpu[i].cur;
		if (a)
			a->pending = t ? t->pending | st->pr.pending : 0;
	}
}

static uint64_t *rt_mask(struct sys_state *st, struct proc_thread *t)
{
	struct ember_rt_cpu *a = t->cpu >= 0 ? sys_rt_area(st, t->cpu) : NULL;
	return a ? &a->sigmask : &t->sigmask;
}

static void rt_fds(struct sys_state *st, unsigned moved)
{
	struct ember_rt_ctl *c = sys_rt_ctl(st);
	if (c)
		c->fd_moved = moved;
}

static void rt_threads(struct sys_state *st, int n)
{
	struct ember_rt_ctl *c = sys_rt_ctl(st);
	if (c)
		c->nthreads = (uint64_t)n;
}

/* the guest mode's row of the table (the trap mode's and the choice: sys_rt_mode.c) */
const struct sys_rt_ops sys_rt_guest = {
    .name = "guest",
    .guest = 1,
    .prepare = rt_prepare,
    .setup = rt_setup,
    .begin = rt_begin,
    .exit = rt_exit,
    .hypercall = rt_hypercall,
    .bounce = rt_bounce,
    .own_call = rt_own_call,
    .read_input = rt_read_input,
    .unread = rt_unread,
    .give_back = rt_give_back,
    .fpu_saved = rt_fpu_saved,
    .fault = sys_rt_fault,
    .site = sys_rt_site,
    .stopped = sys_rt_stopped,
    .swap = rt_swap,
    .mask = rt_mask,
    .threads = rt_threads,
    .signals = rt_signals,
    .fds = rt_fds,
};
