/* Process syscalls: exit, identity, thread area, signal bookkeeping, limits and randomness. */
#include <asm/prctl.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>

#include "sys/sys.h"

#define GUEST_PID 1
#define GUEST_UID 1000

static long sys_exit_group(struct sys_state *st, const uint64_t a[6])
{
	sys_stop(st, SYS_EXITED, (int)(a[0] & 0xff), "exited with status %d", (int)(a[0] & 0xff));
	return 0;
}

static long ret_pid(struct sys_state *st, const uint64_t a[6])
{
	(void)st, (void)a;
	return GUEST_PID;
}

static long ret_zero(struct sys_state *st, const uint64_t a[6])
{
	(void)st, (void)a;
	return 0;
}

static long ret_uid(struct sys_state *st, const uint64_t a[6])
{
	(void)st, (void)a;
	return GUEST_UID;
}

static long ret_enosys(struct sys_state *st, const uint64_t a[6])
{
	(void)st, (void)a;
	return -ENOSYS; /* rseq: served as a kernel without it would, so glibc goes on without */
}

static long sys_arch_prctl(struct sys_state *st, const uint64_t a[6])
{
	if (a[0] == ARCH_SET_FS)
		return a[1] >= (1ULL << 47) ? -EPERM : vm_set_fs_base(st->vm, a[1]) ? -EIO : 0;
	if (a[0] == ARCH_GET_FS) {
		uint64_t base;
		if (vm_get_fs_base(st->vm, &base))
			return -EIO;
		return sys_put(st, a[1], &base, sizeof(base));
	}
	return -EINVAL;
}

static long sys_set_tid_address(struct sys_state *st, const uint64_t a[6])
{
	st->tid_addr = a[0];
	return GUEST_PID;
}

static int bad_signal(uint64_t sig)
{
	return sig == 0 || sig > 64;
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
	if (a[1])
		st->sig[sig] = act;
	return a[2] ? sys_put(st, a[2], &old, sizeof(old)) : 0;
}

static long sys_rt_sigprocmask(struct sys_state *st, const uint64_t a[6])
{
	if (a[3] != 8)
		return -EINVAL;
	uint64_t set = 0;
	if (a[1] && sys_get(st, &set, a[1], sizeof(set)))
		return -EFAULT;
	if (a[2] && sys_put(st, a[2], &st->sigmask, sizeof(st->sigmask)))
		return -EFAULT;
	if (!a[1])
		return 0;
	const uint64_t never = (1ULL << (SIGKILL - 1)) | (1ULL << (SIGSTOP - 1));
	if (a[0] == SIG_BLOCK)
		st->sigmask |= set;
	else if (a[0] == SIG_UNBLOCK)
		st->sigmask &= ~set;
	else if (a[0] == SIG_SETMASK)
		st->sigmask = set;
	else
		return -EINVAL;
	st->sigmask &= ~never;
	return 0;
}

static long sys_sigaltstack(struct sys_state *st, const uint64_t a[6])
{
	/* as Linux: the new stack is read before the old one is written, which may be the same
	 * memory */
	uint64_t ss[3], old[3];
	memcpy(old, st->altstack, sizeof(old));
	if (!old[0] && !old[2])
		old[1] = SS_DISABLE;
	if (a[0] && sys_get(st, ss, a[0], sizeof(ss)))
		return -EFAULT;
	if (a[0])
		memcpy(st->altstack, ss, sizeof(ss));
	return a[1] ? sys_put(st, a[1], old, sizeof(old)) : 0;
}

/* A signal to itself: handlers are recorded but never run, so any signal whose action is not to
 * ignore it ends the invocation the way the default action would. */
static long send_self(struct sys_state *st, uint64_t sig)
{
	if (sig == 0)
		return 0;
	if (bad_signal(sig))
		return -EINVAL;
	static const int ignored_by_default[] = {SIGCHLD, SIGCONT, SIGURG, SIGWINCH};
	if (st->sig[sig].handler == (uint64_t)(uintptr_t)SIG_IGN)
		return 0;
	if (st->sig[sig].handler == (uint64_t)(uintptr_t)SIG_DFL)
		for (size_t i = 0; i < sizeof(ignored_by_default) / sizeof(int); i++)
			if ((int)sig == ignored_by_default[i])
				return 0;
	sys_stop(st, SYS_SIGNALED, (int)sig, "killed by signal %d (%s)", (int)sig,
		 sigabbrev_np((int)sig) ? sigabbrev_np((int)sig) : "?");
	return 0;
}

static long sys_kill(struct sys_state *st, const uint64_t a[6])
{
	int pid = (int)a[0];
	if (pid != GUEST_PID && pid != 0 && pid != -1)
		return -EPERM;
	return send_self(st, a[1]);
}

static long sys_tkill(struct sys_state *st, const uint64_t a[6])
{
	return (int)a[0] == GUEST_PID ? send_self(st, a[1]) : -ESRCH;
}

static long sys_tgkill(struct sys_state *st, const uint64_t a[6])
{
	return (int)a[0] == GUEST_PID && (int)a[1] == GUEST_PID ? send_self(st, a[2]) : -ESRCH;
}

static long sys_uname(struct sys_state *st, const uint64_t a[6])
{
	struct utsname u;
	memset(&u, 0, sizeof(u));
	strcpy(u.sysname, "Linux");
	strcpy(u.nodename, "ember");
	strcpy(u.release, "6.1.0-ember");
	strcpy(u.version, "#1 SMP Ember virtine");
	strcpy(u.machine, "x86_64");
	strcpy(u.domainname, "(none)");
	return sys_put(st, a[0], &u, sizeof(u));
}

static long sys_prlimit64(struct sys_state *st, const uint64_t a[6])
{
	if (a[0] != 0 && (int)a[0] != GUEST_PID)
		return -ESRCH;
	if (a[1] >= RLIM_NLIMITS)
		return -EINVAL;
	if (a[2])
		return -EPERM;
	if (!a[3])
		return 0;
	struct rlimit old = {RLIM_INFINITY, RLIM_INFINITY};
	if (a[1] == RLIMIT_STACK)
		old.rlim_cur = old.rlim_max = st->proc.stack_size;
	else if (a[1] == RLIMIT_AS || a[1] == RLIMIT_DATA)
		old.rlim_cur = old.rlim_max = vm_user_top(st->vm);
	else if (a[1] == RLIMIT_NOFILE)
		old.rlim_cur = old.rlim_max = 4;
	return sys_put(st, a[3], &old, sizeof(old));
}

static long sys_sched_getaffinity(struct sys_state *st, const uint64_t a[6])
{
	if (a[1] < 8 || a[1] % 8)
		return -EINVAL;
	uint8_t *mask = sys_user(st, a[2], 8, PROT_WRITE);
	if (!mask)
		return -EFAULT;
	memset(mask, 0, 8);
	mask[0] = 1; /* one CPU */
	return 8;
}

static long sys_getrandom(struct sys_state *st, const uint64_t a[6])
{
	uint64_t len = a[1] > 33554431 ? 33554431 : a[1];
	void *p = sys_user(st, a[0], len, PROT_WRITE);
	if (!p)
		return -EFAULT;
	if (a[2] & ~(uint64_t)(GRND_NONBLOCK | GRND_RANDOM | GRND_INSECURE))
		return -EINVAL;
	ssize_t n = getrandom(p, len, 0);
	return n < 0 ? -errno : n;
}

static long sys_sysinfo(struct sys_state *st, const uint64_t a[6])
{
	struct sysinfo si;
	memset(&si, 0, sizeof(si));
	si.uptime = (long)((base_now_ns() - st->start_ns) / 1000000000ULL);
	si.totalram = vm_user_top(st->vm);
	si.freeram = vm_user_top(st->vm) / 2;
	si.procs = 1;
	si.mem_unit = 1;
	return sys_put(st, a[0], &si, sizeof(si));
}

const struct sys_entry sys_proc_table[] = {
    {SYS_exit, "exit", sys_exit_group, 0, NULL},
    {SYS_exit_group, "exit_group", sys_exit_group, 0, NULL},
    {SYS_getpid, "getpid", ret_pid, 0, NULL},
    {SYS_gettid, "gettid", ret_pid, 0, NULL},
    {SYS_getppid, "getppid", ret_zero, 0, NULL},
    {SYS_getpgrp, "getpgrp", ret_pid, 0, NULL},
    {SYS_getsid, "getsid", ret_pid, 0, NULL},
    {SYS_getuid, "getuid", ret_uid, 0, NULL},
    {SYS_geteuid, "geteuid", ret_uid, 0, NULL},
    {SYS_getgid, "getgid", ret_uid, 0, NULL},
    {SYS_getegid, "getegid", ret_uid, 0, NULL},
    {SYS_arch_prctl, "arch_prctl", sys_arch_prctl, 0, NULL},
    {SYS_set_tid_address, "set_tid_address", sys_set_tid_address, 0, NULL},
    {SYS_set_robust_list, "set_robust_list", ret_zero, 0, NULL},
    {SYS_rseq, "rseq", ret_enosys, 0, NULL},
    {SYS_rt_sigaction, "rt_sigaction", sys_rt_sigaction, 0, NULL},
    {SYS_rt_sigprocmask, "rt_sigprocmask", sys_rt_sigprocmask, 0, NULL},
    {SYS_sigaltstack, "sigaltstack", sys_sigaltstack, 0, NULL},
    {SYS_kill, "kill", sys_kill, 0, NULL},
    {SYS_tkill, "tkill", sys_tkill, 0, NULL},
    {SYS_tgkill, "tgkill", sys_tgkill, 0, NULL},
    {SYS_uname, "uname", sys_uname, 0, NULL},
    {SYS_prlimit64, "prlimit64", sys_prlimit64, 0, NULL},
    {SYS_sched_getaffinity, "sched_getaffinity", sys_sched_getaffinity, 0, NULL},
    {SYS_sched_yield, "sched_yield", ret_zero, 0, NULL},
    {SYS_getrandom, "getrandom", sys_getrandom, 0, NULL},
    {SYS_sysinfo, "sysinfo", sys_sysinfo, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};
