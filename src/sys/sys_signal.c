/* Signals: actions, masks, alternate stacks, sending, and delivery to the program's handlers
 * through the frame Linux builds on x86-64 (rt_sigframe), undone by rt_sigreturn. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "fs/fs_tmp.h"
#include "sys/sys_sig.h"

static int default_ignored(int sig)
{
	static const int ign[] = {SIGCHLD, SIGCONT, SIGURG,  SIGWINCH,
				  SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU};
	for (size_t i = 0; i < sizeof(ign) / sizeof(ign[0]); i++)
		if (ign[i] == sig)
			return 1;
	return 0;
}

/* the signal's action is to drop it */
static int ignored(const struct sys_state *st, int sig)
{
	uint64_t h = st->sig[sig].handler;
	return h == (uint64_t)(uintptr_t)SIG_IGN ||
	       (h == (uint64_t)(uintptr_t)SIG_DFL && default_ignored(sig));
}

static int bad_signal(uint64_t sig)
{
	return sig == 0 || sig > 64;
}

void sys_send(struct sys_state *st, struct proc_thread *t, int sig, int code)
{
	if (sig <= 0 || sig > 64 || ignored(st, sig))
		return;
	st->sigcode[sig] = code;
	proc_signal(&st->pr, t, sig);
	st->rt->signals(st);
}

/* signals t could take now: pending for it or the process, not blocked */
static uint64_t deliverable(struct sys_state *st, struct proc_thread *t)
{
	return (t->pending | st->pr.pending) & ~sys_sigmask(st, t);
}

int sys_signal_ready(struct sys_state *st, struct proc_thread *t)
{
	uint64_t ready = deliverable(st, t);
	for (int s = 1; ready && s <= 64; s++)
		if (ready & SIG_BIT(s) && !ignored(st, s))
			return 1;
	return 0;
}

/* the calls Linux makes again after a handler with SA_RESTART; the others fail with EINTR */
static int restartable(uint64_t nr)
{
	/* (an open waits only for a named pipe's partner) */
	static const uint64_t calls[] = {SYS_read,     SYS_write, SYS_readv,  SYS_writev,
					 SYS_futex,    SYS_wait4, SYS_waitid, SYS_pread64,
					 SYS_pwrite64, SYS_open,  SYS_openat, SYS_creat};
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		if (calls[i] == nr)
			return 1;
	return 0;
}

/* the signal t takes next (the lowest that is deliverable and not ignored) */
static int next_signal(struct sys_state *st, struct proc_thread *t)
{
	uint64_t ready = deliverable(st, t);
	for (int s = 1; ready && s <= 64; s++)
		if (ready & SIG_BIT(s))
			return s;
	return 0;
}

void sys_interrupt(struct sys_state *st, struct proc_thread *t)
{
	int sig = next_signal(st, t);
	struct vm_regs *r = &t->regs;
	t->counted = 0;
	sys_tmp_fifo_interrupted(st, t); /* an open of a named pipe that waited: not counted now */
	if (t->wdone) {
		/* it moved bytes before it waited (a pipe's write): those are its result */
		r->rax = t->wdone;
		r->rcx = r->rip;
		r->r11 = r->rflags;
	} else if (sig && st->sig[sig].flags & SA_RESTART && restartable(t->nr) &&
		   !(t->nr == SYS_futex && t->wdeadline)) {
		/* (a futex wait with a timeout is EINTR: Linux restarts it through restart_syscall,
		 * which a handler's frame turns into EINTR, SA_RESTART or not) */
		/* the call is made again when the handler returns: rip back over the site */
		r->rip -= EMBER_HC_LEN;
		r->rax = t->nr;
	} else {
		if ((t->nr == SYS_nanosleep || t->nr == SYS_clock_nanosleep) && t->wdeadline) {
			/* the time left, where the sleep was relative */
			uint64_t now = base_now_ns(),
				 left = t->wdeadline > now ? t->wdeadline - now : 0;
			struct timespec ts = {(time_t)(left / 1000000000ULL),
					      (long)(left % 1000000000ULL)};
			uint64_t rem = t->nr == SYS_nanosleep ? r->rsi : r->r10;
			int abs = t->nr == SYS_clock_nanosleep && (r->rsi & TIMER_ABSTIME);
			if (rem && !abs)
				sys_put(st, rem, &ts, sizeof(ts));
		}
		r->rax = (uint64_t)-EINTR;
		r->rcx = r->rip;
		r->r11 = r->rflags;
	}
	t->regs_dirty = 1;
}

void sys_killed(struct sys_state *st, int sig)
{
	sys_stop(st, SYS_SIGNALED, sig, "killed by signal %d (%s)", sig,
		 sigabbrev_np(sig) ? sigabbrev_np(sig) : "?");
}

void sys_deliver(struct sys_state *st, struct proc_thread *t)
{
	int sig = next_signal(st, t);
	if (!sig)
		return;
	if (t->regs.rip < EMBER_SYS_END) {
		/* inside the in-guest runtime, which holds this vCPU's state for it: the signal
		 * waits until it is back in its own code, which the scheduler sees soon */
		t->slice_end = 0;
		t->poke = base_now_ns() + 200000;
		return;
	}
	t->poke = 0;
	if (t->pending & SIG_BIT(sig))
		t->pending &= ~SIG_BIT(sig);
	else
		st->pr.pending &= ~SIG_BIT(sig);
	st->rt->signals(st);
	if (ignored(st, sig))
		return;
	if (st->sig[sig].handler == (uint64_t)(uintptr_t)SIG_DFL) {
		sys_killed(st, sig);
		return;
	}
	if (sys_push_frame(st, t, sig, st->sigcode[sig], 0, 0))
		sys_killed(st, SIGSEGV);
}

/* the signal a fault raises, and its si_code */
static const struct {
	enum vm_fault fault;
	int sig, code;
} fault_sigs[] = {
    {VM_FAULT_PAGE, SIGSEGV, SEGV_MAPERR}, {VM_FAULT_GP, SIGSEGV, 0x80 /* SI_KERNEL */},
    {VM_FAULT_DIVIDE, SIGFPE, FPE_INTDIV}, {VM_FAULT_INVALID, SIGILL, ILL_ILLOPN},
    {VM_FAULT_BREAK, SIGTRAP, 0x80},	   {VM_FAULT_FLOAT, SIGFPE, FPE_FLTINV},
    {VM_FAULT_ALIGN, SIGBUS, BUS_ADRALN},
};

int sys_fault_signal(struct sys_state *st, struct proc_thread *t, const struct vm_exit *e)
{
	for (size_t i = 0; i < sizeof(fault_sigs) / sizeof(fault_sigs[0]); i++) {
		if (fault_sigs[i].fault != e->fault)
			continue;
		int sig = fault_sigs[i].sig, code = fault_sigs[i].code;
		const struct sys_vma *v =
		    e->fault == VM_FAULT_PAGE ? sys_vma_find(st, e->addr) : NULL;
		if (v && (v->prot & VM_PROT_FAULT)) /* a file's page past its end */
			sig = SIGBUS, code = BUS_ADRERR;
		uint64_t h = st->sig[sig].handler;
		/* a handler that cannot run (the signal blocked, or none) lets the fault kill the
		 * process, as Linux's forced signal does */
		if (h == (uint64_t)(uintptr_t)SIG_DFL || h == (uint64_t)(uintptr_t)SIG_IGN ||
		    (sys_sigmask(st, t) & SIG_BIT(sig)) || t->regs.rip < EMBER_SYS_END)
			return 0;
		uint64_t addr = e->fault == VM_FAULT_PAGE ? e->addr : e->rip;
		if (e->fault == VM_FAULT_PAGE && v && sig == SIGSEGV)
			code = SEGV_ACCERR;
		if (e->fault == VM_FAULT_BREAK)
			t->regs.rip = e->rip + 1; /* a trap: after the int3, as Linux reports it */
		/* the handler sees the registers of the faulting instruction */
		if (sys_push_frame(st, t, sig, code, addr, e->vector))
			return 0;
		return 1;
	}
	return 0;
}

static long sys_rt_sigaction(struct sys_state *st, const uint64_t a[6])
{
	uint64_t sig = a[0];
	if (bad_signal(sig) || a[3] != 8)
		return -EINVAL;
	/* as Linux: the new action is read before the old one is written, which may be the same
	 * memory */
	struct sys_sig act, old = st->sig[sig];
	if (a[1] && sys_get(st, &act, a[1], sizeof(act)))
		return -EFAULT;
	if (a[1] && (sig == SIGKILL || sig == SIGSTOP))
		return -EINVAL;
	if (a[1]) {
		act.mask &= ~NEVER;
		st->sig[sig] = act;
		/* a signal whose action becomes to ignore it is dropped where it waits */
		if (ignored(st, (int)sig)) {
			st->pr.pending &= ~SIG_BIT(sig);
			size_t i = 0;
			for (struct proc_thread *t; (t = proc_each(&st->pr, &i));)
				t->pending &= ~SIG_BIT(sig);
		}
	}
	return a[2] ? sys_put(st, a[2], &old, sizeof(old)) : 0;
}

static long sys_rt_sigprocmask(struct sys_state *st, const uint64_t a[6])
{
	struct proc_thread *t = sys_cur(st);
	if (a[3] != 8)
		return -EINVAL;
	uint64_t set = 0, cur = sys_sigmask(st, t);
	if (a[1] && sys_get(st, &set, a[1], sizeof(set)))
		return -EFAULT;
	if (a[2] && sys_put(st, a[2], &cur, sizeof(cur)))
		return -EFAULT;
	if (!a[1])
		return 0;
	if (a[0] == SIG_BLOCK)
		cur |= set;
	else if (a[0] == SIG_UNBLOCK)
		cur &= ~set;
	else if (a[0] == SIG_SETMASK)
		cur = set;
	else
		return -EINVAL;
	sys_set_sigmask(st, t, cur);
	return 0;
}

static long sys_sigaltstack(struct sys_state *st, const uint64_t a[6])
{
	struct proc_thread *t = sys_cur(st);
	/* as Linux: the new stack is read before the old one is written, which may be the same
	 * memory */
	uint64_t ss[3], old[3];
	memcpy(old, t->altstack, sizeof(old));
	if (!old[0] && !old[2])
		old[1] = SS_DISABLE;
	else if (sys_on_altstack(t, t->regs.rsp))
		old[1] = SS_ONSTACK;
	if (a[0] && sys_get(st, ss, a[0], sizeof(ss)))
		return -EFAULT;
	if (a[0]) {
		if (sys_on_altstack(t, t->regs.rsp))
			return -EPERM;
		/* ss_flags is an int: the word's upper half is padding */
		int flags = (int)(uint32_t)ss[1] & ~(int)SS_AUTODISARM;
		if (flags != 0 && flags != SS_DISABLE && flags != SS_ONSTACK)
			return -EINVAL;
		if (flags == SS_DISABLE) {
			memset(t->altstack, 0, sizeof(t->altstack));
			t->altstack[1] = SS_DISABLE;
		} else {
			if (ss[2] < 2048) /* the kernel's MINSIGSTKSZ */
				return -ENOMEM;
			memcpy(t->altstack, ss, sizeof(ss));
			t->altstack[1] = 0;
		}
	}
	return a[1] ? sys_put(st, a[1], old, sizeof(old)) : 0;
}

static long sys_kill(struct sys_state *st, const uint64_t a[6])
{
	return a[1] > 64 ? -EINVAL : sys_kin_kill(st, (int)a[0], (int)a[1]);
}

static long to_thread(struct sys_state *st, int tid, uint64_t sig)
{
	struct proc_thread *t = proc_find(&st->pr, tid);
	if (!t)
		return -ESRCH;
	if (sig > 64)
		return -EINVAL;
	sys_send(st, t, (int)sig, -6 /* SI_TKILL */);
	return 0;
}

static long sys_tkill(struct sys_state *st, const uint64_t a[6])
{
	return (int)a[0] <= 0 ? -EINVAL : to_thread(st, (int)a[0], a[1]);
}

static long sys_tgkill(struct sys_state *st, const uint64_t a[6])
{
	if ((int)a[0] <= 0 || (int)a[1] <= 0)
		return -EINVAL;
	return (int)a[0] == st->pid ? to_thread(st, (int)a[1], a[2]) : -ESRCH;
}

static long sys_rt_sigpending(struct sys_state *st, const uint64_t a[6])
{
	struct proc_thread *t = sys_cur(st);
	uint64_t set = (t->pending | st->pr.pending) & sys_sigmask(st, t);
	if (a[1] != 8)
		return -EINVAL;
	return sys_put(st, a[0], &set, sizeof(set));
}

/* sigsuspend and pause: wait with a mask for a signal that has a handler */
static long sys_rt_sigsuspend(struct sys_state *st, const uint64_t a[6])
{
	struct proc_thread *t = sys_cur(st);
	if (!sys_retrying(st)) {
		uint64_t mask;
		if (a[1] != 8)
			return -EINVAL;
		if (sys_get(st, &mask, a[0], sizeof(mask)))
			return -EFAULT;
		t->saved_mask = sys_sigmask(st, t);
		t->suspended = 1;
		sys_set_sigmask(st, t, mask);
		/* one the new mask unblocks that is pending already (block, raise, sigsuspend):
		 * nothing would wake the wait, its sending is over; it is taken as the call
		 * returns, with the suspend's mask saved in its frame */
		if (sys_signal_ready(st, t))
			return -EINTR;
	}
	return sys_wait(st, 0, 0, 0); /* until a signal: sys_interrupt returns EINTR */
}

static long sys_pause(struct sys_state *st, const uint64_t a[6])
{
	(void)a;
	return sys_wait(st, 0, 0, 0);
}

const struct sys_entry sys_signal_table[] = {
    {SYS_rt_sigaction, "rt_sigaction", sys_rt_sigaction, 0, NULL},
    {SYS_rt_sigprocmask, "rt_sigprocmask", sys_rt_sigprocmask, 0, NULL},
    {SYS_rt_sigreturn, "rt_sigreturn", sys_rt_sigreturn, 0, NULL},
    {SYS_rt_sigpending, "rt_sigpending", sys_rt_sigpending, 0, NULL},
    {SYS_rt_sigsuspend, "rt_sigsuspend", sys_rt_sigsuspend, 0, NULL},
    {SYS_pause, "pause", sys_pause, 0, NULL},
    {SYS_sigaltstack, "sigaltstack", sys_sigaltstack, 0, NULL},
    {SYS_kill, "kill", sys_kill, 0, NULL},
    {SYS_tkill, "tkill", sys_tkill, 0, NULL},
    {SYS_tgkill, "tgkill", sys_tgkill, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};
