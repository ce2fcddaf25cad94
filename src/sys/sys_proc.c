/* Process syscalls: identity, the thread area, limits, randomness and what the system is. */
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

static long ret_pid(struct sys_state *st, const uint64_t a[6])
{
	(void)a;
	return st->pid;
}

static long ret_uid(struct sys_state *st, const uint64_t a[6])
{
	(void)st, (void)a;
	return SYS_GUEST_UID;
}

static long ret_enosys(struct sys_state *st, const uint64_t a[6])
{
	(void)st, (void)a;
	return -ENOSYS; /* rseq: served as a kernel without it would, so glibc goes on without */
}

/* FS base per thread; GS base is the in-guest runtime's (abi.h): ARCH_SET_GS is refused */
static long sys_arch_prctl(struct sys_state *st, const uint64_t a[6])
{
	struct proc_thread *t = sys_cur(st);
	if (a[0] == ARCH_SET_FS)
		return a[1] >= (1ULL << 47) ? -EPERM : proc_set_fs(&st->pr, t, a[1]) ? -EIO : 0;
	if (a[0] == ARCH_GET_FS)
		return sys_put(st, a[1], &t->fs_base, sizeof(t->fs_base));
	if (a[0] == ARCH_SET_GS)
		return -EPERM;
	if (a[0] == ARCH_GET_GS) {
		const uint64_t zero = 0;
		return sys_put(st, a[1], &zero, sizeof(zero));
	}
	return -EINVAL;
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
	if (a[0] != 0 && (int)a[0] != st->pid)
		return -ESRCH;
	if (a[1] >= RLIM_NLIMITS)
		return -EINVAL;
	struct rlimit old = {RLIM_INFINITY, RLIM_INFINITY}, want;
	if (a[1] == RLIMIT_STACK)
		old.rlim_cur = old.rlim_max = st->proc.stack_size;
	else if (a[1] == RLIMIT_AS || a[1] == RLIMIT_DATA)
		sys_rlim_get(st, a[1], &old);
	else if (a[1] == RLIMIT_NOFILE)
		old.rlim_cur = old.rlim_max = SYS_FDS;
	if (a[2] && sys_get(st, &want, a[2], sizeof(want)))
		return -EFAULT;
	/* the old limits are given back only when the new ones are taken */
	long rc = a[2] ? sys_rlim_set(st, a[1], &want) : 0;
	if (rc || !a[3])
		return rc;
	return sys_put(st, a[3], &old, sizeof(old));
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
    {SYS_getpid, "getpid", ret_pid, 0, NULL},
    {SYS_getuid, "getuid", ret_uid, 0, NULL},
    {SYS_geteuid, "geteuid", ret_uid, 0, NULL},
    {SYS_getgid, "getgid", ret_uid, 0, NULL},
    {SYS_getegid, "getegid", ret_uid, 0, NULL},
    {SYS_arch_prctl, "arch_prctl", sys_arch_prctl, 0, NULL},
    {SYS_rseq, "rseq", ret_enosys, 0, NULL},
    {SYS_uname, "uname", sys_uname, 0, NULL},
    {SYS_prlimit64, "prlimit64", sys_prlimit64, 0, NULL},
    {SYS_getrandom, "getrandom", sys_getrandom, 0, NULL},
    {SYS_sysinfo, "sysinfo", sys_sysinfo, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};
