/* The ptrace backend's stub: maps guest memory, locks itself with seccomp and waits at int3. */
/* Built freestanding and static-PIE, so nothing of the host process exists in its address space. */
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/prctl.h>
#include <linux/seccomp.h>
#include <asm/unistd.h>
#include <stddef.h>
#include <stdint.h>

#include "ember/abi.h"

#define PROT_NONE  0
#define MAP_SHARED 0x01
#define MAP_FIXED  0x10

static long sys6(long n, long a, long b, long c, long d, long e, long f)
{
	long ret;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

static void die(int step)
{
	sys6(__NR_exit_group, 100 + step, 0, 0, 0, 0, 0);
	for (;;)
		;
}

static uint64_t parse_u64(const char *s)
{
	uint64_t v = 0;
	while (*s >= '0' && *s <= '9')
		v = v * 10 + (uint64_t)(*s++ - '0');
	return v;
}

/* AT_SYSINFO_EHDR from the auxiliary vector after argv and envp, or 0 */
static long vdso_base(const long *sp)
{
	const long *v = sp + sp[0] + 2; /* past argc, argv and its NULL */
	while (*v)
		v++;
	for (v++; v[0]; v += 2)
		if (v[0] == 33 /* AT_SYSINFO_EHDR */)
			return v[1];
	return 0;
}

#define PREFIX 9
static struct sock_filter filter[4096];

/* the address right after the gadget's syscall instruction, as seccomp reports it */
extern const char stub_gadget_ret[];

/* Our own first instructions of the filter: mprotect (the 64-bit call: number 10 of another ABI
 * is another call, i386's unlink) is allowed only from the gadget the host drives; the host's
 * program (every other call traps) follows. */
static void gadget_prefix(void)
{
	uint64_t ip = (uint64_t)(uintptr_t)stub_gadget_ret;
	struct sock_filter pre[PREFIX] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 7),
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mprotect, 0, 5),
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, instruction_pointer)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)ip, 0, 3),
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		     offsetof(struct seccomp_data, instruction_pointer) + 4),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(ip >> 32), 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	for (int i = 0; i < PREFIX; i++)
		filter[i] = pre[i];
}

void stub_main(long *sp)
{
	if (sp[0] < 3)
		die(1);
	uint64_t user_top = parse_u64((const char *)sp[3]) /* argv[2] */;
	/* fd 3: guest memory; fd 4: the seccomp program */
	/* all of guest memory from address 0, inaccessible until the host grants pages: page 0
	 * and the runtime's area below EMBER_SYS_END are granted only to the in-guest runtime */
	long m = sys6(__NR_mmap, 0, (long)user_top, PROT_NONE, MAP_SHARED | MAP_FIXED, 3, 0);
	/* below vm.mmap_min_addr only a privileged process may map: without page 0 the in-guest
	 * runtime cannot be used, but trapping syscalls work as before */
	if (m != 0 &&
	    sys6(__NR_mmap, (long)EMBER_RT_BASE, (long)(user_top - EMBER_RT_BASE), PROT_NONE,
		 MAP_SHARED | MAP_FIXED, 3, (long)EMBER_RT_BASE) != (long)EMBER_RT_BASE)
		die(2);
	gadget_prefix();
	char *host = (char *)(filter + PREFIX);
	long n = 0, r, room = (long)(sizeof(filter) - PREFIX * sizeof(struct sock_filter));
	while ((r = sys6(__NR_read, 4, (long)(host + n), room - n, 0, 0, 0)) > 0)
		n += r;
	if (r < 0 || n == 0 || n % sizeof(struct sock_filter))
		die(3);
	n += PREFIX * (long)sizeof(struct sock_filter);
	sys6(__NR_close, 3, 0, 0, 0, 0, 0);
	sys6(__NR_close, 4, 0, 0, 0, 0, 0);
	/* fd 0 (the lowest free) becomes a userfaultfd of this address space: the host takes it
	 * (pidfd_getfd) to serve guest-memory faults during cold starts; the filter keeps us from
	 * using it. Without root (ember serve --user) only one that sees faults taken in user mode
	 * may be made, which is all the guest's code takes here: its syscalls never run. */
	long uffd =
	    sys6(__NR_userfaultfd, 02000000 | 04000 /* O_CLOEXEC | O_NONBLOCK */, 0, 0, 0, 0, 0);
	if (uffd == -1 /* EPERM */)
		uffd = sys6(__NR_userfaultfd, 02000000 | 04000 | 1 /* UFFD_USER_MODE_ONLY */, 0, 0,
			    0, 0, 0);
	if (uffd != 0)
		die(6);
	struct sock_fprog prog = {.len = (unsigned short)(n / sizeof(struct sock_filter)),
				  .filter = filter};
	if (sys6(__NR_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0) < 0 ||
	    sys6(__NR_prctl, PR_SET_SECCOMP, SECCOMP_MODE_FILTER, (long)&prog, 0, 0, 0) < 0)
		die(4);
	/* ready: the host stops us here; the instruction after int3 is the gadget it uses to run
	 * the calls the filter allows (mprotect) on the guest's memory. rbx holds where the kernel
	 * put our vDSO: a sysenter returns into it, which is how the host knows one ran */
	__asm__ volatile("int3\n"
			 "1: syscall\n"
			 ".globl stub_gadget_ret\n"
			 "stub_gadget_ret: int3\n"
			 "jmp 1b\n" ::"b"(vdso_base(sp)));
	die(5);
}

__asm__(".globl _start\n"
	"_start:\n"
	"mov %rsp, %rdi\n"
	"and $-16, %rsp\n"
	"call stub_main\n"
	"hlt\n");
