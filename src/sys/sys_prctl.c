/* prctl's options, a table of them, and the capabilities of an unprivileged process (capget,
 * capset): the guest runs as uid SYS_GUEST_UID with every set empty. */
#include <errno.h>
#include <linux/capability.h>
#include <linux/prctl.h>
#include <string.h>
#include <sys/syscall.h>

#include "sys/sys.h"

/* the highest capability Linux 6.1 knows (CAP_CHECKPOINT_RESTORE) */
#define CAP_LAST 40

static long set_pdeathsig(struct sys_state *st, const uint64_t a[6])
{
	if (a[1] > 64)
		return -EINVAL;
	sys_cur(st)->pdeathsig = (int)a[1];
	return 0;
}

static long get_pdeathsig(struct sys_state *st, const uint64_t a[6])
{
	int sig = sys_cur(st)->pdeathsig;
	return sys_put(st, a[1], &sig, sizeof(sig));
}

static long get_dumpable(struct sys_state *st, const uint64_t a[6])
{
	(void)a;
	return !st->undumpable;
}

/* SUID_DUMP_DISABLE or SUID_DUMP_USER; SUID_DUMP_ROOT may not be set */
static long set_dumpable(struct sys_state *st, const uint64_t a[6])
{
	if (a[1] > 1)
		return -EINVAL;
	st->undumpable = !a[1];
	return 0;
}

static long get_keepcaps(struct sys_state *st, const uint64_t a[6])
{
	(void)a;
	return sys_cur(st)->keepcaps;
}

static long set_keepcaps(struct sys_state *st, const uint64_t a[6])
{
	if (a[1] > 1)
		return -EINVAL;
	sys_cur(st)->keepcaps = (uint8_t)a[1];
	return 0;
}

/* the thread's name: PR_SET_NAME's, else (never set, or set to "") the program's file name, 15
 * bytes at most */
static void comm_of(struct sys_state *st, char name[16])
{
	memset(name, 0, 16);
	const char *c = sys_cur(st)->comm;
	if (!c[0]) {
		const char *p = st->exe_path ? st->exe_path : "main", *slash = strrchr(p, '/');
		c = slash && slash[1] ? slash + 1 : p;
	}
	size_t n = strnlen(c, 15);
	memcpy(name, c, n);
}

static long set_name(struct sys_state *st, const uint64_t a[6])
{
	char name[16];
	memset(name, 0, sizeof(name));
	for (size_t i = 0; i < 15; i++) {
		if (sys_get(st, &name[i], a[1] + i, 1))
			return -EFAULT;
		if (!name[i])
			break;
	}
	memcpy(sys_cur(st)->comm, name, sizeof(name));
	return 0;
}

static long get_name(struct sys_state *st, const uint64_t a[6])
{
	char name[16];
	comm_of(st, name);
	return sys_put(st, a[1], name, sizeof(name));
}

/* the bounding set is whole for every process, privileged or not */
static long capbset_read(struct sys_state *st, const uint64_t a[6])
{
	(void)st;
	return a[1] > CAP_LAST ? -EINVAL : 1;
}

/* dropping one takes CAP_SETPCAP, which the guest has not */
static long capbset_drop(struct sys_state *st, const uint64_t a[6])
{
	(void)st;
	return a[1] > CAP_LAST ? -EINVAL : -EPERM;
}

static long set_subreaper(struct sys_state *st, const uint64_t a[6])
{
	st->subreaper = a[1] != 0;
	return 0;
}

static long get_subreaper(struct sys_state *st, const uint64_t a[6])
{
	int v = st->subreaper;
	return sys_put(st, a[1], &v, sizeof(v));
}

/* once set, for good: only 1 may be asked for, the other arguments 0 */
static long set_no_new_privs(struct sys_state *st, const uint64_t a[6])
{
	if (a[1] != 1 || a[2] || a[3] || a[4])
		return -EINVAL;
	sys_cur(st)->no_new_privs = 1;
	return 0;
}

static long get_no_new_privs(struct sys_state *st, const uint64_t a[6])
{
	if (a[1] || a[2] || a[3] || a[4])
		return -EINVAL;
	return sys_cur(st)->no_new_privs;
}

/* PR_SET_MM takes CAP_SYS_RESOURCE */
static long set_mm(struct sys_state *st, const uint64_t a[6])
{
	(void)st, (void)a;
	return -EPERM;
}

/* a[0] is the option, a[1] to a[4] its arguments */
static const struct {
	int option;
	long (*fn)(struct sys_state *st, const uint64_t a[6]);
} options[] = {
    {PR_SET_PDEATHSIG, set_pdeathsig},
    {PR_GET_PDEATHSIG, get_pdeathsig},
    {PR_GET_DUMPABLE, get_dumpable},
    {PR_SET_DUMPABLE, set_dumpable},
    {PR_GET_KEEPCAPS, get_keepcaps},
    {PR_SET_KEEPCAPS, set_keepcaps},
    {PR_SET_NAME, set_name},
    {PR_GET_NAME, get_name},
    {PR_CAPBSET_READ, capbset_read},
    {PR_CAPBSET_DROP, capbset_drop},
    {PR_SET_MM, set_mm},
    {PR_SET_CHILD_SUBREAPER, set_subreaper},
    {PR_GET_CHILD_SUBREAPER, get_subreaper},
    {PR_SET_NO_NEW_PRIVS, set_no_new_privs},
    {PR_GET_NO_NEW_PRIVS, get_no_new_privs},
};

static long sys_prctl(struct sys_state *st, const uint64_t a[6])
{
	for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++)
		if ((uint64_t)options[i].option == a[0])
			return options[i].fn(st, a);
	return -EINVAL; /* as Linux for an option it does not know */
}

/* the header's version: how many 32-bit words each set has (1 or 2), or -EINVAL with the
 * version Linux prefers written back, as a probe with an unknown one expects */
static long cap_words(struct sys_state *st, uint64_t hdr, int *pid)
{
	uint32_t h[2];
	if (sys_get(st, h, hdr, sizeof(h)))
		return -EFAULT;
	*pid = (int)h[1];
	if (h[0] == _LINUX_CAPABILITY_VERSION_1)
		return 1;
	if (h[0] == _LINUX_CAPABILITY_VERSION_2 || h[0] == _LINUX_CAPABILITY_VERSION_3)
		return 2;
	const uint32_t v = _LINUX_CAPABILITY_VERSION_3;
	return sys_put(st, hdr, &v, sizeof(v)) ? -EFAULT : -EINVAL;
}

/* capget: every set empty, of this process's threads or another process of the invocation */
static long sys_capget(struct sys_state *st, const uint64_t a[6])
{
	int pid;
	long words = cap_words(st, a[0], &pid);
	if (!a[1])
		return words == -EINVAL || words > 0 ? 0 : words; /* a probe of the version */
	if (words < 0)
		return words;
	if (pid < 0)
		return -EINVAL;
	if (pid && pid != st->pid && !proc_find(&st->pr, pid) &&
	    (!st->kin || st->kin->getpgid(st->kin_ctx, st, pid) < 0))
		return -ESRCH;
	static const uint32_t none[6]; /* effective, permitted, inheritable per word */
	return sys_put(st, a[1], none, (size_t)words * 3 * sizeof(uint32_t)) ? -EFAULT : 0;
}

/* capset: only empty sets, which the process has already; another process's: EPERM */
static long sys_capset(struct sys_state *st, const uint64_t a[6])
{
	int pid;
	long words = cap_words(st, a[0], &pid);
	if (words < 0)
		return words;
	if (pid && pid != st->pid && !proc_find(&st->pr, pid))
		return -EPERM;
	uint32_t sets[6];
	if (sys_get(st, sets, a[1], (size_t)words * 3 * sizeof(uint32_t)))
		return -EFAULT;
	for (long i = 0; i < words * 3; i++)
		if (sets[i])
			return -EPERM; /* more than it is permitted */
	return 0;
}

const struct sys_entry sys_prctl_table[] = {
    {SYS_prctl, "prctl", sys_prctl, 0, NULL},
    {SYS_capget, "capget", sys_capget, 0, NULL},
    {SYS_capset, "capset", sys_capset, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};
