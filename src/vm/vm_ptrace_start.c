/* Starting the ptrace backend's stub: an executable memfd, its seccomp program, the traced child.
 */
#include <errno.h>
#include <fcntl.h>
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

extern const uint8_t _binary_ember_stub_start[];
extern const uint8_t _binary_ember_stub_end[];

static pthread_once_t setup_once = PTHREAD_ONCE_INIT;
static int stub_fd = -1;
static uint8_t *bpf;
static size_t bpf_len;
static char setup_err[EMBER_ERR_MAX];

/* Built once: the stub as an executable memfd and the seccomp program that locks it. The filter
 * traps every syscall; the stub puts in front of it the one exception, mprotect from its gadget,
 * which the host drives to keep page permissions in step. */
static void setup(void)
{
	size_t len = (size_t)(_binary_ember_stub_end - _binary_ember_stub_start);
	int fd = memfd_create("ember-stub", MFD_CLOEXEC);
	if (fd < 0 || write(fd, _binary_ember_stub_start, len) != (ssize_t)len) {
		snprintf(setup_err, sizeof(setup_err), "stub: %s", strerror(errno));
		return;
	}
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_TRAP);
	int pipefd[2] = {-1, -1};
	/* a 32-bit call (int $0x80, sysenter) traps too, rather than killing the stub unseen: the
	 * host names it (vm_ptrace.c) */
	if (!ctx || seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_TRAP) ||
	    pipe(pipefd) < 0 || seccomp_export_bpf(ctx, pipefd[1]) < 0) {
		snprintf(setup_err, sizeof(setup_err), "seccomp filter: cannot build");
		goto out;
	}
	close(pipefd[1]);
	pipefd[1] = -1;
	bpf = malloc(65536);
	ssize_t r;
	while (bpf && (r = read(pipefd[0], bpf + bpf_len, 65536 - bpf_len)) > 0)
		bpf_len += (size_t)r;
	if (!bpf || bpf_len == 0) {
		snprintf(setup_err, sizeof(setup_err), "seccomp filter: cannot export");
		goto out;
	}
	stub_fd = fd;
	fd = -1;
out:
	if (fd >= 0)
		close(fd);
	if (pipefd[0] >= 0)
		close(pipefd[0]);
	if (pipefd[1] >= 0)
		close(pipefd[1]);
	if (ctx)
		seccomp_release(ctx);
}

int pt_setup(char *err, size_t errlen)
{
	pthread_once(&setup_once, setup);
	if (stub_fd < 0)
		return snprintf(err, errlen, "%s", setup_err), -1;
	return 0;
}

struct child_args {
	int memfd, bpf_fd;
	char *argv[4];
};

/* runs in the vfork-style child, sharing our memory until execveat: raw calls only */
static int child_main(void *p)
{
	struct child_args *a = p;
	char *envp[] = {NULL};
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* move everything out of the way first: any of them may already be fd 3 or 4 */
	int m = fcntl(a->memfd, F_DUPFD, 10), b = fcntl(a->bpf_fd, F_DUPFD, 10);
	int s = fcntl(stub_fd, F_DUPFD, 10);
	if (m < 0 || b < 0 || s < 0 || dup2(m, 3) < 0 || dup2(b, 4) < 0)
		_exit(126);
	syscall(SYS_close_range, 0, 2, 0);
	syscall(SYS_close_range, 5, ~0U,
		4 /* CLOSE_RANGE_CLOEXEC: the stub fd must live until exec */);
	if (ptrace(PTRACE_TRACEME, 0, 0, 0) < 0)
		_exit(126);
	syscall(SYS_execveat, s, "", a->argv, envp, AT_EMPTY_PATH);
	_exit(127);
}

int pt_wait_stop(pid_t pid, int *status)
{
	for (;;) {
		pid_t w = waitpid(pid, status, __WALL);
		if (w == pid)
			return 0;
		if (w < 0 && errno != EINTR)
			return -errno;
	}
}

int pt_start_stub(struct vm *vm, char *err, size_t errlen)
{
	struct pt_vm *p = PT(vm);
	int pipefd[2];
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return snprintf(err, errlen, "pipe: %s", strerror(errno)),
		       vm_errno_kind(errno, VM_ERR);
	if (write(pipefd[1], bpf, bpf_len) != (ssize_t)bpf_len) {
		close(pipefd[0]);
		close(pipefd[1]);
		return snprintf(err, errlen, "pipe: short write"), VM_ERR;
	}
	close(pipefd[1]);
	char top[32];
	snprintf(top, sizeof(top), "%llu", (unsigned long long)vm->user_top);
	struct child_args a = {
	    .memfd = vm->memfd, .bpf_fd = pipefd[0], .argv = {"ember-stub", "", top, NULL}};
	size_t stack_size = 64 * 1024;
	char *stack = malloc(stack_size);
	if (!stack) {
		close(pipefd[0]);
		return snprintf(err, errlen, "out of memory"), EMBER_ERR_NOMEM;
	}
	p->pid = clone(child_main, stack + stack_size, CLONE_VM | CLONE_VFORK | SIGCHLD, &a);
	int saved = errno;
	free(stack);
	close(pipefd[0]);
	if (p->pid < 0)
		return snprintf(err, errlen, "starting the stub: %s", strerror(saved)),
		       vm_errno_kind(saved, VM_ERR);
	p->tracer = (pid_t)syscall(SYS_gettid);
	int st;
	/* the first stop is the exec, the second the stub's ready int3 */
	if (pt_wait_stop(p->pid, &st) || !WIFSTOPPED(st) ||
	    ptrace(PTRACE_SETOPTIONS, p->pid, 0, PTRACE_O_EXITKILL) < 0 ||
	    ptrace(PTRACE_CONT, p->pid, 0, 0) < 0 || pt_wait_stop(p->pid, &st) || !WIFSTOPPED(st) ||
	    WSTOPSIG(st) != SIGTRAP) {
		snprintf(err, errlen, "the stub did not start (status %#x)", st);
		return VM_ERR;
	}
	if (ptrace(PTRACE_GETREGS, p->pid, 0, &p->regs) < 0)
		return snprintf(err, errlen, "PTRACE_GETREGS: %s", strerror(errno)), VM_ERR;
	p->gadget = p->regs.rip;
	p->vdso = p->regs.rbx;
	/* GS base: the in-guest runtime's area of the one vCPU (abi.h), as KVM sets it */
	p->regs.gs_base = EMBER_RT_CPU(0);
	p->regs_dirty = 1;
	return VM_OK;
}
