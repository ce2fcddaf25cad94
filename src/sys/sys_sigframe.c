/* Linux's signal frame on x86-64 (rt_sigframe): built on a thread's stack, or its alternate
 * stack, to enter a handler, and read back through the checked door by rt_sigreturn. */
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "sys/sys_sig.h"

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

/* the XSAVE image's size in a frame, for the state components the vCPU enables */
static size_t xsave_len(size_t have)
{
	return have >= XSAVE_AVX ? XSAVE_AVX : XSAVE_SSE;
}

/* builds the frame of sig for t (info: si_code, and a fault's address) and points t at the
 * handler; -1 when the frame cannot be written (the process then dies of SIGSEGV) */
int sys_push_frame(struct sys_state *st, struct proc_thread *t, int sig, int code, uint64_t addr,
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
	uint64_t sp = r->rsp - 128;	      /* the red zone */
	int alt = sys_on_altstack(t, r->rsp); /* nested on the alternate stack */
	if (act->flags & SA_ONSTACK && t->altstack[2] && !(t->altstack[1] & SS_DISABLE) && !alt)
		sp = t->altstack[0] + t->altstack[2], alt = 1;
	sp = (sp - xlen - 4) & ~63ULL;
	uint64_t fpstate = sp;
	sp = ((sp - sizeof(struct frame)) & ~15ULL) - 8;
	/* as Linux's get_sigframe: a frame that would run off the alternate stack's bottom is
	 * not written below it; the process dies of SIGSEGV instead */
	if (alt && !sys_on_altstack(t, sp))
		return -1;
	uint64_t mask = sys_sigmask(st, t), old = t->suspended ? t->saved_mask : mask;
	t->suspended = 0;
	struct frame f;
	memset(&f, 0, sizeof(f));
	f.pretcode = act->restorer;
	f.uc_flags = UC_FLAGS;
	f.ss_sp = t->altstack[0];
	f.ss_flags = !t->altstack[2] ? SS_DISABLE : sys_on_altstack(t, r->rsp) ? SS_ONSTACK : 0;
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

long sys_rt_sigreturn(struct sys_state *st, const uint64_t a[6])
{
	(void)a;
	struct proc_thread *t = sys_cur(st);
	struct vm_regs *r = &t->regs;
	struct frame f;
	uint64_t at = r->rsp - sizeof(uint64_t); /* the handler's ret popped pretcode */
	if (sys_get(st, &f, at, sizeof(f))) {
		sys_killed(st, SIGSEGV);
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
			sys_killed(st, SIGSEGV); /* a state the vCPU refuses: as Linux, SIGSEGV */
			return SYS_REGS;
		}
	}
	/* restore_altstack: the stack the frame says, unless it is in use */
	if (!sys_on_altstack(t, r->rsp) && !(f.ss_flags & SS_ONSTACK)) {
		t->altstack[0] = f.ss_flags & SS_DISABLE ? 0 : f.ss_sp;
		t->altstack[1] = (uint64_t)(uint32_t)f.ss_flags;
		t->altstack[2] = f.ss_flags & SS_DISABLE ? 0 : f.ss_size;
	}
	t->regs_dirty = 1;
	return SYS_REGS;
}
