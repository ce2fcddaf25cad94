/* Thread syscalls: clone and clone3 for threads, exit, futex, thread ids, yielding, affinity. */
#include <errno.h>
#include <linux/futex.h>
#include <linux/sched.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>

#include "sys/sys.h"

#define GUEST_PID 1

/* what a thread of this process must share with it: its memory, files, signal handlers */
#define THREAD_FLAGS (CLONE_VM | CLONE_THREAD | CLONE_SIGHAND)
/* what else a thread's clone may ask for; anything more is refused */
#define THREAD_OK                                                                                  \
	(THREAD_FLAGS | CLONE_FS | CLONE_FILES | CLONE_SYSVSEM | CLONE_SETTLS |                    \
	 CLONE_PARENT_SETTID | CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | CLONE_DETACHED |        \
	 CLONE_IO)

static void threads_changed(struct sys_state *st)
{
	st->rt->threads(st, proc_threads(&st->pr));
}

/* a new thread of this process: as its parent at the call, but rax 0, on its own stack */
static long new_thread(struct sys_state *st, uint64_t flags, uint64_t sp, uint64_t ptid,
		       uint64_t ctid, uint64_t tls)
{
	if ((flags & THREAD_FLAGS) != THREAD_FLAGS || (flags & ~(uint64_t)THREAD_OK & ~0xffULL))
		return -EINVAL;
	if (flags & (CLONE_PIDFD | CLONE_NEWTIME)) /* what only a new process may ask for */
		return -EINVAL;
	if (flags & CLONE_SETTLS && tls >= (1ULL << 47))
		return -EPERM;
	struct proc_thread *t = sys_cur(st);
	uint8_t fpu[VM_FPU_MAX];
	size_t fpu_len = 0;
	if (proc_fpu_of(&st->pr, t, fpu, &fpu_len) && fpu_len == 0)
		fpu_len = 0; /* a thread that never ran: the new one starts fresh */
	struct vm_regs r = t->regs;
	r.rax = 0;
	r.rcx = r.rip;
	r.r11 = r.rflags;
	if (sp)
		r.rsp = sp;
	struct proc_thread *c =
	    proc_spawn(&st->pr, &r, flags & CLONE_SETTLS ? tls : t->fs_base, sys_sigmask(st, t));
	if (!c)
		return -EAGAIN;
	int tid = c->tid;
	/* the tids before the thread can run: a write that faults fails the clone, as on Linux */
	if ((flags & CLONE_PARENT_SETTID && sys_put(st, ptid, &tid, sizeof(tid))) ||
	    (flags & CLONE_CHILD_SETTID && sys_put(st, ctid, &tid, sizeof(tid))) ||
	    (fpu_len && proc_set_fpu(&st->pr, c, fpu, fpu_len))) {
		proc_exit_thread(&st->pr, c);
		return -EFAULT;
	}
	if (flags & CLONE_CHILD_CLEARTID)
		c->clear_tid = ctid;
	proc_ready(&st->pr, c);
	threads_changed(st);
	return tid;
}

static long sys_clone(struct sys_state *st, const uint64_t a[6])
{
	/* x86-64: flags, stack, parent_tid, child_tid, tls */
	if (!(a[0] & CLONE_THREAD))
		return sys_kin_clone(st, a[0], a[1], a[2], a[3]);
	return new_thread(st, a[0], a[1], a[2], a[3], a[4]);
}

static long sys_clone3(struct sys_state *st, const uint64_t a[6])
{
	struct clone_args ca;
	memset(&ca, 0, sizeof(ca));
	if (a[1] < 64 || a[1] > 4096)
		return -EINVAL;
	if (sys_get(st, &ca, a[0], a[1] < sizeof(ca) ? a[1] : sizeof(ca)))
		return -EFAULT;
	if (!(ca.flags & CLONE_THREAD) && (ca.exit_signal > 64 || ca.set_tid || (ca.flags >> 32)))
		return -EINVAL;
	if (!(ca.flags & CLONE_THREAD))
		return sys_kin_clone(st, ca.flags, ca.stack ? ca.stack + ca.stack_size : 0,
				     ca.parent_tid, ca.child_tid);
	/* as Linux: pidfd and cgroup mean something only with their flags (glibc fills pidfd
	 * anyway); a thread has no exit signal to send */
	if (ca.set_tid || ca.set_tid_size || (ca.flags >> 32) || ca.exit_signal > 64)
		return -EINVAL;
	if ((ca.stack == 0) != (ca.stack_size == 0))
		return -EINVAL;
	uint64_t sp = ca.stack ? ca.stack + ca.stack_size : 0;
	return new_thread(st, ca.flags, sp, ca.parent_tid, ca.child_tid, ca.tls);
}

static long sys_exit_group(struct sys_state *st, const uint64_t a[6])
{
	sys_stop(st, SYS_EXITED, (int)(a[0] & 0xff), "exited with status %d", (int)(a[0] & 0xff));
	return 0;
}

/* one thread ends: its clear-child-tid word is zeroed and waited on (pthread_join); the
 * process ends with the last one */
static long sys_exit(struct sys_state *st, const uint64_t a[6])
{
	struct proc_thread *t = sys_cur(st);
	if (proc_threads(&st->pr) <= 1)
		return sys_exit_group(st, a);
	if (t->clear_tid) {
		const int zero = 0;
		if (!sys_put(st, t->clear_tid, &zero, sizeof(zero)))
			proc_wake(&st->pr, t->clear_tid, ~0u, 1);
	}
	proc_exit_thread(&st->pr, t);
	threads_changed(st);
	return 0;
}

static long sys_set_tid_address(struct sys_state *st, const uint64_t a[6])
{
	sys_cur(st)->clear_tid = a[0];
	return sys_cur(st)->tid;
}

static long sys_gettid(struct sys_state *st, const uint64_t a[6])
{
	(void)a;
	return sys_cur(st)->tid;
}

static long ret_zero(struct sys_state *st, const uint64_t a[6])
{
	(void)st, (void)a;
	return 0;
}

/* the vCPU goes to another thread that is ready, if any */
static long sys_sched_yield(struct sys_state *st, const uint64_t a[6])
{
	(void)a;
	sys_cur(st)->slice_end = 0;
	return 0;
}

static long sys_sched_getaffinity(struct sys_state *st, const uint64_t a[6])
{
	long rc = sys_sched_task(st, a[0]);
	if (rc)
		return -ESRCH; /* a negative pid names no process either */
	if (a[1] < 8 || a[1] % 8)
		return -EINVAL;
	uint64_t mask = st->proc.cpus >= 64 ? ~0ULL : (1ULL << st->proc.cpus) - 1;
	return sys_put(st, a[2], &mask, sizeof(mask)) ? -EFAULT : 8;
}

static long sys_sched_setaffinity(struct sys_state *st, const uint64_t a[6])
{
	uint64_t mask = 0;
	long rc = sys_sched_task(st, a[0]);
	if (rc)
		return -ESRCH; /* a negative pid names no process either */
	if (a[1] < 8)
		return -EINVAL;
	if (sys_get(st, &mask, a[2], sizeof(mask)))
		return -EFAULT;
	return mask ? 0 : -EINVAL;
}

static long sys_getcpu(struct sys_state *st, const uint64_t a[6])
{
	unsigned cpu = (unsigned)(st->pr.cur_cpu > 0 ? st->pr.cur_cpu : 0), node = 0;
	if (a[0] && sys_put(st, a[0], &cpu, sizeof(cpu)))
		return -EFAULT;
	return a[1] && sys_put(st, a[1], &node, sizeof(node)) ? -EFAULT : 0;
}

/* a timespec's ns, -EINVAL when it is not one, -EFAULT when unreadable */
static int64_t timespec_ns(struct sys_state *st, uint64_t addr, int64_t *ns)
{
	struct timespec ts;
	if (sys_get(st, &ts, addr, sizeof(ts)))
		return -EFAULT;
	if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000L)
		return -EINVAL;
	*ns = (uint64_t)ts.tv_sec > (uint64_t)INT64_MAX / 1000000000ULL
		  ? INT64_MAX
		  : ts.tv_sec * 1000000000LL + ts.tv_nsec;
	return 0;
}

/* an absolute time on clock c as a CLOCK_MONOTONIC deadline */
static uint64_t mono_of(clockid_t c, int64_t abs_ns)
{
	struct timespec now;
	clock_gettime(c, &now);
	int64_t left = abs_ns - (now.tv_sec * 1000000000LL + now.tv_nsec);
	uint64_t m = base_now_ns();
	return left <= 0 ? m : m + (uint64_t)left;
}

/* a futex op's deadline from its timeout argument (0: none); first attempt only */
static long futex_deadline(struct sys_state *st, int op, uint64_t addr, uint64_t *deadline)
{
	*deadline = 0;
	if (sys_retrying(st)) {
		*deadline = sys_cur(st)->wdeadline;
		return 0;
	}
	if (!addr)
		return 0;
	int64_t ns;
	long rc = timespec_ns(st, addr, &ns);
	if (rc)
		return rc;
	int cmd = op & FUTEX_CMD_MASK;
	if (cmd == FUTEX_WAIT)
		*deadline = sys_deadline_in(st, (uint64_t)ns);
	else
		*deadline =
		    mono_of(op & FUTEX_CLOCK_REALTIME ? CLOCK_REALTIME : CLOCK_MONOTONIC, ns);
	if (!*deadline)
		*deadline = 1; /* in the past: times out at once */
	return 0;
}

static long futex_wait(struct sys_state *st, int op, const uint64_t a[6], uint32_t bits)
{
	struct proc_thread *t = sys_cur(st);
	if (sys_retrying(st)) {
		if (t->woken)
			return 0;
		if (t->expired)
			return -ETIMEDOUT;
	}
	if (!bits)
		return -EINVAL;
	uint64_t deadline;
	long rc = futex_deadline(st, op, a[3], &deadline);
	if (rc)
		return rc;
	uint32_t v;
	if (sys_get(st, &v, a[0], sizeof(v)))
		return -EFAULT;
	if (v != (uint32_t)a[2])
		return -EAGAIN;
	if (deadline && deadline <= base_now_ns())
		return -ETIMEDOUT;
	return sys_wait(st, a[0], bits, deadline);
}

/* FUTEX_WAKE_OP's operation on *uaddr2, and its comparison of the old value, as the kernel's
 * futex_atomic_op_inuser: oparg and cmparg are signed 12-bit numbers, and the word is changed
 * atomically, for other vCPUs may be running the program's own atomic operations on it */
static int wake_op(struct sys_state *st, uint64_t addr, uint32_t encoded, int *cond)
{
	uint32_t op = (encoded >> 28) & 7, cmp = (encoded >> 24) & 15;
	int32_t oparg = (int32_t)(encoded << 8) >> 20, cmparg = (int32_t)(encoded << 20) >> 20;
	if (encoded & (8u << 28))
		oparg = (int32_t)(1u << (oparg & 31)); /* the kernel masks a shift out of range */
	if (addr % 4)
		return -EINVAL;
	uint32_t *p = sys_user(st, addr, sizeof(uint32_t), PROT_READ | PROT_WRITE);
	if (!p)
		return -EFAULT;
	if (op > 4)
		return -ENOSYS; /* nothing changed */
	uint32_t old = __atomic_load_n(p, __ATOMIC_RELAXED), nv, arg = (uint32_t)oparg;
	do {
		nv = op == 0   ? arg
		     : op == 1 ? old + arg
		     : op == 2 ? old | arg
		     : op == 3 ? old & ~arg
			       : old ^ arg;
	} while (!__atomic_compare_exchange_n(p, &old, nv, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
	int32_t o = (int32_t)old;
	if (cmp > 5)
		return -ENOSYS; /* the word changed, as with Linux */
	*cond = cmp == 0   ? o == cmparg
		: cmp == 1 ? o != cmparg
		: cmp == 2 ? o < cmparg
		: cmp == 3 ? o <= cmparg
		: cmp == 4 ? o > cmparg
			   : o >= cmparg;
	return 0;
}

static long sys_futex(struct sys_state *st, const uint64_t a[6])
{
	int op = (int)a[1], cmd = op & FUTEX_CMD_MASK;
	if (a[0] % 4)
		return -EINVAL;
	if (op & FUTEX_CLOCK_REALTIME && cmd != FUTEX_WAIT_BITSET && cmd != FUTEX_WAIT)
		return -ENOSYS;
	int n = (int)a[2] < 0 ? 0 : (int)a[2];
	switch (cmd) {
	case FUTEX_WAIT:
		return futex_wait(st, op, a, FUTEX_BITSET_MATCH_ANY);
	case FUTEX_WAIT_BITSET:
		return futex_wait(st, op, a, (uint32_t)a[5]);
	case FUTEX_WAKE:
		return proc_wake(&st->pr, a[0], FUTEX_BITSET_MATCH_ANY, n);
	case FUTEX_WAKE_BITSET:
		return a[5] ? proc_wake(&st->pr, a[0], (uint32_t)a[5], n) : -EINVAL;
	case FUTEX_REQUEUE:
	case FUTEX_CMP_REQUEUE: {
		if (a[4] % 4)
			return -EINVAL;
		if (cmd == FUTEX_CMP_REQUEUE) {
			uint32_t v;
			if (sys_get(st, &v, a[0], sizeof(v)))
				return -EFAULT;
			if (v != (uint32_t)a[5])
				return -EAGAIN;
		}
		int moved, m = (int)a[3] < 0 ? 0 : (int)a[3];
		return proc_requeue(&st->pr, a[0], a[4], n, m, &moved);
	}
	case FUTEX_WAKE_OP: {
		int cond = 0, rc = wake_op(st, a[4], (uint32_t)a[5], &cond);
		if (rc)
			return rc;
		int woken = proc_wake(&st->pr, a[0], FUTEX_BITSET_MATCH_ANY, n);
		int n2 = (int)a[3] < 0 ? 0 : (int)a[3];
		return woken + (cond ? proc_wake(&st->pr, a[4], FUTEX_BITSET_MATCH_ANY, n2) : 0);
	}
	default: /* the priority-inheriting ones */
		return -ENOSYS;
	}
}

const struct sys_entry sys_thread_table[] = {
    {SYS_clone, "clone", sys_clone, 0, NULL},
    {SYS_clone3, "clone3", sys_clone3, 0, NULL},
    {SYS_exit, "exit", sys_exit, 0, NULL},
    {SYS_exit_group, "exit_group", sys_exit_group, 0, NULL},
    {SYS_set_tid_address, "set_tid_address", sys_set_tid_address, 0, NULL},
    {SYS_set_robust_list, "set_robust_list", ret_zero, 0, NULL},
    {SYS_gettid, "gettid", sys_gettid, 0, NULL},
    {SYS_futex, "futex", sys_futex, 0, NULL},
    {SYS_sched_yield, "sched_yield", sys_sched_yield, 0, NULL},
    {SYS_sched_getaffinity, "sched_getaffinity", sys_sched_getaffinity, 0, NULL},
    {SYS_sched_setaffinity, "sched_setaffinity", sys_sched_setaffinity, 0, NULL},
    {SYS_getcpu, "getcpu", sys_getcpu, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};
