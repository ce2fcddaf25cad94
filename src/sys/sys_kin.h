/* What the other processes of an invocation do for one of them: the table src/family/ fills
 * (fork, execve, wait, kill, groups), and what an execve names. */
#ifndef EMBER_SYS_KIN_H
#define EMBER_SYS_KIN_H

#include <stdint.h>

#include "sys/sys.h"

/* what an execve names: path from dirfd (AT_FDCWD: the cwd), with execveat's flags
 * (AT_EMPTY_PATH: dirfd's own file when path is "", AT_SYMLINK_NOFOLLOW: a final link ELOOP) */
struct sys_exec_at {
	int dirfd;
	const char *path;
	int flags;
};

/* What the other processes of an invocation do for one of them (src/family/), called under the
 * process's lock, which every process of the invocation shares. NULL in sys_state.kin: the
 * program has no relatives, and fork is refused. */
struct sys_kin_ops {
	/* a new process, a copy of st made from its thread t (the child's registers t's, rax 0;
	 * its stack at sp, 0: t's; flags: clone's CLONE_CHILD_SETTID and _CLEARTID at ctid, in
	 * the child's memory, and CLONE_CLEAR_SIGHAND: sys_sig_default): the child's pid, or
	 * -EAGAIN (--pids) or -ENOMEM */
	long (*fork)(void *ctx, struct sys_state *st, struct proc_thread *t, uint64_t sp,
		     uint64_t flags, uint64_t ctid);
	/* execve (or execveat) of at (the function's files, /tmp's, an open one, or the program
	 * itself) with argv and envp (host copies, NULL-terminated): 0 when st ended (SYS_EXECED)
	 * and the process goes on as the new program, else -errno (-ENOENT, -EACCES, -ENOEXEC,
	 * -ELOOP, -ENOMEM, ...) and st goes on */
	long (*exec)(void *ctx, struct sys_state *st, const struct sys_exec_at *at,
		     char *const *argv, char *const *envp);
	/* wait4/waitid: a child of st matching idtype (P_ALL, P_PID, P_PGID) and id that ended
	 * (with __WNOTHREAD in options, one the calling thread made): its pid, its wait status
	 * in *status, reaped unless WNOWAIT is in options; 0 when some match and none
	 * ended yet; -ECHILD when none match. Its CPU time (its children's it waited for
	 * included) in *cpu_ns, added to st->children_cpu when reaped. status NULL: 0 when one
	 * that matches is alive, else -ECHILD (a wait for stops has nothing to wait for in those
	 * that ended) */
	long (*wait)(void *ctx, struct sys_state *st, int idtype, int id, int options, int *status,
		     uint64_t *cpu_ns);
	/* kill(pid, sig) of anything but st alone: another process, a group, or all (-1) */
	long (*kill)(void *ctx, struct sys_state *st, int pid, int sig);
	/* setpgid(pid, pgid) with pid st's or a child's, and getpgid(pid) of another process */
	long (*setpgid)(void *ctx, struct sys_state *st, int pid, int pgid);
	long (*getpgid)(void *ctx, struct sys_state *st, int pid);
	/* an object other processes may share (a pipe, an eventfd) changed: their waiters look
	 * again */
	void (*changed)(void *ctx, struct sys_state *st);
};

#endif
