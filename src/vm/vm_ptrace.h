/* The ptrace backend's shared pieces: its per-machine state, and starting the stub. */
#ifndef EMBER_VM_PTRACE_H
#define EMBER_VM_PTRACE_H

#include <signal.h>
#include <sys/types.h>
#include <sys/user.h>

#include "vm/vm_impl.h"

struct pt_vm {
	struct vm_thread *thread; /* the vCPU thread: the stub's tracer */
	pid_t pid;
	pid_t tracer; /* ptrace requests must come from the thread that started the stub */
	uint64_t gadget;
	uint64_t vdso; /* the stub's vDSO, where the kernel sends a sysenter back to */
	struct user_regs_struct regs;
	int regs_dirty;
	int dead;
	int uffd; /* the stub's userfaultfd, taken over on first use */
};

#define PT(vm) ((struct pt_vm *)(vm)->priv)

/* Builds, once per process, the stub's executable memfd and its seccomp program. */
int pt_setup(char *err, size_t errlen);
/* Starts the stub for vm on this thread, which becomes its tracer (vm_ptrace_start.c). */
int pt_start_stub(struct vm *vm, char *err, size_t errlen);
/* waits for the next stop or end of pid; -errno on failure */
int pt_wait_stop(pid_t pid, int *status);
/* vm_ptrace.c: the caller is vm's tracer; fn(vm, arg) run on the tracer's thread (hopping there
 * when the caller is another) */
int pt_on_tracer(const struct pt_vm *p);
void pt_on_thread(struct vm *vm, void (*fn)(struct vm *, void *), void *arg);
/* vm_ptrace_run.c: the run of vm's guest until its next exit, in e; the stub's thread checked
 * (0, or an exit set in e); the stub continued until a stop we report (its signal and siginfo) */
void pt_run(struct vm *vm, int cpu, struct vm_exit *e);
int pt_check_thread(struct vm *vm, struct vm_exit *e);
int pt_resume(struct vm *vm, struct vm_exit *e, int *sig, siginfo_t *si);

#endif
