/* The ptrace backend: the guest runs natively in a seccomp-locked stub process (no KVM needed). */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <elf.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vm/vm_ptrace.h"

/* Every ptrace request must come from the tracer: calls from elsewhere hop to its thread. */
struct hop {
	struct vm *vm;
	void (*fn)(struct vm *vm, void *arg);
	void *arg;
};

static void hop_run(void *p)
{
	struct hop *h = p;
	h->fn(h->vm, h->arg);
}

int pt_on_tracer(const struct pt_vm *p)
{
	return p->tracer == (pid_t)syscall(SYS_gettid);
}

void pt_on_thread(struct vm *vm, void (*fn)(struct vm *, void *), void *arg)
{
	struct pt_vm *p = PT(vm);
	if (!p->thread || pt_on_tracer(p)) {
		fn(vm, arg);
		return;
	}
	struct hop h = {vm, fn, arg};
	vm_thread_call(p->thread, hop_run, &h);
}

struct create_args {
	char *err;
	size_t errlen;
	int rc;
};

static void create_hop(struct vm *vm, void *arg)
{
	struct create_args *a = arg;
	a->rc = pt_start_stub(vm, a->err, a->errlen);
}

static int pt_create(struct vm *vm, char *err, size_t errlen)
{
	if (pt_setup(err, errlen))
		return VM_ERR;
	struct pt_vm *p = calloc(1, sizeof(*p));
	if (!p)
		return snprintf(err, errlen, "out of memory"), EMBER_ERR_NOMEM;
	p->pid = -1;
	p->tracer = -1;
	p->uffd = -1;
	vm->priv = p;
	int rc = vm_thread_start(&p->thread);
	if (rc)
		return snprintf(err, errlen, "cannot start the vCPU thread: %s", strerror(-rc)),
		       vm_errno_kind(-rc, VM_ERR);
	struct create_args a = {err, errlen, VM_ERR};
	pt_on_thread(vm, create_hop, &a);
	return a.rc;
}

static void kill_hop(struct vm *vm, void *arg)
{
	(void)arg;
	struct pt_vm *p = PT(vm);
	kill(p->pid, SIGKILL);
	int st;
	while (waitpid(p->pid, &st, __WALL) < 0 && errno == EINTR)
		;
}

static void pt_destroy(struct vm *vm)
{
	struct pt_vm *p = PT(vm);
	if (!p)
		return;
	if (p->pid > 0)
		pt_on_thread(vm, kill_hop, NULL);
	vm_thread_stop(p->thread);
	if (p->uffd >= 0)
		close(p->uffd);
	free(p);
	vm->priv = NULL;
}

static void pt_call(struct vm *vm, void (*fn)(void *), void *arg)
{
	struct pt_vm *p = PT(vm);
	if (pt_on_tracer(p))
		fn(arg);
	else
		vm_thread_call(p->thread, fn, arg);
}

/* the kernel's CPU clock of a process (or, with PERTHREAD, a thread): clock_getcpuclockid's
 * encoding, without its clock_getres check */
#define CPUCLOCK_SCHED	   2
#define CPUCLOCK_PERTHREAD 4
static uint64_t cpu_clock_ns(pid_t id, int thread)
{
	clockid_t c =
	    (clockid_t)((~(unsigned)id << 3) | CPUCLOCK_SCHED | (thread ? CPUCLOCK_PERTHREAD : 0));
	struct timespec ts;
	if (id <= 0 || clock_gettime(c, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t pt_machine_cpu_ns(struct vm *vm)
{
	struct pt_vm *p = PT(vm);
	return cpu_clock_ns(p->pid, 0) + cpu_clock_ns(p->tracer, 1);
}

static int pt_usable(const struct vm *vm)
{
	return !PT(vm)->dead;
}

static int pt_get_regs(struct vm *vm, int cpu, struct vm_regs *r)
{
	(void)cpu;
	const struct user_regs_struct *u = &PT(vm)->regs;
	*r = (struct vm_regs){u->rax, u->rbx, u->rcx, u->rdx, u->rsi, u->rdi,
			      u->rsp, u->rbp, u->r8,  u->r9,  u->r10, u->r11,
			      u->r12, u->r13, u->r14, u->r15, u->rip, u->eflags};
	return 0;
}

static int pt_set_regs(struct vm *vm, int cpu, const struct vm_regs *r)
{
	(void)cpu;
	struct pt_vm *p = PT(vm);
	struct user_regs_struct *u = &p->regs;
	u->rax = r->rax, u->rbx = r->rbx, u->rcx = r->rcx, u->rdx = r->rdx;
	u->rsi = r->rsi, u->rdi = r->rdi, u->rsp = r->rsp, u->rbp = r->rbp;
	u->r8 = r->r8, u->r9 = r->r9, u->r10 = r->r10, u->r11 = r->r11;
	u->r12 = r->r12, u->r13 = r->r13, u->r14 = r->r14, u->r15 = r->r15;
	u->rip = r->rip;
	/* only the arithmetic flags and DF are the guest's to set */
	u->eflags = (u->eflags & ~0xcd5ULL) | (r->rflags & 0xcd5ULL);
	u->orig_rax = (uint64_t)-1;
	p->regs_dirty = 1;
	return 0;
}

static int pt_set_fs_base(struct vm *vm, int cpu, uint64_t base)
{
	(void)cpu;
	PT(vm)->regs.fs_base = base;
	PT(vm)->regs_dirty = 1;
	return 0;
}

static int pt_get_fs_base(struct vm *vm, int cpu, uint64_t *base)
{
	(void)cpu;
	*base = PT(vm)->regs.fs_base;
	return 0;
}

struct protect_args {
	uint64_t addr, len;
	int prot, rc;
};

/* Runs mprotect inside the stub through its gadget, then puts the guest's registers back. */
static int protect_now(struct vm *vm, uint64_t addr, uint64_t len, int prot)
{
	struct pt_vm *p = PT(vm);
	struct vm_exit e;
	if (pt_check_thread(vm, &e))
		return -EIO;
	struct user_regs_struct saved = p->regs;
	p->regs.rip = p->gadget;
	p->regs.rax = SYS_mprotect;
	p->regs.orig_rax = (uint64_t)-1;
	p->regs.rdi = addr;
	p->regs.rsi = len;
	p->regs.rdx = (uint64_t)prot;
	p->regs_dirty = 1;
	int sig;
	siginfo_t si;
	int expired = vm->expired;
	vm->expired = 0; /* a pending deadline stop must not cut the injection short */
	int rc = pt_resume(vm, &e, &sig, &si);
	while (rc == 1) {
		expired |= e.kind == VM_EXIT_TIMEOUT;
		rc = pt_resume(vm, &e, &sig, &si);
	}
	vm->expired = vm->expired || expired;
	long ret = rc == 0 && sig == SIGTRAP ? (long)p->regs.rax : -EIO;
	p->regs = saved;
	p->regs_dirty = 1;
	return ret < 0 ? (int)ret : 0;
}

static void protect_hop(struct vm *vm, void *arg)
{
	struct protect_args *a = arg;
	a->rc = protect_now(vm, a->addr, a->len, a->prot);
}

static int pt_protect(struct vm *vm, uint64_t addr, uint64_t len, int prot)
{
	struct protect_args a = {addr, len, prot, 0};
	pt_on_thread(vm, protect_hop, &a);
	return a.rc;
}

struct fpu_args {
	void *buf;
	size_t len;
	int set, rc;
};

static void fpu_hop(struct vm *vm, void *arg)
{
	struct fpu_args *a = arg;
	struct iovec iov = {a->buf, a->len};
	long rc = ptrace(a->set ? PTRACE_SETREGSET : PTRACE_GETREGSET, PT(vm)->pid,
			 (void *)NT_X86_XSTATE, &iov);
	a->rc = rc < 0 ? -errno : 0;
	a->len = iov.iov_len;
}

static int pt_get_fpu(struct vm *vm, int cpu, void *buf, size_t *len)
{
	(void)cpu;
	struct fpu_args a = {buf, VM_FPU_MAX, 0, 0};
	pt_on_thread(vm, fpu_hop, &a);
	*len = a.len;
	/* the kernel cuts the state to the buffer without a word, and a cut one cannot be set
	 * again: refused here, not at every restore */
	if (!a.rc && a.len == VM_FPU_MAX)
		return -EOVERFLOW;
	return a.rc;
}

static int pt_set_fpu(struct vm *vm, int cpu, const void *buf, size_t len)
{
	(void)cpu;
	struct fpu_args a = {(void *)buf, len, 1, 0};
	pt_on_thread(vm, fpu_hop, &a);
	return a.rc;
}

static int pt_guest_uffd(struct vm *vm)
{
	struct pt_vm *p = PT(vm);
	if (p->uffd >= 0)
		return p->uffd;
	int pidfd = (int)syscall(SYS_pidfd_open, p->pid, 0);
	if (pidfd < 0)
		return -2;
	p->uffd = (int)syscall(SYS_pidfd_getfd, pidfd, 0, 0); /* the stub's fd 0 */
	close(pidfd);
	if (p->uffd < 0 || vm_uffd_api(p->uffd)) {
		if (p->uffd >= 0)
			close(p->uffd);
		p->uffd = -1;
		return -2;
	}
	fcntl(p->uffd, F_SETFD, FD_CLOEXEC);
	return p->uffd;
}

static void pt_kick(struct vm *vm, int cpu)
{
	(void)cpu;
	struct pt_vm *p = PT(vm);
	if (p && p->pid > 0)
		kill(p->pid, SIGSTOP);
}

/* the tracer thread's stack and its guard page; the stub's userfaultfd once taken over (the
 * stub's own mappings are its process's) */
static void pt_hold(const struct vm *vm, struct vm_hold *h)
{
	const struct pt_vm *p = PT(vm);
	if (!p)
		return;
	h->maps += p->thread ? 2 : 0;
	h->fds += p->uffd >= 0;
}

static void pt_drop_uffd(struct vm *vm)
{
	struct pt_vm *p = PT(vm);
	if (p && p->uffd >= 0)
		close(p->uffd);
	if (p)
		p->uffd = -1;
}

const struct vm_ops vm_ptrace_ops = {
    .name = "ptrace",
    .create = pt_create,
    .destroy = pt_destroy,
    .run = pt_run,
    .get_regs = pt_get_regs,
    .set_regs = pt_set_regs,
    .set_fs_base = pt_set_fs_base,
    .get_fs_base = pt_get_fs_base,
    .protect = pt_protect,
    .kick = pt_kick,
    .get_fpu = pt_get_fpu,
    .set_fpu = pt_set_fpu,
    .call = pt_call,
    .guest_uffd = pt_guest_uffd,
    .usable = pt_usable,
    .machine_cpu_ns = pt_machine_cpu_ns,
    .hold = pt_hold,
    .drop_uffd = pt_drop_uffd,
};
