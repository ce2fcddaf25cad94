/* Thread syscalls: clone and clone3 for threads, exit, thread ids, yielding, affinity. */
#include <errno.h>
#include <linux/sched.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>

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

/* a new thread of this process: as its parent at the call, but rax 0, on its own stack; with
 * kid, a child sharing its memory (sys_kin_vmkid): a thread here, which its parent waits for as
 * for a process */
static long new_thread(struct sys_state *st, uint64_t flags, uint64_t sp, uint64_t ptid,
		       uint64_t ctid, uint64_t tls, int kid)
{
	if (!kid &&
	    ((flags & THREAD_FLAGS) != THREAD_FLAGS || (flags & ~(uint64_t)THREAD_OK & ~0xffULL)))
		return -EINVAL;
	if (kid && (flags & ~(uint64_t)THREAD_OK & ~0xffULL))
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
	if ((kid && sys_kin_vmkid(st, tid, (int)(flags & 0xff))) ||
	    (flags & CLONE_PARENT_SETTID && sys_put(st, ptid, &tid, sizeof(tid))) ||
	    (flags & CLONE_CHILD_SETTID && sys_put(st, ctid, &tid, sizeof(tid))) ||
	    (fpu_len && proc_set_fpu(&st->pr, c, fpu, fpu_len))) {
		proc_exit_thread(&st->pr, c);
		return -EFAULT;
	}
	if (flags & CLONE_CHILD_CLEARTID)
		c->clear_tid = ctid;
	sys_thread_inherit(c, t, 0);
	proc_ready(&st->pr, c);
	threads_changed(st);
	return tid;
}

/* a child that shares what a thread shares (memory, files, handlers) but is a process of its
 * own, on a stack of its own (glibc's clone(fn, stack, CLONE_VM | CLONE_FILES | ...)): a thread
 * here; without one of them, it is a copy (sys_kin_clone) */
#define VMKID_FLAGS (CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND)
static int vm_kid(uint64_t flags, uint64_t sp)
{
	return !(flags & (CLONE_THREAD | CLONE_VFORK)) && (flags & VMKID_FLAGS) == VMKID_FLAGS &&
	       sp;
}

static long sys_clone(struct sys_state *st, const uint64_t a[6])
{
	/* x86-64: flags, stack, parent_tid, child_tid, tls */
	uint64_t flags = a[0] & 0xffffffffULL;
	if (flags & CLONE_SETTLS && a[4] >= (1ULL << 47))
		return -EPERM;
	if (vm_kid(flags, a[1]))
		return new_thread(st, flags, a[1], a[2], a[3], a[4], 1);
	if (!(flags & CLONE_THREAD))
		return sys_kin_clone(st, flags, a[1], a[2], a[3]);
	return new_thread(st, flags, a[1], a[2], a[3], a[4], 0);
}

static long sys_clone3(struct sys_state *st, const uint64_t a[6])
{
	struct clone_args ca;
	memset(&ca, 0, sizeof(ca));
	if (a[1] < 64 || a[1] > 4096)
		return -EINVAL;
	if (sys_get(st, &ca, a[0], a[1] < sizeof(ca) ? a[1] : sizeof(ca)))
		return -EFAULT;
	/* as Linux: a thread or a sibling (CLONE_PARENT) sends its parent no exit signal; of the
	 * flags only clone3 has, CLONE_CLEAR_SIGHAND is served (a process's handlers back to
	 * their default), which CLONE_SIGHAND contradicts */
	if (ca.flags & (CLONE_THREAD | CLONE_PARENT) && ca.exit_signal)
		return -EINVAL;
	if (ca.flags & CLONE_CLEAR_SIGHAND && ca.flags & CLONE_SIGHAND)
		return -EINVAL;
	if (!(ca.flags & CLONE_THREAD) &&
	    (ca.exit_signal > 64 || ca.set_tid || (ca.flags >> 32 & ~(CLONE_CLEAR_SIGHAND >> 32))))
		return -EINVAL;
	uint64_t kid_sp = ca.stack ? ca.stack + ca.stack_size : 0;
	if (vm_kid(ca.flags, kid_sp))
		return new_thread(st, (ca.flags & ~0xffULL) | ca.exit_signal, kid_sp, ca.parent_tid,
				  ca.child_tid, ca.tls, 1);
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
	return new_thread(st, ca.flags, sp, ca.parent_tid, ca.child_tid, ca.tls, 0);
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
	sys_futex_exit(st, t);
	sys_kin_vmkid_exit(st, t->tid, (int)(a[0] & 0xff) << 8);
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

/* the vCPU goes to another thread that is ready, if any */
static long sys_sched_yield(struct sys_state *st, const uint64_t a[6])
{
	(void)a;
	sys_cur(st)->slice_end = 0;
	return 0;
}

/* the thread a call names by tid: 0 the caller, else one of this process's; NULL with *err
 * -ESRCH when there is none, 0 when it is another process of the invocation's (whose threads
 * are not reached from here) */
static struct proc_thread *named(struct sys_state *st, uint64_t tid, long *err)
{
	struct proc_thread *t = (int)tid ? proc_find(&st->pr, (int)tid) : sys_cur(st);
	*err = t || (st->kin && st->kin->getpgid(st->kin_ctx, st, (int)tid) >= 0) ? 0 : -ESRCH;
	return t;
}

static uint64_t online(const struct sys_state *st)
{
	return st->proc.cpus >= 64 ? ~0ULL : (1ULL << st->proc.cpus) - 1;
}

static long sys_sched_getaffinity(struct sys_state *st, const uint64_t a[6])
{
	long rc = sys_sched_task(st, a[0]);
	if (rc)
		return -ESRCH; /* a negative pid names no process either */
	if (a[1] < 8 || a[1] % 8)
		return -EINVAL;
	long err;
	struct proc_thread *t = named(st, a[0], &err);
	if (err)
		return err;
	uint64_t mask = t && t->affinity ? t->affinity : online(st);
	return sys_put(st, a[2], &mask, sizeof(mask)) ? -EFAULT : 8;
}

/* the mask is kept for sched_getaffinity, as Linux restricts it to the CPUs there are (another
 * process's: taken, not kept) */
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
	long err;
	struct proc_thread *t = named(st, a[0], &err);
	if (err)
		return err;
	if (!(mask & online(st)))
		return -EINVAL;
	if (t)
		t->affinity = mask & online(st);
	return 0;
}

static long sys_getcpu(struct sys_state *st, const uint64_t a[6])
{
	unsigned cpu = (unsigned)(st->pr.cur_cpu > 0 ? st->pr.cur_cpu : 0), node = 0;
	if (a[0] && sys_put(st, a[0], &cpu, sizeof(cpu)))
		return -EFAULT;
	return a[1] && sys_put(st, a[1], &node, sizeof(node)) ? -EFAULT : 0;
}

void sys_thread_inherit(struct proc_thread *to, const struct proc_thread *t, int exec)
{
	to->no_new_privs = t->no_new_privs;
	to->affinity = t->affinity;
	if (exec) /* the new program's name, no capabilities kept */
		return;
	memcpy(to->comm, t->comm, sizeof(to->comm));
	to->keepcaps = t->keepcaps;
}

const struct sys_entry sys_thread_table[] = {
    {SYS_clone, "clone", sys_clone, 0, NULL},
    {SYS_clone3, "clone3", sys_clone3, 0, NULL},
    {SYS_exit, "exit", sys_exit, 0, NULL},
    {SYS_exit_group, "exit_group", sys_exit_group, 0, NULL},
    {SYS_set_tid_address, "set_tid_address", sys_set_tid_address, 0, NULL},
    {SYS_gettid, "gettid", sys_gettid, 0, NULL},
    {SYS_sched_yield, "sched_yield", sys_sched_yield, 0, NULL},
    {SYS_sched_getaffinity, "sched_getaffinity", sys_sched_getaffinity, 0, NULL},
    {SYS_sched_setaffinity, "sched_setaffinity", sys_sched_setaffinity, 0, NULL},
    {SYS_getcpu, "getcpu", sys_getcpu, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};
