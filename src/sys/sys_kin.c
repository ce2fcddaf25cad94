/* Calls that reach the invocation's other processes: fork, execve, wait, kill and groups. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "fs/fs.h"

/* execve's arguments and environment together, as Linux's ARG_MAX with an 8 MiB stack */
#define KIN_ARGS_MAX  (2u << 20)
#define KIN_ARGV_MAX  65536u
#define KIN_STR_CHUNK 256

/* a new process from the calling thread: the child's pid, or -errno */
static long new_process(struct sys_state *st, uint64_t sp, uint64_t flags, uint64_t ctid)
{
	if (!st->kin)
		return -EPERM; /* no relatives: the machine runs this program alone */
	return st->kin->fork(st->kin_ctx, st, sys_cur(st), sp, flags, ctid);
}

static long sys_fork(struct sys_state *st, const uint64_t a[6])
{
	(void)a;
	return new_process(st, 0, 0, 0);
}

long sys_kin_clone(struct sys_state *st, uint64_t flags, uint64_t sp, uint64_t ptid, uint64_t ctid)
{
	/* a process is a copy, never memory shared with its parent: CLONE_VM without
	 * CLONE_THREAD (posix_spawn's, with CLONE_VFORK) gets a copy too, which the child runs
	 * on its own stack until it execs, as the caller meant it to */
	if (flags & (CLONE_SIGHAND | CLONE_THREAD | CLONE_PIDFD | CLONE_NEWNS | CLONE_NEWUSER |
		     CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP))
		return (flags & CLONE_SIGHAND) && !(flags & CLONE_VM) ? -EINVAL : -EPERM;
	if ((flags & CLONE_PARENT_SETTID) && !sys_user(st, ptid, sizeof(int), PROT_WRITE))
		return -EFAULT;
	long pid = new_process(
	    st, sp, flags & (CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | CLONE_CLEAR_SIGHAND),
	    ctid);
	if (pid > 0 && (flags & CLONE_PARENT_SETTID)) {
		const int p = (int)pid;
		sys_put(st, ptid, &p, sizeof(p));
	}
	return pid;
}

/* the guest's string at addr into a growing buffer: its length, or -errno */
static long get_str(struct sys_state *st, uint64_t addr, char **buf, size_t *used, size_t *cap)
{
	size_t start = *used;
	for (;;) {
		if (*used - start >= KIN_ARGS_MAX || *used >= KIN_ARGS_MAX)
			return -E2BIG;
		if (*used == *cap) {
			size_t ncap = *cap ? *cap * 2 : 4096;
			char *n = realloc(*buf, ncap);
			if (!n)
				return -ENOMEM;
			*buf = n;
			*cap = ncap;
		}
		const char *c = sys_user(st, addr + (*used - start), 1, PROT_READ);
		if (!c)
			return -EFAULT;
		(*buf)[(*used)++] = *c;
		if (!*c)
			return (long)(*used - start - 1);
	}
}

/* a NULL-terminated array of guest strings at addr (0: empty), copied: a vector of host
 * pointers into one block, or NULL with *err */
static char **get_vec(struct sys_state *st, uint64_t addr, long *err)
{
	char *buf = NULL, **v = NULL;
	size_t used = 0, cap = 0, n = 0;
	size_t *offs = NULL;
	for (; addr; n++) {
		uint64_t p;
		if (n >= KIN_ARGV_MAX) {
			*err = -E2BIG;
			goto fail;
		}
		if (sys_get(st, &p, addr + n * sizeof(p), sizeof(p))) {
			*err = -EFAULT;
			goto fail;
		}
		if (!p)
			break;
		size_t *no = realloc(offs, (n + 1) * sizeof(*offs));
		if (!no) {
			*err = -ENOMEM;
			goto fail;
		}
		offs = no;
		offs[n] = used;
		long len = get_str(st, p, &buf, &used, &cap);
		if (len < 0) {
			*err = len;
			goto fail;
		}
	}
	/* the pointers, then the strings, in one allocation the caller frees */
	v = malloc((n + 1) * sizeof(*v) + used + 1);
	if (!v) {
		*err = -ENOMEM;
		goto fail;
	}
	char *s = (char *)(v + n + 1);
	if (used)
		memcpy(s, buf, used);
	for (size_t i = 0; i < n; i++)
		v[i] = s + offs[i];
	v[n] = NULL;
fail:
	free(buf);
	free(offs);
	return v;
}

/* execveat(dirfd, path, argv, envp, flags); execve is execveat(AT_FDCWD, path, ..., 0) */
static long exec_at(struct sys_state *st, int dirfd, uint64_t addr, uint64_t av, uint64_t ev,
		    uint64_t flags)
{
	char path[BND_PATH_MAX];
	long rc = sys_fs_get_path(st, addr, path);
	if (rc)
		return rc;
	if (flags & ~(uint64_t)(AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW))
		return -EINVAL;
	if (!path[0] && !(flags & AT_EMPTY_PATH))
		return -ENOENT;
	char **argv = get_vec(st, av, &rc), **envp = argv ? get_vec(st, ev, &rc) : NULL;
	const struct sys_exec_at at = {dirfd, path, (int)flags};
	if (argv && envp)
		rc = st->kin ? st->kin->exec(st->kin_ctx, st, &at, argv, envp) : -EACCES;
	free(argv);
	free(envp);
	/* done: the program is another from now on, this state's run has ended */
	return rc;
}

static long sys_execve(struct sys_state *st, const uint64_t a[6])
{
	return exec_at(st, AT_FDCWD, a[0], a[1], a[2], 0);
}

static long sys_execveat(struct sys_state *st, const uint64_t a[6])
{
	return exec_at(st, (int)a[0], a[1], a[2], a[3], a[4]);
}

/* a wait's pid argument as waitid's (idtype, id) */
static void wait_ids(struct sys_state *st, int pid, int *idtype, int *id)
{
	if (pid < -1)
		*idtype = P_PGID, *id = -pid;
	else if (pid == -1)
		*idtype = P_ALL, *id = 0;
	else if (pid == 0)
		*idtype = P_PGID, *id = st->pgid;
	else
		*idtype = P_PID, *id = pid;
}

int sys_kin_vmkid(struct sys_state *st, int tid, int sig)
{
	if (st->nvmkid >= SYS_VMKIDS)
		return -EAGAIN;
	st->vmkid[st->nvmkid++] = (struct sys_vmkid){tid, sig, 0, 0};
	return 0;
}

void sys_kin_vmkid_exit(struct sys_state *st, int tid, int status)
{
	for (int i = 0; i < st->nvmkid; i++) {
		struct sys_vmkid *k = &st->vmkid[i];
		if (k->tid != tid || k->ended)
			continue;
		k->ended = 1;
		k->status = status;
		if (k->sig)
			sys_send(st, NULL, k->sig, CLD_EXITED);
		proc_wake(&st->pr, SYS_KEY_CHILD, ~0u, INT_MAX);
		return;
	}
}

/* a "clone" child, which __WCLONE asks for: one that sends no SIGCHLD at its end; without
 * __WALL a wait sees either those or the others */
static int wait_sees(int sig, int options)
{
	return options & __WALL || !(options & __WCLONE) == (sig == SIGCHLD);
}

/* the waits for children sharing st's memory: one that ended (its tid, status; forgotten unless
 * WNOWAIT), 0 when one that may still end matches, -ECHILD when none does */
static long wait_vmkid(struct sys_state *st, int idtype, int id, int options, int *status)
{
	long r = -ECHILD;
	for (int i = 0; i < st->nvmkid; i++) {
		struct sys_vmkid *k = &st->vmkid[i];
		if (!wait_sees(k->sig, options) || (idtype == P_PID && k->tid != id) ||
		    (idtype == P_PGID && id != st->pgid))
			continue;
		if (!k->ended || !status) {
			r = k->ended ? r : 0;
			continue;
		}
		int tid = k->tid;
		*status = k->status;
		if (!(options & WNOWAIT))
			st->vmkid[i] = st->vmkid[--st->nvmkid];
		return tid;
	}
	return r;
}

/* the children of st, processes and those sharing its memory: one that ended (its pid, status
 * and CPU time), 0 when some match and none ended, -ECHILD; status NULL: whether one alive
 * matches (0) or not (-ECHILD) */
static long find_child(struct sys_state *st, int idtype, int id, int options, int *status,
		       uint64_t *cpu_ns)
{
	long v = wait_vmkid(st, idtype, id, options, status);
	if (v > 0)
		return v;
	/* every child process sends SIGCHLD at its end: none is a "clone" child */
	long r = !st->kin || !wait_sees(SIGCHLD, options)
		     ? -ECHILD
		     : st->kin->wait(st->kin_ctx, st, idtype, id, options & (WNOWAIT | __WNOTHREAD),
				     status, cpu_ns);
	return r == -ECHILD && v == 0 ? 0 : r;
}

/* the waits' common part: a child that ended (its pid and status), 0 (none yet, WNOHANG), or
 * the wait (SYS_WAITS) */
static long wait_child(struct sys_state *st, int idtype, int id, int options, int *status,
		       uint64_t *cpu_ns)
{
	long r = find_child(st, idtype, id, options, status, cpu_ns);
	if (r != 0 || (options & WNOHANG))
		return r;
	return sys_wait(st, SYS_KEY_CHILD, ~0u, 0);
}

/* the rusage a wait fills: the child's CPU time as user time (0: none ended) */
static void put_rusage(struct sys_state *st, uint64_t addr, uint64_t ns)
{
	struct rusage ru;
	memset(&ru, 0, sizeof(ru));
	ru.ru_utime.tv_sec = (time_t)(ns / 1000000000ULL);
	ru.ru_utime.tv_usec = (long)(ns % 1000000000ULL / 1000);
	sys_put(st, addr, &ru, sizeof(ru));
}

static long sys_wait4(struct sys_state *st, const uint64_t a[6])
{
	int options = (int)a[2], idtype, id, status = 0;
	if (options & ~(WNOHANG | WUNTRACED | WCONTINUED | __WALL | __WCLONE | __WNOTHREAD))
		return -EINVAL;
	/* checked before a child is reaped, so that a bad pointer loses no child */
	if ((a[1] && !sys_user(st, a[1], sizeof(int), PROT_WRITE)) ||
	    (a[3] && !sys_user(st, a[3], 144 /* struct rusage */, PROT_WRITE)))
		return -EFAULT;
	if ((int)a[0] == INT32_MIN)
		return -ESRCH;
	wait_ids(st, (int)a[0], &idtype, &id);
	uint64_t cpu = 0;
	long r = wait_child(st, idtype, id, options, &status, &cpu);
	if (r > 0 && a[1])
		sys_put(st, a[1], &status, sizeof(status));
	if (r >= 0 && a[3])
		put_rusage(st, a[3], cpu);
	return r;
}

/* the siginfo waitid fills: SIGCHLD, how it ended, who */
static void child_info(uint8_t *si, int pid, int status)
{
	int32_t signo = SIGCHLD, code, st, uid = 1000;
	if (WIFEXITED(status))
		code = CLD_EXITED, st = WEXITSTATUS(status);
	else
		code = WCOREDUMP(status) ? CLD_DUMPED : CLD_KILLED, st = WTERMSIG(status);
	memcpy(si, &signo, 4);
	memcpy(si + 8, &code, 4);
	memcpy(si + 16, &pid, 4);
	memcpy(si + 20, &uid, 4);
	memcpy(si + 24, &st, 4);
}

static long sys_waitid(struct sys_state *st, const uint64_t a[6])
{
	int idtype = (int)a[0], id = (int)a[1], options = (int)a[3], status = 0;
	if (options & ~(WNOHANG | WEXITED | WSTOPPED | WCONTINUED | WNOWAIT | __WALL | __WCLONE |
			__WNOTHREAD) ||
	    !(options & (WEXITED | WSTOPPED | WCONTINUED)))
		return -EINVAL;
	if (idtype == P_PIDFD || (idtype != P_ALL && idtype != P_PID && idtype != P_PGID))
		return -EINVAL;
	if (idtype == P_PGID && id == 0)
		id = st->pgid;
	if ((a[2] && !sys_user(st, a[2], 128, PROT_WRITE)) ||
	    (a[4] && !sys_user(st, a[4], 144, PROT_WRITE)))
		return -EFAULT;
	long r;
	uint64_t cpu = 0;
	if (options & WEXITED) {
		r = wait_child(st, idtype, id, options, &status, &cpu);
	} else {
		/* stops and continues never happen here: nothing to report, ever; a wait for
		 * them waits while a child that may stop lives, as Linux's, and is ECHILD when
		 * none does */
		r = find_child(st, idtype, id, options | WNOWAIT, NULL, NULL);
		if (r >= 0)
			r = options & WNOHANG ? 0 : sys_wait(st, SYS_KEY_CHILD, ~0u, 0);
	}
	if (r < 0)
		return r;
	uint8_t si[128];
	memset(si, 0, sizeof(si));
	if (r > 0)
		child_info(si, (int)r, status);
	if (a[2])
		sys_put(st, a[2], si, sizeof(si));
	if (a[4])
		put_rusage(st, a[4], r > 0 ? cpu : 0);
	return 0;
}

long sys_kin_kill(struct sys_state *st, int pid, int sig)
{
	if (sig < 0 || sig > 64)
		return -EINVAL;
	if (pid == st->pid || (!st->kin && (pid == 0 || pid == -1))) {
		if (sig)
			sys_send(st, NULL, sig, 0 /* SI_USER */);
		return 0;
	}
	if (!st->kin || pid == INT32_MIN)
		return -ESRCH;
	return st->kin->kill(st->kin_ctx, st, pid, sig);
}

static long sys_getppid(struct sys_state *st, const uint64_t a[6])
{
	(void)a;
	return st->ppid;
}

static long sys_getpgid(struct sys_state *st, const uint64_t a[6])
{
	int pid = (int)a[0];
	if (pid == 0 || pid == st->pid)
		return st->pgid;
	return st->kin ? st->kin->getpgid(st->kin_ctx, st, pid) : -ESRCH;
}

static long sys_getpgrp(struct sys_state *st, const uint64_t a[6])
{
	(void)a;
	return st->pgid;
}

static long sys_setpgid(struct sys_state *st, const uint64_t a[6])
{
	int pid = (int)a[0] ? (int)a[0] : st->pid, pgid = (int)a[1] ? (int)a[1] : pid;
	if ((int)a[1] < 0)
		return -EINVAL;
	if (st->kin)
		return st->kin->setpgid(st->kin_ctx, st, pid, pgid);
	if (pid != st->pid)
		return -ESRCH;
	if (pgid != st->pid)
		return -EPERM; /* no other group to join */
	st->pgid = pgid;
	return 0;
}

static long sys_setsid(struct sys_state *st, const uint64_t a[6])
{
	(void)a;
	if (st->pgid == st->pid)
		return -EPERM; /* a group's leader may not */
	st->pgid = st->sid = st->pid;
	return st->pid;
}

static long sys_getsid(struct sys_state *st, const uint64_t a[6])
{
	int pid = (int)a[0];
	if (pid == 0 || pid == st->pid)
		return st->sid;
	/* another's: the invocation's session, which it has not left as far as we know */
	long g = st->kin ? st->kin->getpgid(st->kin_ctx, st, pid) : -ESRCH;
	return g < 0 ? g : 1;
}

const struct sys_entry sys_kin_table[] = {
    {SYS_fork, "fork", sys_fork, 0, NULL},
    /* a copy at once, as fork: the parent does not wait for the child's exec */
    {SYS_vfork, "vfork", sys_fork, 0, NULL},
    {SYS_execve, "execve", sys_execve, 0, NULL},
    {SYS_execveat, "execveat", sys_execveat, 0, NULL},
    {SYS_wait4, "wait4", sys_wait4, 0, NULL},
    {SYS_waitid, "waitid", sys_waitid, 0, NULL},
    {SYS_getppid, "getppid", sys_getppid, 0, NULL},
    {SYS_getpgid, "getpgid", sys_getpgid, 0, NULL},
    {SYS_getpgrp, "getpgrp", sys_getpgrp, 0, NULL},
    {SYS_setpgid, "setpgid", sys_setpgid, 0, NULL},
    {SYS_setsid, "setsid", sys_setsid, 0, NULL},
    {SYS_getsid, "getsid", sys_getsid, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};
