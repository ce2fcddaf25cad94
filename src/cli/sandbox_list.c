/* The sandbox's allow-list: every system call ember serve and ember run make after set-up, by
 * group; docs/security.md says why each one is here and how the list was found. */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <linux/userfaultfd.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>

#include "cli/sandbox.h"

#define BASE   SBX_BASE
#define KVM    SBX_KVM
#define PTRACE SBX_PTRACE
#define SERVER SBX_SERVER
#define ASAN   SBX_ASAN

const struct sbx_call sbx_calls[] = {
    /* files, pipes and sockets alike */
    {"read", BASE},
    {"write", BASE},
    {"pread64", BASE},
    {"preadv", BASE}, /* a working set read whole, each page to its place */
    {"pwrite64", BASE},
    {"lseek", BASE},
    {"close", BASE},
    {"dup2", BASE},
    {"fcntl", BASE},
    {"pipe2", BASE},
    {"poll", BASE},
    /* the state folder: deployments, images, snapshots, secrets */
    {"openat", BASE},
    {"newfstatat", BASE},
    {"access", BASE},
    {"readlink", BASE},
    {"readlinkat", BASE}, /* a bundle's links, read once at load */
    {"getdents64", BASE},
    {"getcwd", BASE}, /* realpath of a relative state folder (make run's ./var) */
    {"mkdir", BASE},
    {"rmdir", BASE},
    {"unlink", BASE},
    {"link", BASE},
    {"symlink", BASE}, /* an image's digest hint beside its site table (img_table.c) */
    {"unlinkat", BASE},
    {"rename", BASE},
    {"renameat2", BASE},
    {"fsync", BASE},
    {"fdatasync", BASE},
    {"ftruncate", BASE},
    {"fallocate", BASE},
    {"fadvise64", BASE},
    {"fchmod", BASE},
    /* memory: the allocator, guest memory (a memfd), snapshots' page scans */
    {"brk", BASE},
    {"mmap", BASE},
    {"munmap", BASE},
    {"mremap", BASE},
    {"mprotect", BASE},
    {"madvise", BASE},
    {"memfd_create", BASE},
    {"sysinfo", BASE},
    /* threads and their locks */
    {"futex", BASE},
    {"set_robust_list", BASE},
    {"rseq", BASE},
    {"gettid", BASE},
    {"getpid", BASE},
    {"exit", BASE},
    {"exit_group", BASE},
    /* signals: the deadline's, the SIGSYS of this sandbox, shutdown */
    {"rt_sigprocmask", BASE},
    {"rt_sigreturn", BASE},
    {"rt_sigtimedwait", BASE},
    {"restart_syscall", BASE},
    {"tgkill", BASE},
    {"kill", BASE},
    /* time: deadlines and clocks the vDSO does not serve */
    {"timer_create", BASE},
    {"timer_settime", BASE},
    {"timer_delete", BASE},
    {"clock_gettime", BASE},
    {"clock_nanosleep", BASE},
    {"getrandom", BASE},
    /* cold starts: userfaultfd (its ioctls below) and the event it polls besides */
    {"userfaultfd", BASE},
    {"eventfd2", BASE},
    /* the ptrace backend: the stub is started with vfork-style clone and execveat of its memfd,
     * driven with ptrace and waited for; its userfaultfd is taken with pidfd_getfd; libseccomp
     * asks the kernel what it supports when it builds the stub's filter */
    {"wait4", PTRACE},
    {"execveat", PTRACE},
    {"close_range", PTRACE},
    {"pidfd_open", PTRACE},
    {"pidfd_getfd", PTRACE},
    /* the server: connections (the listening socket is made before the sandbox) */
    {"accept4", SERVER},
    {"recvfrom", SERVER},
    {"sendto", SERVER},
    {"sendmsg", SERVER},
    {"shutdown", SERVER},
    {"setsockopt", SERVER},
    {"getsockopt", SERVER},
    {"getsockname", SERVER},
    /* async calls' callbacks (libcurl): connections out, its resolver thread's wake-up pair,
     * DNS over UDP (glibc sends the A and AAAA queries with sendmmsg), the host name */
    {"connect", SERVER},
    {"getpeername", SERVER},
    {"socketpair", SERVER},
    {"sendmmsg", SERVER},
    {"uname", SERVER},
    /* AddressSanitizer's run-time (make asan): its start, reports and LeakSanitizer at exit,
     * which stops the threads with ptrace from a clone of its own */
    {"ptrace", ASAN},
    {"wait4", ASAN},
    {"sched_getaffinity", ASAN},
    {"getppid", ASAN},
    {"sigaltstack", ASAN},
    {"getdents", ASAN},
    {"open", ASAN},
    {"prlimit64", ASAN},
    {"sched_yield", ASAN},
    {NULL, 0},
};

/* calls allowed only with the given argument: arg (0-based) & mask compared with value; several
 * entries for one call allow any of them */
/* the kernel reads an ioctl's request as 32 bits */
#define REQ(r, g)                                                                                  \
	{                                                                                          \
		"ioctl", g, 1, SCMP_CMP_MASKED_EQ, 0xffffffffu, (uint32_t)(r)                      \
	}
#define NS_FLAGS                                                                                   \
	(CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |             \
	 CLONE_NEWPID | CLONE_NEWNET)
const struct sbx_arg sbx_args[] = {
    /* KVM: the system and VM ioctls of creating a machine, the vCPU's of running it */
    REQ(KVM_GET_API_VERSION, KVM),
    REQ(KVM_CHECK_EXTENSION, KVM),
    REQ(KVM_GET_VCPU_MMAP_SIZE, KVM),
    REQ(KVM_GET_SUPPORTED_CPUID, KVM),
    REQ(KVM_CREATE_VM, KVM),
    REQ(KVM_SET_TSS_ADDR, KVM),
    REQ(KVM_SET_USER_MEMORY_REGION, KVM),
    REQ(KVM_CREATE_VCPU, KVM),
    REQ(KVM_SET_CPUID2, KVM),
    REQ(KVM_GET_SREGS, KVM),
    REQ(KVM_SET_SREGS, KVM),
    REQ(KVM_GET_REGS, KVM),
    REQ(KVM_SET_REGS, KVM),
    REQ(KVM_GET_MSRS, KVM),
    REQ(KVM_SET_MSRS, KVM),
    REQ(KVM_SET_XCRS, KVM),
    REQ(KVM_GET_XSAVE, KVM),
    REQ(KVM_SET_XSAVE, KVM),
    REQ(KVM_GET_VCPU_EVENTS, KVM),
    REQ(KVM_SET_VCPU_EVENTS, KVM), /* an exception in flight at the deadline is dropped */
    REQ(KVM_RUN, KVM),
    REQ(KVM_GET_DIRTY_LOG, KVM), /* the reset finds the pages the guest wrote */
    REQ(KVM_GET_DEVICE_ATTR,
	KVM), /* the vCPU's TSC offset: the guest's clock without an MSR read */
    REQ(KVM_SET_SIGNAL_MASK, KVM), /* the deadline timer's signal during KVM_RUN only */
    REQ(KVM_SET_DEVICE_ATTR, KVM), /* a later vCPU keeps the first one's TSC offset */
    /* cold starts */
    REQ(UFFDIO_API, BASE),
    REQ(UFFDIO_REGISTER, BASE),
    REQ(UFFDIO_UNREGISTER, BASE),
    REQ(UFFDIO_COPY, BASE),
    REQ(UFFDIO_WAKE, BASE),
    REQ(USERFAULTFD_IOC_NEW, BASE),
    /* stdio asks whether stdout is a terminal */
    REQ(TCGETS, BASE),
    /* nobody but this sandbox handles SIGSYS */
    {"rt_sigaction", BASE, 0, SCMP_CMP_NE, SIGSYS, 0},
    /* threads (glibc falls back to clone when clone3 says ENOSYS, below: clone3's flags are in
     * memory, out of the filter's reach) and the stub's vfork, never a new namespace */
    {"clone", BASE, 0, SCMP_CMP_MASKED_EQ, NS_FLAGS, 0},
    /* the stub's child sets its parent-death signal; the stub locks itself */
    {"prctl", BASE, 0, SCMP_CMP_EQ, PR_SET_NAME, 0},
    {"prctl", PTRACE, 0, SCMP_CMP_EQ, PR_SET_PDEATHSIG, 0},
    {"prctl", PTRACE, 0, SCMP_CMP_EQ, PR_SET_NO_NEW_PRIVS, 0},
    {"prctl", PTRACE, 0, SCMP_CMP_EQ, PR_SET_SECCOMP, 0},
    {"prctl", ASAN, 0, SCMP_CMP_EQ, PR_SET_PDEATHSIG, 0},
    {"prctl", ASAN, 0, SCMP_CMP_EQ, PR_GET_DUMPABLE, 0},
    {"prctl", ASAN, 0, SCMP_CMP_EQ, PR_SET_DUMPABLE, 0},
    {"prctl", ASAN, 0, SCMP_CMP_EQ, PR_SET_PTRACER, 0},
    /* the ptrace backend's requests: a child asks to be traced, never an attach to others */
    {"ptrace", PTRACE, 0, SCMP_CMP_EQ, PTRACE_TRACEME, 0},
    {"ptrace", PTRACE, 0, SCMP_CMP_EQ, PTRACE_SETOPTIONS, 0},
    {"ptrace", PTRACE, 0, SCMP_CMP_EQ, PTRACE_CONT, 0},
    {"ptrace", PTRACE, 0, SCMP_CMP_EQ, PTRACE_GETREGS, 0},
    {"ptrace", PTRACE, 0, SCMP_CMP_EQ, PTRACE_SETREGS, 0},
    {"ptrace", PTRACE, 0, SCMP_CMP_EQ, PTRACE_GETREGSET, 0},
    {"ptrace", PTRACE, 0, SCMP_CMP_EQ, PTRACE_SETREGSET, 0},
    {"ptrace", PTRACE, 0, SCMP_CMP_EQ, PTRACE_GETSIGINFO, 0},
    /* callbacks: IP sockets (a Unix or netlink one is answered EACCES, below) */
    {"socket", SERVER, 0, SCMP_CMP_EQ, AF_INET, 0},
    {"socket", SERVER, 0, SCMP_CMP_EQ, AF_INET6, 0},
    REQ(FIONREAD, SERVER),
    {NULL, 0, 0, 0, 0, 0},
};

/* calls answered with an errno instead of running */
const struct sbx_errno sbx_errnos[] = {
    {"clone3", BASE, ENOSYS, -1, 0},
    /* a Unix socket (glibc's resolver tries nscd's) or a netlink one: the libraries go on
     * without, and nothing can connect to a local daemon's socket (socketpair's are connected
     * already) */
    {"socket", SERVER, EACCES, 0, AF_UNIX},
    {"socket", SERVER, EACCES, 0, AF_NETLINK},
    {NULL, 0, 0, 0, 0},
};
