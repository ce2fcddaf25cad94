/* The threads of one guest process on its machine's vCPUs, scheduled preemptively by the host. */
#ifndef EMBER_PROC_H
#define EMBER_PROC_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "vm/vm.h"

/* --threads: an invocation's threads at most, the first included; clone answers EAGAIN past it */
#define PROC_THREADS_DEFAULT 256
#define PROC_THREADS_MAX     4096
/* a thread runs this long before another that is ready takes its vCPU */
#define PROC_SLICE_NS 4000000ULL
/* and an entry at least this long, whatever is due (an exit costs tens of us here) */
#define PROC_MIN_RUN_NS 200000ULL
/* a process's interval timers (setitimer's three, then timer_create's) */
#define PROC_TIMERS 8

enum proc_state {
	PROC_FREE,    /* no thread in this slot */
	PROC_READY,   /* waits for a vCPU */
	PROC_RUNNING, /* on a vCPU, or being served by the host for its exit */
	PROC_WAITING, /* in a call that waits: made again when woken, at its deadline, on a signal
		       */
};

/* One thread. While it is on a vCPU (cpu >= 0), that vCPU holds its registers, FS base and FPU
 * state; regs is a copy taken at each exit. Off a vCPU, regs, fs_base and fpu are its state. */
struct proc_thread {
	int tid;
	enum proc_state state;
	int cpu;	     /* the vCPU holding its state, or -1 */
	int pin;	     /* -1, or the vCPU it must resume on (stopped inside the runtime) */
	struct vm_regs regs; /* the program's registers */
	int regs_dirty;	     /* changed by the host: the vCPU gets them before the next entry */
	uint64_t fs_base;
	uint8_t *fpu;	/* VM_FPU_MAX bytes, made on first need */
	size_t fpu_len; /* 0: the vCPU's state is its own (it never left one), or fresh */
	/* signals: its mask (the in-guest runtime keeps the running thread's, sys_rt_ops), those
	 * sent to it and not yet delivered, its alternate stack (ss_sp, ss_flags, ss_size) */
	uint64_t sigmask, pending;
	uint64_t altstack[3];
	uint64_t clear_tid; /* CLONE_CHILD_CLEARTID, set_tid_address: 0 and a wake at its end */
	/* set_robust_list's head: the robust futexes it holds are released at its end (not
	 * kept by a snapshot: a thread sets it as it starts) */
	uint64_t robust;
	/* prctl's, per thread as on Linux (a new thread takes its creator's; sys_prctl.c): its
	 * name (PR_SET_NAME, "" until set: the program's), no_new_privs, keepcaps, the signal its
	 * parent's end sends it */
	char comm[16];
	/* sched_setaffinity's mask of the vCPUs it may run on, 0: all (kept, never obeyed: any
	 * vCPU of the process runs any thread) */
	uint64_t affinity;
	/* the time it ran on a vCPU (ns): its CPU-time clock */
	uint64_t cpu_ns;
	uint8_t no_new_privs, keepcaps;
	int pdeathsig;
	/* a call that waits: the key a wake names, the futex bitset, the deadline (CLOCK_MONOTONIC
	 * ns, 0: none); woken: a wake named it; expired: the deadline passed; restart: the call's
	 * number, to make it again */
	uint64_t wkey;
	uint32_t wbits;
	uint64_t wdeadline;
	int woken, expired, retry;
	int counted; /* the layer above counted the call it waits in */
	/* the layer above's, kept across the retries of a call that waits: its own deadline (a
	 * poll's timeout, when the wait's is a sooner timer's) and what it did so far (the bytes a
	 * pipe's write wrote) */
	uint64_t wuntil, wdone;
	uint64_t nr;
	uint64_t slice_end; /* when its vCPU goes to another thread that is ready */
	uint64_t poke;	    /* 0, or when its run stops anyway (a signal waits for it) */
	/* sigsuspend: the mask to restore once a handler ran */
	uint64_t saved_mask;
	int suspended;
	size_t next; /* the ready queue's link (an index + 1; 0: the end) */
};

/* a process timer: a signal at `at`, then every `every` ns (0: once) */
struct proc_timer {
	uint64_t at, every;
	int sig;
	int armed;
	int used;   /* a POSIX timer made and not deleted */
	int thread; /* tid to signal, 0: the process */
};

struct proc;

/* What the layer above does for the scheduler, under the process's lock (sys: sys_thread.c). */
struct proc_ops {
	/* t's exit e on its vCPU: its registers are in t->regs (write and set regs_dirty) */
	void (*exit)(void *ctx, struct proc_thread *t, const struct vm_exit *e);
	/* before t is entered: its call made again (t->retry), its pending signals delivered.
	 * 0 when it may run now, else it waits again or the process ended */
	int (*enter)(void *ctx, struct proc_thread *t);
	/* t leaves vCPU cpu for u, or u comes to it (either may be NULL): what the in-guest
	 * runtime keeps of the thread on a vCPU (its tid, its signal mask) follows */
	void (*swap)(void *ctx, int cpu, struct proc_thread *t, struct proc_thread *u);
	/* a process timer fired */
	void (*timer)(void *ctx, struct proc_timer *tm);
	/* the invocation's deadline passed while no vCPU ran (every thread waited) */
	void (*timeout)(void *ctx);
};

/* a vCPU as the scheduler sees it */
struct proc_cpu {
	struct proc_thread *cur; /* the thread whose state it holds, NULL: none */
	int running;		 /* a host thread is in vm_cpu_run on it */
	int idle;		 /* its host thread waits for a thread to become ready */
	/* vCPUs past the first: their own host thread, parked between invocations */
	pthread_t worker;
	int has_worker;
	int busy; /* the worker is inside an invocation */
};

struct proc {
	struct vm *vm;
	int ncpu;	 /* vCPUs the process may use (--cpus) */
	int max_threads; /* --threads */
	const struct proc_ops *ops;
	void *ctx;
	/* every field below, and the layer above's state during an exit: own, or one shared by
	 * every process of an invocation (proc_share) */
	pthread_mutex_t own, *mu;
	pthread_cond_t cv;	/* idle vCPUs wait here; so does the end of an invocation */
	struct proc_thread **t; /* slots (each kept once made), t[0] the first thread */
	size_t nt, cap;
	int live;	   /* threads not PROC_FREE */
	int next_tid;	   /* the next tid handed out */
	int *tids;	   /* where tids come from: &next_tid, or the invocation's (proc_share) */
	size_t ready_head; /* the ready queue, FIFO (an index + 1) */
	size_t ready_tail;
	uint64_t pending; /* signals sent to the process, not to one thread */
	struct proc_timer timers[PROC_TIMERS];
	struct proc_cpu cpu[VM_CPUS_MAX];
	int done;	/* the invocation ended (proc_stop): every vCPU stops */
	int running;	/* in proc_run */
	int active;	/* an invocation runs: workers take part */
	uint64_t epoch; /* counts invocations, for the workers */
	int quit;	/* the workers end (proc_free) */
	uint64_t deadline;
	/* the thread being served for an exit or entered, for the layer above's handlers */
	struct proc_thread *cur;
	int cur_cpu;
	uint64_t switches; /* vCPU handed from one thread to another, counted */
	uint64_t cpu_gone; /* the CPU time of its threads that ended (ns) */
};

/* a thread in the saved form the snapshot keeps (proc_save) */
struct proc_saved_thread {
	int tid, cpu, pin; /* cpu: the vCPU that held it (-1 none) */
	struct vm_regs regs;
	uint64_t fs_base, sigmask, pending, clear_tid;
	uint64_t altstack[3];
	uint64_t fpu_len; /* 0: vCPU 0's thread, whose FPU state the snapshot keeps itself */
	uint8_t fpu[VM_FPU_MAX];
};

struct proc_saved {
	struct proc_saved_thread *t;
	size_t nt;
	int next_tid;
	uint64_t pending;
	struct proc_timer timers[PROC_TIMERS]; /* at: the time left, not a time */
};

/* A process of one thread (tid 1) on vCPU 0 of vm, which has ncpu vCPUs (vm_add_cpu made them).
 * 0 or -ENOMEM. */
int proc_init(struct proc *p, struct vm *vm, int ncpu, int max_threads, const struct proc_ops *ops,
	      void *ctx);
/* from now on p takes its lock and tids from the invocation's (a child process's, or the
 * first's while it has children); NULL, NULL: its own again */
void proc_share(struct proc *p, pthread_mutex_t *mu, int *tids);
/* p takes its own lock and tids again, its workers stopped first: with the shared lock, which
 * the caller must not hold when p has workers (only a process that ran with two vCPUs does) */
void proc_unshare(struct proc *p);
/* stops the workers and frees everything */
void proc_free(struct proc *p);

/* Runs the process from the calling thread, which drives vCPU 0 (the others get threads of
 * their own) until proc_stop, deadline ns (0: none), then returns with every vCPU stopped. */
void proc_run(struct proc *p, uint64_t deadline);
/* under the lock (an ops call): the invocation ends; every vCPU stops at its next exit */
void proc_stop(struct proc *p);

/* under the lock: a new thread with the given state, not ready yet (proc_ready); NULL when
 * --threads is reached (EAGAIN) or no memory */
struct proc_thread *proc_spawn(struct proc *p, const struct vm_regs *regs, uint64_t fs_base,
			       uint64_t sigmask);
/* under the lock: t waits for a vCPU */
void proc_ready(struct proc *p, struct proc_thread *t);
/* under the lock: t ends (its slot freed once its vCPU lets go of it) */
void proc_exit_thread(struct proc *p, struct proc_thread *t);
struct proc_thread *proc_find(struct proc *p, int tid);
/* the FPU state of t now: from its vCPU, or what it saved */
int proc_fpu_of(struct proc *p, struct proc_thread *t, uint8_t *buf, size_t *len);
int proc_set_fpu(struct proc *p, struct proc_thread *t, const uint8_t *buf, size_t len);
int proc_set_fs(struct proc *p, struct proc_thread *t, uint64_t base);

/* under the lock: the current thread waits (state PROC_WAITING) on key (bits: a futex's bitset,
 * else ~0) until a wake names it, deadline (0: none) passes, or a signal comes; then its call is
 * made again (the ops' enter), with woken or expired set */
void proc_wait(struct proc *p, struct proc_thread *t, uint64_t key, uint32_t bits,
	       uint64_t deadline);
/* under the lock: t, which waits, makes its call again now (a signal came before its wait) */
void proc_rouse(struct proc *p, struct proc_thread *t);
/* under the lock: up to n threads waiting on key with a bit of bits in common become READY
 * (woken): how many */
int proc_wake(struct proc *p, uint64_t key, uint32_t bits, int n);
/* under the lock: the first thread after `after` (NULL: from the start) that waits on key, or
 * NULL; and t, which waits, woken as proc_wake wakes one */
struct proc_thread *proc_waiter(struct proc *p, uint64_t key, struct proc_thread *after);
void proc_wake_thread(struct proc *p, struct proc_thread *t);
/* under the lock: up to n waiters on key woken, up to m more moved to key2: those woken + moved */
int proc_requeue(struct proc *p, uint64_t key, uint64_t key2, int n, int m, int *moved);
/* under the lock: sig (1-64) is pending for t, or for the process (t NULL); a thread that
 * waits is made to retry (and sees the signal), one that runs is kicked */
void proc_signal(struct proc *p, struct proc_thread *t, int sig);
/* the threads alive, one by one: from *i = 0 until NULL */
struct proc_thread *proc_each(struct proc *p, size_t *i);

/* snapshots: every thread (the one vCPU 0 holds without its FPU state, which the caller keeps
 * with the vCPU's registers; a wait rewound to make its call again); timers as time left.
 * mask(ctx, t): where the layer above keeps t's signal mask now. */
int proc_save(struct proc *p, struct proc_saved *out,
	      uint64_t (*mask)(void *ctx, struct proc_thread *t), void *ctx);
/* back to a saved state: every thread made since is gone; vCPU 0 holds the thread it held */
int proc_restore(struct proc *p, const struct proc_saved *s);
void proc_saved_free(struct proc_saved *s);
/* threads alive */
int proc_threads(const struct proc *p);
/* under the lock: the CPU time of every thread of p, those that ended included (ns) */
uint64_t proc_cpu_ns(struct proc *p);

#endif
