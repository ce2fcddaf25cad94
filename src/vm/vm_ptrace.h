/* The ptrace backend's shared pieces: its per-machine state, and starting the stub. */
#ifndef EMBER_VM_PTRACE_H
#define EMBER_VM_PTRACE_H

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

#endif
