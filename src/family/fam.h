/* The processes of one invocation: the first, the children fork makes, what execve turns them into.
 */
#ifndef EMBER_FAM_H
#define EMBER_FAM_H

#include <pthread.h>

#include "snap/snap.h"
#include "sys/sys.h"

/* What the layer above does for the family (func/exec.c): machines, and programs in them. */
struct fam_loader {
	/* a clean machine like the first process's, with cpus vCPUs, its memory charged to the
	 * function: VM_OK, or a kind of failure with err */
	int (*vm_new)(void *ctx, int cpus, struct vm **out, char *err, size_t errlen);
	/* gives it back (and its charge) */
	void (*vm_free)(void *ctx, struct vm *vm);
	/* execve: the program at (its files, /tmp's, an open file, or the program itself)
	 * loaded into a clean machine vm, with argv and envp, and st prepared for it (sys_init and
	 * its memory map, as the function's first run is): 0, or -errno for the caller of execve
	 * (-ENOENT, -EACCES, -ENOEXEC, -ELOOP, -ENOMEM, -E2BIG). *keep: what st's program bytes
	 * (st->exe) are held by when they are no file's of the function (a /tmp program's copy),
	 * for the family to give back (keep_free) once no process runs it; else NULL */
	int (*exec)(void *ctx, struct sys_state *from, const struct sys_exec_at *at,
		    char *const *argv, char *const *envp, struct vm *vm, struct sys_state *st,
		    void **keep);
	void (*keep_free)(void *ctx, void *keep);
	/* the snapshot the first process's machine (st's) was last reset or restored to, whose
	 * pages it has not written are the snapshot's (KVM): NULL when there is none */
	const struct snap *(*base)(void *ctx, const struct sys_state *st);
	/* before a fork copies st's memory: the pages of a start from disk not brought in yet
	 * (holes in its memfd, served on demand) brought in, so the copy has them: 0 or -errno */
	int (*settle)(void *ctx, struct sys_state *st);
};

enum fam_state {
	FAM_LIVE,   /* running (or about to, on its host thread) */
	FAM_ZOMBIE, /* ended; its parent has not waited for it yet */
};

/* a program's bytes an execve made (fam_loader.exec's keep) and where they are (sys_state.exe) */
struct fam_kept {
	void *keep;
	const uint8_t *exe;
	struct fam_kept *next;
};

/* One process other than the first: its own machine and emulation state, its own host thread. */
struct fam_proc {
	int pid, ppid;
	int pgid; /* once it ended (while it lives: st->pgid) */
	enum fam_state state;
	int reaped;	 /* waited for (or nobody would): its thread is joined and it goes */
	int orphan;	 /* its parent ended: pid 1 is its parent, as init is, but never waits */
	int status;	 /* the wait status once it ended */
	uint64_t cpu_ns; /* its CPU time and its waited-for children's, once it ended */
	int thread;	 /* the tid of its parent's thread that made it */
	struct vm *vm;
	struct sys_state *st; /* what it runs now (execve replaces both) */
	struct vm *next_vm;   /* execve: what it goes on as */
	struct sys_state *next_st;
	pthread_t host;
	int has_host;
	struct fam_proc *next;
};

struct fam {
	const struct fam_loader *ld;
	void *ld_ctx;
	struct sys_state *root; /* the first process: the invocation's own virtine */
	struct fam_proc *procs; /* every other, alive or a zombie */
	int nprocs;		/* of them (the first process counts apart) */
	int next_tid;		/* pids and tids, one space for every process */
	int shared;		/* the root's lock and tids are the family's (proc_share) */
	/* pid 1 as it runs now: root, or the program an execve made of it (on cur_vm), run by
	 * the invocation's own thread; next: the one its own execve makes */
	struct sys_state *cur, *next_st;
	struct vm *cur_vm, *next_vm;
	int ending;	       /* the invocation ends: no more forks, every process stops */
	struct fam_kept *kept; /* programs exec'd from /tmp, held while a process runs them */
	pthread_cond_t cv;     /* a host thread ended (fam_end waits for them) */
};

/* The family of the machine whose first process is root (sys_state.kin set on it): nothing
 * runs until the program forks. NULL: no memory. */
struct fam *fam_new(struct sys_state *root, const struct fam_loader *ld, void *ld_ctx);
void fam_free(struct fam *f);
/* After the root's run (on the invocation's thread, every process still there): when the root
 * exec'd, the program it became runs to its end, and root gets its outcome; then every other
 * process is stopped and gone, and the family ready for the next invocation. */
void fam_finish(struct fam *f);

/* the sys_kin_ops (fam.c, fam_fork.c, fam_run.c share them) */
extern const struct sys_kin_ops fam_kin_ops;
long fam_fork(void *ctx, struct sys_state *st, struct proc_thread *t, uint64_t sp, uint64_t flags,
	      uint64_t ctid);
long fam_exec(void *ctx, struct sys_state *st, const struct sys_exec_at *at, char *const *argv,
	      char *const *envp);
/* fam_run.c: c's host thread starts (0 or -errno); a state and machine made for a process
 * freed (outside the lock) */
int fam_start(struct fam *f, struct fam_proc *c);
void fam_drop(struct fam *f, struct vm *vm, struct sys_state *st);
/* under the lock: every descriptor of st closed (a pipe's other end sees it) */
void fam_close_fds(struct sys_state *st);
/* st runs on its machine's thread until it ends (the invocation's deadline is its own) */
void fam_run_state(struct fam *f, struct sys_state *st);
/* under the lock: st's counts go to the invocation's */
void fam_add_stats(struct fam *f, const struct sys_state *st);
/* under the lock: children reaped whose host thread ended are joined and freed */
void fam_sweep(struct fam *f);
/* under the lock: st forks or execs while the first process runs its init (before its
 * snapshot point): init stops there (sys_state.init_forked), and 1 is returned */
int fam_in_init(struct fam *f, struct sys_state *st);
/* under the lock: the programs kept (fam_exec) that no process runs now given back (all:
 * every one, at the invocation's end) */
void fam_kept_sweep(struct fam *f, int all);
/* the lock every process of f takes */
static inline pthread_mutex_t *fam_lock(struct fam *f)
{
	return f->root->pr.mu;
}
/* under the lock: process pid's state, or NULL (the root is not one of them) */
struct fam_proc *fam_find(struct fam *f, int pid);
/* under the lock: c ended with wait status status; its parent hears of it */
void fam_ended(struct fam *f, struct sys_state *st, int status);

#endif
