/* Signals: actions, masks, alternate stacks, sending, and delivery to the program's handlers
 * through the frame Linux builds on x86-64 (rt_sigframe), undone by rt_sigreturn. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "sys/sys.h"
#include "sys/sys_tmp.h"

#define SA_RESTORER   0x04000000ULL /* the kernel's flags, beside glibc's */
#define SS_AUTODISARM (1U << 31)
#define GUEST_PID     1
#define SIG_BIT(s)    (1ULL << ((s)-1))
#define NEVER	      (SIG_BIT(SIGKILL) | SIG_BIT(SIGSTOP))
/* uc_flags: the FPU state is an XSAVE image; the frame's ss is the one to restore */
#define UC_FLAGS	 0x7ULL
#define FP_XSTATE_MAGIC1 0x46505853U
#define FP_XSTATE_MAGIC2 0x46505845U
/* the XSAVE image in a frame: legacy area and header (576 bytes), and the AVX state */
#define XSAVE_SSE 576
#define XSAVE_AVX 832

/* the frame, as Linux lays it out for a 64-bit handler (arch/x86/include/asm/sigframe.h) */
struct frame {
	uint64_t pretcode; /* the handler returns to sa_restorer */
	/* struct ucontext */
	uint64_t uc_flags, uc_link;
	uint64_t ss_sp;
	int32_t ss_flags, pad0;
	uint64_t ss_size;
	/* struct sigcontext */
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip;
	uint64_t eflags;
	uint16_t cs, gs, fs, ss;
	uint64_t err, trapno, oldmask, cr2, fpstate;
	uint64_t reserved[8];
	uint64_t uc_sigmask;
	/* siginfo_t */
	int32_t si_signo, si_errno, si_code, pad1;
	uint8_t si_rest[112];
};
_Static_assert(sizeof(struct frame) == 440, "struct rt_sigframe is 440 bytes");

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

static int on_altstack(const struct proc_thread *t, uint64_t sp)
{
	return t->altstack[2] && sp > t->altstack[0] && sp <= t->altstack[0] + t->altstack[2];
}

/* the XSAVE image's size in a frame, for the state components the vCPU enables */
static size_t xsave_len(size_t have)
{
	return have >= XSAVE_AVX ? XSAVE_AVX : XSAVE_SSE;
}

/* builds the frame of sig for t (info: si_code, and a fault's address) and points t at the
 * handler; -1 when the frame cannot be written (the process then dies of SIGSEGV) */
static int push_frame(struct sys_state *st, struct proc_thread *t, int sig, int code, uint64_t addr,
		      int trapno)
{
	/* a copy: SA_RESETHAND resets the action below, before the handler's address is used */
	const struct sys_sig a = st->sig[sig], *act = &a;
	struct vm_regs *r = &t->regs;
	if (!(act->flags & SA_RESTORER))
		return -1; /* x86-64 needs it: Linux refuses the frame too */
	uint8_t fpu[VM_FPU_MAX];
	size_t have = 0;
	memset(fpu, 0, sizeof(fpu));
	if (proc_fpu_of(&st->pr, t, fpu, &have))
		have = 0;
	size_t xlen = xsave_len(have);
	uint64_t sp = r->rsp - 128; /* the red zone */
	if (act->flags & SA_ONSTACK && t->altstack[2] && !(t->altstack[1] & SS_DISABLE) &&
	    !on_altstack(t, r->rsp))
		sp = t->altstack[0] + t->altstack[2];
	sp = (sp - xlen - 4) & ~63ULL;
	uint64_t fpstate = sp;
	sp = ((sp - sizeof(struct frame)) & ~15ULL) - 8;
	uint64_t mask = sys_sigmask(st, t), old = t->suspended ? t->saved_mask : mask;
	t->suspended = 0;
	struct frame f;
	memset(&f, 0, sizeof(f));
	f.pretcode = act->restorer;
	f.uc_flags = UC_FLAGS;
	f.ss_sp = t->altstack[0];
	f.ss_flags = !t->altstack[2] ? SS_DISABLE : on_altstack(t, r->rsp) ? SS_ONSTACK : 0;
	f.ss_size = t->altstack[2];
	f.r8 = r->r8, f.r9 = r->r9, f.r10 = r->r10, f.r11 = r->r11, f.r12 = r->r12;
	f.r13 = r->r13, f.r14 = r->r14, f.r15 = r->r15, f.rdi = r->rdi, f.rsi = r->rsi;
	f.rbp = r->rbp, f.rbx = r->rbx, f.rdx = r->rdx, f.rax = r->rax, f.rcx = r->rcx;
	f.rsp = r->rsp, f.rip = r->rip, f.eflags = r->rflags;
	f.cs = 0x33, f.ss = 0x2b;
	f.trapno = (uint64_t)trapno;
	f.oldmask = old;
	f.cr2 = addr;
	f.fpstate = fpstate;
	f.uc_sigmask = old;
	f.si_signo = sig;
	f.si_code = code;
	if (code > 0 &&
	    (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGTRAP)) {
		memcpy(f.si_rest, &addr, sizeof(addr)); /* si_addr */
	} else {
		const int32_t who[2] = {GUEST_PID, SYS_GUEST_UID}; /* si_pid, si_uid */
		memcpy(f.si_rest, who, sizeof(who));
	}
	/* the XSAVE image, with the software words that say so (fpx_sw_bytes) */
	uint32_t sw[5] = {FP_XSTATE_MAGIC1, (uint32_t)xlen + 4, 0, (uint32_t)xlen, 0};
	uint64_t bv = have > 520 ? (*(uint64_t *)(fpu + 512)) : 3;
	memcpy(&sw[2], &bv, sizeof(uint32_t)); /* xfeatures, low half: what XCR0 enables here */
	memcpy(fpu + 464, sw, sizeof(sw));
	uint32_t magic2 = FP_XSTATE_MAGIC2;
	memcpy(fpu + xlen, &magic2, sizeof(magic2));
	if (sys_put(st, fpstate, fpu, xlen + 4) || sys_put(st, sp, &f, sizeof(f)))
		return -1;
	/* the handler runs with its mask added, the signal itself too unless SA_NODEFER */
	uint64_t add = act->mask | (act->flags & SA_NODEFER ? 0 : SIG_BIT(sig));
	sys_set_sigmask(st, t, mask | add);
	if (act->flags & SA_RESETHAND)
		st->sig[sig].handler = (uint64_t)(uintptr_t)SIG_DFL;
	r->rsp = sp;
	r->rip = act->handler;
	r->rdi = (uint64_t)sig;
	r->rsi = sp + offsetof(struct frame, si_signo);
	r->rdx = sp + offsetof(struct frame, uc_flags);
	r->rax = 0;
	r->rflags &= ~(1ULL << 10); /* DF clear, as the ABI wants at a call */
	t->regs_dirty = 1;
	return 0;
}

static void killed(struct sys_state *st, int sig)
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
		killed(st, sig);
		return;
	}
	if (push_frame(st, t, sig, st->sigcode[sig], 0, 0))
		killed(st, SIGSEGV);
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
		if (push_frame(st, t, sig, code, addr, e->vector))
			return 0;
		return 1;
	}
	return 0;
}

static long sys_rt_sigreturn(struct sys_state *st, const uint64_t a[6])
{
	(void)a;
	struct proc_thread *t = sys_cur(st);
	struct vm_regs *r = &t->regs;
	struct frame f;
	uint64_t at = r->rsp - sizeof(uint64_t); /* the handler's ret popped pretcode */
	if (sys_get(st, &f, at, sizeof(f))) {
		killed(st, SIGSEGV);
		return SYS_REGS;
	}
	*r = (struct vm_regs){f.rax, f.rbx, f.rcx, f.rdx, f.rsi, f.rdi, f.rsp, f.rbp, f.r8,
			      f.r9,  f.r10, f.r11, f.r12, f.r13, f.r14, f.r15, f.rip, f.eflags};
	sys_set_sigmask(st, t, f.uc_sigmask);
	if (f.uc_flags & 0x1 && f.fpstate) { /* the XSAVE image, as the frame says */
		uint8_t fpu[VM_FPU_MAX];
		uint32_t sw[5];
		size_t len = 0;
		memset(fpu, 0, sizeof(fpu));
		/* over the whole state as the backend holds it (its length is the backend's),
		 * the components the frame carries; its header says which are in use */
		if (proc_fpu_of(&st->pr, t, fpu, &len) || len < XSAVE_AVX)
			len = len < XSAVE_AVX ? XSAVE_AVX : len;
		if (sys_get(st, sw, f.fpstate + 464, sizeof(sw)) || sw[0] != FP_XSTATE_MAGIC1 ||
		    sw[3] < XSAVE_SSE || sw[3] > XSAVE_AVX || sys_get(st, fpu, f.fpstate, sw[3]) ||
		    proc_set_fpu(&st->pr, t, fpu, len)) {
			killed(st, SIGSEGV); /* a state the vCPU refuses: as Linux, SIGSEGV */
			return SYS_REGS;
		}
	}
	/* restore_altstack: the stack the frame says, unless it is in use */
	if (!on_altstack(t, r->rsp) && !(f.ss_flags & SS_ONSTACK)) {
		t->altstack[0] = f.ss_flags & SS_DISABLE ? 0 : f.ss_sp;
		t->altstack[1] = (uint64_t)(uint32_t)f.ss_flags;
		t->altstack[2] = f.ss_flags & SS_DISABLE ? 0 : f.ss_size;
	}
	t->regs_dirty = 1;
	return SYS_REGS;
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
	else if (on_altstack(t, t->regs.rsp))
		old[1] = SS_ONSTACK;
	if (a[0] && sys_get(st, ss, a[0], sizeof(ss)))
		return -EFAULT;
	if (a[0]) {
		if (on_altstack(t, t->regs.rsp))
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
