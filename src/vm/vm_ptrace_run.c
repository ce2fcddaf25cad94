/* The ptrace backend's runs: the stub continued until a stop we report, each stop turned into
 * an exit (a hypercall, a fault, the deadline), on the tracer's thread. */
#include <errno.h>
#include <linux/audit.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#include "vm/vm_ptrace.h"

int pt_check_thread(struct vm *vm, struct vm_exit *e)
{
	struct pt_vm *p = PT(vm);
	if (p->dead)
		return vm_fail(e, "the virtine's stub process is gone");
	if (!pt_on_tracer(p))
		return vm_fail(e, "a ptrace request from a thread that is not the tracer");
	return 0;
}

/* Continues the stub until a stop we report; SIGSTOP from the deadline handler ends the run. */
int pt_resume(struct vm *vm, struct vm_exit *e, int *sig, siginfo_t *si)
{
	struct pt_vm *p = PT(vm);
	if (p->regs_dirty && ptrace(PTRACE_SETREGS, p->pid, 0, &p->regs) < 0)
		return vm_fail(e, "PTRACE_SETREGS: %s", strerror(errno));
	p->regs_dirty = 0;
	for (;;) {
		int st;
		if (ptrace(PTRACE_CONT, p->pid, 0, 0) < 0 || pt_wait_stop(p->pid, &st)) {
			p->dead = 1;
			return vm_fail(e, "ptrace: %s", strerror(errno));
		}
		if (!WIFSTOPPED(st)) {
			p->dead = 1;
			return vm_fail(e, "the stub process ended (status %#x)", st);
		}
		*sig = WSTOPSIG(st);
		if (*sig == SIGSTOP) {
			int why = vm_stop_reason(vm, 0);
			if (why != VM_STOP_NONE) {
				e->kind =
				    why == VM_STOP_DEADLINE ? VM_EXIT_TIMEOUT : VM_EXIT_INTERRUPT;
				/* the registers where it stopped: a thread taken off the vCPU
				 * at its slice's end goes on from there, not from its last exit */
				if (ptrace(PTRACE_GETREGS, p->pid, 0, &p->regs) < 0)
					return vm_fail(e, "PTRACE_GETREGS: %s", strerror(errno));
				return 1;
			}
			continue; /* a late kick from an earlier deadline or slice */
		}
		if (ptrace(PTRACE_GETSIGINFO, p->pid, 0, si) < 0 ||
		    ptrace(PTRACE_GETREGS, p->pid, 0, &p->regs) < 0)
			return vm_fail(e, "ptrace: %s", strerror(errno));
		return 0;
	}
}

static const struct {
	int sig;
	enum vm_fault fault;
} by_signal[] = {
    {SIGFPE, VM_FAULT_DIVIDE},
    {SIGILL, VM_FAULT_INVALID},
    {SIGTRAP, VM_FAULT_BREAK},
    {SIGSYS, VM_FAULT_SYSCALL},
};

static void run_hop(struct vm *vm, void *arg)
{
	struct vm_exit *e = arg;
	struct pt_vm *p = PT(vm);
	int sig = 0; /* set by pt_resume when it returns 0 */
	siginfo_t si;
	if (pt_check_thread(vm, e) || pt_resume(vm, e, &sig, &si))
		return;
	e->kind = VM_EXIT_FAULT;
	e->rip = p->regs.rip;
	e->vector = -1; /* a signal, not an exception: the vector is not known */
	if (sig == SIGSEGV && si.si_code == SI_KERNEL) {
		/* `out` at CPL3 without I/O permission: a #GP the kernel reports as SI_KERNEL */
		int port = vm_hypercall_at(vm, p->regs.rip);
		if (port >= 0) {
			e->kind = VM_EXIT_HYPERCALL;
			e->port = port;
			p->regs.rip += EMBER_HC_LEN;
			p->regs_dirty = 1;
			e->rip = p->regs.rip;
			return;
		}
		e->fault = VM_FAULT_GP;
		return;
	}
	/* a sysenter the kernel could not take as a call (its 32-bit stack unreadable): sent back
	 * to its landing pad in our vDSO, the address cut to 32 bits, where it faults */
	uint64_t at = (uint64_t)(uintptr_t)si.si_addr;
	if (sig == SIGSEGV && at == e->rip && at >> 32 == 0 && at >= vm->user_top && p->vdso &&
	    (uint32_t)at - (uint32_t)p->vdso < 0x2000) {
		e->fault = VM_FAULT_SYSENTER;
		e->rip = 0;
		return;
	}
	if (sig == SIGSEGV || (sig == SIGBUS && si.si_code != BUS_ADRALN)) {
		e->fault = VM_FAULT_PAGE;
		e->addr = (uint64_t)(uintptr_t)si.si_addr;
		return;
	}
	if (sig == SIGBUS) { /* BUS_ADRALN: the alignment check (AC) a #AC is on KVM */
		e->fault = VM_FAULT_ALIGN;
		return;
	}
	if (sig == SIGSYS && si.si_arch != AUDIT_ARCH_X86_64) {
		/* a 32-bit call: int $0x80 reports the address after it, sysenter the kernel's
		 * own landing pad, which names no instruction of the guest's (rip 0: not known) */
		const uint8_t *b = e->rip >= 2 ? vm_guest(vm, e->rip - 2, 2) : NULL;
		int int80 = b && b[0] == 0xcd && b[1] == 0x80;
		e->fault = int80 ? VM_FAULT_INT80 : VM_FAULT_SYSENTER;
		e->rip = int80 ? e->rip - 2 : 0;
		return;
	}
	e->fault = VM_FAULT_UNKNOWN;
	for (size_t i = 0; i < sizeof(by_signal) / sizeof(by_signal[0]); i++)
		if (by_signal[i].sig == sig)
			e->fault = by_signal[i].fault;
	if (sig == SIGFPE && si.si_code != FPE_INTDIV && si.si_code != FPE_INTOVF)
		e->fault = VM_FAULT_FLOAT;
	if (e->fault == VM_FAULT_SYSCALL)
		e->rip -= 2; /* the kernel reports the address after the syscall instruction */
	if (e->fault == VM_FAULT_BREAK)
		e->rip -= 1;
}

void pt_run(struct vm *vm, int cpu, struct vm_exit *e)
{
	(void)cpu; /* one vCPU: the stub's thread */
	pt_on_thread(vm, run_hop, e);
}
