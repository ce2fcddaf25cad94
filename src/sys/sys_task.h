/* The threads and processes a handler deals with: the current thread, waits and their deadlines,
 * signal masks and delivery, a thread's end, clone and kill of processes, what a child inherits. */
#ifndef EMBER_SYS_TASK_H
#define EMBER_SYS_TASK_H

#include <stddef.h>
#include <stdint.h>

#include "sys/sys.h"

/* sys_inherit.c: what `to`, made by sys_init for a clean machine, takes of `from`: for a fork
 * (exec 0) its descriptors and their objects (a pipe shared, the rest copied), memory map,
 * signal actions, files, /tmp (the first process's), identity and relatives; for an execve
 * (exec 1) the same but the memory map, the descriptors with FD_CLOEXEC and the handlers
 * (back to their default). 0 or -ENOMEM. */
int sys_inherit(struct sys_state *to, struct sys_state *from, int exec);

/* every signal handler of st back to its default; those ignored stay so (execve,
 * CLONE_CLEAR_SIGHAND) */
void sys_sig_default(struct sys_state *st);

/* what a handler returns instead of a value: the thread waits (sys_wait) and the call is made
 * again when it is woken; the handler set every register itself (rt_sigreturn) */
#define SYS_WAITS (-4097L)
#define SYS_REGS  (-4098L)

/* the state whose request position is the invocation's: the first process's */
static inline struct sys_state *sys_in_of(struct sys_state *st)
{
	return st->out_to ? st->out_to : st;
}
/* fd_std.c: from a fork or an execve of st on, the request is read by several processes: what
 * st's runtime holds of it goes back to the one position, read from the host from now on */
void sys_in_share(struct sys_state *st);

/* the thread whose call is being served (under the process's lock) */
static inline struct proc_thread *sys_cur(struct sys_state *st)
{
	return st->pr.cur;
}
/* the call waits for a wake on key (with a futex bitset, else ~0), for deadline (CLOCK_MONOTONIC
 * ns, 0: none), or for a signal; it is made again then, sys_retrying saying so, with the
 * thread's woken or expired set. Returns SYS_WAITS, for the handler to return. */
long sys_wait(struct sys_state *st, uint64_t key, uint32_t bits, uint64_t deadline);
static inline int sys_retrying(const struct sys_state *st)
{
	return st->redo;
}
/* the deadline the first attempt of a waiting call set, or the one it sets now from a relative
 * timeout of ns (UINT64_MAX: none, 0 returned) */
uint64_t sys_deadline_in(struct sys_state *st, uint64_t ns);
/* a thread's signal mask: where it is kept (the in-guest runtime's area while it is on a vCPU
 * in guest mode), read and written */
uint64_t sys_sigmask(struct sys_state *st, struct proc_thread *t);
void sys_set_sigmask(struct sys_state *st, struct proc_thread *t, uint64_t mask);
/* sys_signal.c: a signal sent by the program (kill, tgkill, a timer): to thread t, or to the
 * process (t NULL); one whose action is to ignore it is dropped */
void sys_send(struct sys_state *st, struct proc_thread *t, int sig, int code);
/* before t runs: its pending signals delivered to their handlers, or the process killed by
 * one; a fault e of t's that its handler takes (1), or 0: the process dies of it */
void sys_deliver(struct sys_state *st, struct proc_thread *t);
int sys_fault_signal(struct sys_state *st, struct proc_thread *t, const struct vm_exit *e);
/* a call that waits was interrupted by a signal t is about to take: made again after the
 * handler (SA_RESTART, a call that may be), or -EINTR */
int sys_signal_ready(struct sys_state *st, struct proc_thread *t);
void sys_interrupt(struct sys_state *st, struct proc_thread *t);

/* sys_futex.c: thread t ends: the robust futexes it holds released (FUTEX_OWNER_DIED, a waiter
 * woken), its clear-child-tid word zeroed and woken (pthread_join) */
void sys_futex_exit(struct sys_state *st, struct proc_thread *t);

/* sys_thread.c: what a new thread (clone) or process (fork; execve when exec) takes of t's
 * settings: prctl's, its CPU affinity */
void sys_thread_inherit(struct proc_thread *to, const struct proc_thread *t, int exec);

/* sys_kin.c: a child sharing st's memory (clone with CLONE_VM, no CLONE_THREAD), run as thread
 * tid, which sends sig at its end: 0, or -EAGAIN past SYS_VMKIDS of them; and thread tid ended
 * with wait status status (nothing when it is no such child) */
int sys_kin_vmkid(struct sys_state *st, int tid, int sig);
void sys_kin_vmkid_exit(struct sys_state *st, int tid, int status);

/* sys_kin.c: clone of a new process (no CLONE_THREAD), for clone and clone3: the child's pid
 * or -errno; kill(pid, sig) as the call does it */
long sys_kin_clone(struct sys_state *st, uint64_t flags, uint64_t sp, uint64_t ptid, uint64_t ctid);
long sys_kin_kill(struct sys_state *st, int pid, int sig);

#endif
