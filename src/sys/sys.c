/* The syscall table, built from the family tables, and the service of each thread's exits for
 * the scheduler (src/proc/); what the handlers use is sys_call.c. */
#include <errno.h>
#include <signal.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "fd/fd.h"
#include "fs/fs_tmp.h"

static struct sys_entry table[SYS_NR_MAX];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void build_table(void)
{
	/* a later family's entry replaces an earlier one's: the bundle's calls the refusals */
	const struct sys_entry *families[] = {
	    sys_deny_table,   sys_fs_table,	 sys_fs_stat_table, sys_fs_path_table,
	    sys_tmp_table,    sys_fs_dir_table,	 sys_mem_table,	    sys_io_table,
	    sys_fd_table,     sys_pipe_table,	 sys_eventfd_table, sys_timerfd_table,
	    sys_poll_table,   sys_epoll_table,	 sys_time_table,    sys_proc_table,
	    sys_thread_table, sys_signal_table,	 sys_timer_table,   sys_kin_table,
	    sys_ident_table,  sys_fs_attr_table, sys_sigwait_table, sys_sock_table,
	    sys_sched_table,  sys_vec_table,	 sys_io_at_table,   sys_statfs_table,
	    sys_rlimit_table, sys_shm_table,	 sys_futex_table,   sys_prctl_table,
	    sys_nice_table};
	for (size_t f = 0; f < sizeof(families) / sizeof(families[0]); f++)
		for (const struct sys_entry *e = families[f]; e->name; e++)
			if (e->nr >= 0 && e->nr < SYS_NR_MAX)
				table[e->nr] = *e;
}

const char *sys_name(int nr)
{
	pthread_once(&table_once, build_table);
	return nr >= 0 && nr < SYS_NR_MAX && table[nr].name ? table[nr].name : NULL;
}

static const struct proc_ops sys_proc_ops;

int sys_init(struct sys_state *st, struct vm *vm, const struct sys_process *proc)
{
	pthread_once(&table_once, build_table);
	memset(st, 0, sizeof(*st));
	st->vm = vm;
	st->proc = *proc;
	if (st->proc.cpus < 1)
		st->proc.cpus = 1;
	if (st->proc.max_threads < 1)
		st->proc.max_threads = PROC_THREADS_DEFAULT;
	st->rt = sys_rt_of(proc->guest);
	st->obj = st->obj_own;
	st->pipe_buf = st->pipe_own;
	st->brk_cur = proc->brk_start;
	st->out_limit = EMBER_OUTPUT_DEFAULT;
	if (st->proc.max_pids < 1)
		st->proc.max_pids = SYS_PIDS_DEFAULT;
	st->pid = st->pgid = st->sid = 1;
	st->umask = SYS_UMASK;
	sys_fd_init(st); /* 0, 1, 2; 3 only with code, 4 in invocations */
	if (vm_cpus(vm) < st->proc.cpus)
		return -EINVAL; /* the machine was made with fewer vCPUs (vm_add_cpu) */
	return proc_init(&st->pr, vm, st->proc.cpus, st->proc.max_threads, &sys_proc_ops, st);
}

void sys_free(struct sys_state *st)
{
	proc_free(&st->pr);
	if (!st->tmp_borrowed)
		sys_tmp_free(st->tmp);
	st->tmp = NULL;
	free(st->far);
	sys_shm_free(st);
	sys_shmem_free(st);
	sys_fd_free(st);
	free(st->vmas);
	free(st->out.data);
	free(st->log.data);
	free(st->head.data);
	st->vmas = NULL;
	st->out.data = st->log.data = st->head.data = NULL;
}

void sys_set_input(struct sys_state *st, const void *in, size_t len)
{
	st->in = in;
	st->in_len = len;
	st->in_pos = 0;
	st->in_shared = 0; /* one process to read it, until it forks */
	st->limit_hit = 0;
}

/* count: 0 for the in-guest runtime's calls of its own, which are not the program's */
static long dispatch(struct sys_state *st, uint64_t nr, const uint64_t a[6], int count)
{
	size_t slot = nr < SYS_NR_MAX ? nr : SYS_NR_MAX;
	const struct sys_entry *e = nr < SYS_NR_MAX ? &table[nr] : NULL;
	sys_stats_mark(&st->stats, slot);
	if (e && e->fn && (!e->when || e->when(st))) {
		st->stats.served[slot] += count;
		return sys_opath_refused(st, nr, a) ? -EBADF : e->fn(st, a);
	}
	st->stats.denied[slot] += count;
	return e && e->err ? -e->err : -ENOSYS;
}

/* the signal a process would have died of, per fault */
static const struct {
	enum vm_fault fault;
	int sig;
	const char *what;
} faults[] = {
    {VM_FAULT_PAGE, 11, "page fault"},
    {VM_FAULT_GP, 11, "general protection fault"},
    {VM_FAULT_DIVIDE, 8, "divide error"},
    {VM_FAULT_INVALID, 4, "invalid opcode"},
    {VM_FAULT_BREAK, 5, "breakpoint"},
    {VM_FAULT_SYSCALL, 31, "syscall instruction that was not rewritten"},
    {VM_FAULT_FLOAT, 8, "floating-point exception"},
    {VM_FAULT_ALIGN, 7, "alignment check"},
    {VM_FAULT_INT80, 31, "int $0x80"},
    {VM_FAULT_SYSENTER, 31, "sysenter"},
    {VM_FAULT_UNKNOWN, 11, "triple fault"},
};

static void crashed(struct sys_state *st, const struct vm_exit *e)
{
	st->fault = *e;
	for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++) {
		if (faults[i].fault != e->fault)
			continue;
		if (e->fault == VM_FAULT_INT80 || e->fault == VM_FAULT_SYSENTER) {
			/* Linux would run it as a 32-bit call: refused, as a load once did (the
			 * ptrace backend cannot tell where a sysenter was: rip 0) */
			char at[32] = "";
			if (e->rip)
				snprintf(at, sizeof(at), " at %#llx", (unsigned long long)e->rip);
			sys_stop(st, SYS_SIGNALED, faults[i].sig,
				 "uses %s%s: only the 64-bit `syscall` instruction is supported",
				 faults[i].what, at);
			return;
		}
		if (e->fault != VM_FAULT_PAGE) {
			sys_stop(st, SYS_SIGNALED, faults[i].sig, "%s at rip %#llx", faults[i].what,
				 (unsigned long long)e->rip);
			return;
		}
		uint64_t a = e->addr;
		const struct sys_vma *v = sys_vma_find(st, a);
		if (v && (v->prot & VM_PROT_FAULT)) { /* a file's page past its end */
			sys_stop(st, SYS_SIGNALED, SIGBUS, "bus error at address %#llx, rip %#llx",
				 (unsigned long long)a, (unsigned long long)e->rip);
			return;
		}
		const char *where =
		    a < EMBER_SYS_END ? " (null pointer)"
		    : a >= st->proc.stack_lo - EMBER_STACK_GUARD && a < st->proc.stack_lo
			? " (stack overflow)"
			: "";
		sys_stop(st, SYS_SIGNALED, faults[i].sig,
			 "page fault at address %#llx%s, rip %#llx", (unsigned long long)a, where,
			 (unsigned long long)e->rip);
		return;
	}
}

/* the first read of the request, or the explicit snapshot call, is where init ends */
static int at_snapshot_point(struct sys_state *st, const struct vm_regs *r)
{
	if (r->rax == EMBER_SYS_SNAPSHOT)
		return 1;
	return (r->rax == SYS_read || r->rax == SYS_readv) && r->rdi == 0 && sys_fd_std(st, 0, 0);
}

/* the call in t's registers, dispatched: its result in rax, rcx and r11 as a syscall leaves
 * them, unless it waits (the registers untouched, to make it again) or set them all */
static void make_call(struct sys_state *st, struct proc_thread *t)
{
	struct vm_regs *r = &t->regs;
	const uint64_t a[6] = {r->rdi, r->rsi, r->rdx, r->r10, r->r8, r->r9};
	long ret;
	sys_fs_rt_closed(st);
	int own = st->rt->own_call(st, r); /* the runtime's own, not the program's */
	t->nr = r->rax;
	if (!st->redo)
		t->wuntil = t->wdone = 0; /* a new call: nothing of an earlier one's wait */
	if (r->rax == EMBER_SYS_SNAPSHOT)
		ret = 0;
	else if (r->rax == EMBER_SYS_ARENA && own)
		ret = sys_arena_grow(st, a[0]);
	else
		ret = dispatch(st, r->rax, a, !own && !t->counted); /* once, however often made */
	t->counted = ret == SYS_WAITS;
	if (st->std_changed) { /* a dup2 over fd 1, say: the runtime hands those calls over */
		st->std_changed = 0;
		st->rt->fds(st, sys_fd_moved(st));
	}
	if (ret == SYS_WAITS || ret == SYS_REGS || t->state == PROC_FREE)
		return;
	if (st->outcome != SYS_RUNNING && st->outcome != SYS_SNAPSHOT)
		return;
	r->rax = (uint64_t)ret;
	/* the kernel clobbers rcx and r11 on syscall; programs expect nothing else to change */
	r->rcx = r->rip;
	r->r11 = r->rflags;
	t->regs_dirty = 1;
}

static void serve_syscall(struct sys_state *st, struct proc_thread *t)
{
	int handed = st->rt->site(st, t);
	struct vm_regs *r = &t->regs;
	sys_fs_rt_closed(st); /* before the snapshot point: the state saved has them closed */
	if (st->snap_armed && at_snapshot_point(st, r)) {
		/* stop with the call unserved: every invocation restored from here serves it */
		st->pending = EMBER_HC_SYSCALL;
		st->snap_tid = t->tid;
		sys_stop(st, SYS_SNAPSHOT, 0, "snapshot point");
		return;
	}
	if (st->pending && t->tid == st->snap_tid)
		st->pending = 0;
	if (!handed && st->rt->bounce(st, r)) { /* the runtime serves it, on the same exit */
		t->regs_dirty = 1;
		return;
	}
	st->redo = 0;
	make_call(st, t);
}

/* A `syscall` no loader rewrote (code mapped at run time: ld.so's libraries, dlopen, a JIT)
 * faulted: t goes past it and the call is served as a trapping site's, by the same checked
 * emulation. Where the CPU already left the instruction (PVM's jump to LSTAR, ptrace's SIGSYS),
 * r11 holds the flags it had, as a syscall leaves them. */
static int stray_call(struct proc_thread *t, const struct vm_exit *e)
{
	if (e->fault != VM_FAULT_SYSCALL)
		return 0;
	if (t->regs.rip != e->rip)
		t->regs.rflags = t->regs.r11;
	t->regs.rip = e->rip + 2;
	t->regs_dirty = 1;
	return 1;
}

/* one exit of t, which the scheduler was running */
static void handle_exit(struct sys_state *st, struct proc_thread *t, const struct vm_exit *e)
{
	st->stats.exits[e->kind]++;
	st->rt->exit(st); /* whatever the exit, the runtime's buffers are collected */
	if (e->kind == VM_EXIT_INTERRUPT)
		st->rt->stopped(st, t);
	if (st->outcome != SYS_RUNNING) {
		/* The process stopped (the snapshot point) while t's call was on its way, from
		 * another vCPU: it is not served, so t is put back on its `out`, to make it again
		 * when it next runs. Left past it, the snapshot would resume t with the number of
		 * the call as its result (a futex that returned 202). */
		if (e->kind == VM_EXIT_HYPERCALL &&
		    (e->port == EMBER_HC_SYSCALL || e->port == EMBER_HC_INPUT)) {
			t->regs.rip -= EMBER_HC_LEN;
			t->regs_dirty = 1;
			/* the vCPU too: a snapshot takes vCPU 0's registers from it */
			if (t->cpu >= 0 && vm_cpu_set_regs(st->vm, t->cpu, &t->regs) == 0)
				t->regs_dirty = 0;
		}
		return;
	}
	switch (e->kind) {
	case VM_EXIT_HYPERCALL:
		if (e->port == EMBER_HC_SYSCALL) {
			serve_syscall(st, t);
			break;
		}
		if (e->port == EMBER_HC_INPUT)
			st->snap_tid = t->tid; /* the snapshot point, if this is it */
		if (e->port != EMBER_HC_NOP && !st->rt->hypercall(st, e->port))
			sys_stop(st, SYS_SIGNALED, 11, "unknown hypercall port %#x", e->port);
		break;
	case VM_EXIT_FAULT: {
		struct vm_exit f = *e; /* the runtime's may say better what the program did */
		int rt = st->rt->fault(st, &f);
		if (rt == SYS_RT_CALL || (!rt && stray_call(t, &f)))
			serve_syscall(st, t);
		else if (!rt && !sys_fault_signal(st, t, &f))
			crashed(st, &f);
		break;
	}
	case VM_EXIT_TIMEOUT:
		sys_stop(st, SYS_TIMEOUT, 0, "timed out");
		break;
	case VM_EXIT_INTERRUPT: /* the scheduler's: a slice's end, a signal, a wake */
		break;
	default:
		sys_stop(st, SYS_ERROR, 0, "%s", e->msg);
		break;
	}
}

void sys_handle_exit(struct sys_state *st, const struct vm_exit *e)
{
	struct proc_thread *t = st->pr.cur ? st->pr.cur : st->pr.cpu[0].cur;
	struct proc_thread *was = st->pr.cur;
	if (!t)
		return;
	st->pr.cur = t;
	if (vm_cpu_get_regs(st->vm, t->cpu >= 0 ? t->cpu : 0, &t->regs) == 0)
		handle_exit(st, t, e);
	if (t->regs_dirty && t->cpu >= 0)
		vm_cpu_set_regs(st->vm, t->cpu, &t->regs), t->regs_dirty = 0;
	st->pr.cur = was;
}

static void ops_exit(void *ctx, struct proc_thread *t, const struct vm_exit *e)
{
	handle_exit(ctx, t, e);
}

/* before t runs: a call that waited is made again, or interrupted by a signal it takes now;
 * then its signals are delivered */
static int ops_enter(void *ctx, struct proc_thread *t)
{
	struct sys_state *st = ctx;
	if (t->retry) {
		t->retry = 0;
		/* woken, it returns that, and the signal is taken after, as on Linux; one a
		 * sigtimedwait awaits is its result (sys_sigwait.c) */
		if (!t->woken && sys_signal_ready(st, t) && t->nr != SYS_rt_sigtimedwait) {
			sys_interrupt(st, t);
		} else {
			st->redo = 1;
			make_call(st, t);
			st->redo = 0;
			if (t->state != PROC_RUNNING)
				return 0;
		}
	}
	if (t->pending || st->pr.pending)
		sys_deliver(st, t);
	return st->outcome == SYS_RUNNING && t->state == PROC_RUNNING;
}

static void ops_swap(void *ctx, int cpu, struct proc_thread *t, struct proc_thread *u)
{
	struct sys_state *st = ctx;
	st->rt->swap(st, cpu, t, u);
}

static void ops_timer(void *ctx, struct proc_timer *tm)
{
	struct sys_state *st = ctx;
	struct proc_thread *t = tm->thread ? proc_find(&st->pr, tm->thread) : NULL;
	sys_send(st, t, tm->sig, -2 /* SI_TIMER */);
}

static void ops_timeout(void *ctx)
{
	sys_stop(ctx, SYS_TIMEOUT, 0, "timed out");
}

static const struct proc_ops sys_proc_ops = {
    .exit = ops_exit,
    .enter = ops_enter,
    .swap = ops_swap,
    .timer = ops_timer,
    .timeout = ops_timeout,
};

/* At the snapshot point, a thread woken from a wait has not made its call again yet: it is
 * made now, so the snapshot holds its result (a woken futex wait's 0), or the wait again, which
 * the snapshot rewinds to be made at the restore. Saved as it was, its registers would still
 * hold the call's number, as if that were what the call returned. */
static void settle(struct sys_state *st)
{
	size_t i = 0;
	pthread_mutex_lock(st->pr.mu);
	for (struct proc_thread *t; (t = proc_each(&st->pr, &i));) {
		if (!t->retry)
			continue;
		t->retry = 0;
		st->pr.cur = t;
		st->redo = 1;
		make_call(st, t);
		st->redo = 0;
		st->pr.cur = NULL;
	}
	/* registers changed since the last exit reach the vCPU that holds them: the snapshot
	 * reads vCPU 0's there */
	for (int c = 0; c < st->pr.ncpu && c < VM_CPUS_MAX; c++) {
		struct proc_thread *t = st->pr.cpu[c].cur;
		if (t && t->regs_dirty && !vm_cpu_set_regs(st->vm, c, &t->regs))
			t->regs_dirty = 0;
	}
	pthread_mutex_unlock(st->pr.mu);
}

enum sys_outcome sys_run(struct sys_state *st)
{
	st->outcome = SYS_RUNNING;
	struct proc_thread *first = st->pr.cpu[0].cur;
	pthread_mutex_lock(st->pr.mu);
	struct proc_thread *snap = st->pending ? proc_find(&st->pr, st->snap_tid) : NULL;
	if (snap && snap != first) {
		/* stopped on another vCPU: its call is made when it is first entered */
		if (st->pending == EMBER_HC_SYSCALL)
			snap->retry = 1;
		st->pending = 0;
		first = NULL;
	}
	if (first) {
		st->pr.cur = first;
		st->pr.cur_cpu = 0;
		/* the registers the restore gave it, else the vCPU's (proc_restore) */
		if (first->regs_dirty || vm_get_regs(st->vm, &first->regs) == 0) {
			if (st->pending == EMBER_HC_SYSCALL)
				serve_syscall(st, first);
			else if (st->pending == EMBER_HC_INPUT)
				st->pending = 0; /* the runtime's begin put the request in its
						    buffer already */
		}
		if (first->regs_dirty)
			vm_set_regs(st->vm, &first->regs), first->regs_dirty = 0;
		st->pr.cur = NULL;
	}
	pthread_mutex_unlock(st->pr.mu);
	if (st->outcome == SYS_RUNNING)
		proc_run(&st->pr, vm_deadline(st->vm));
	if (st->outcome == SYS_SNAPSHOT)
		settle(st);
	/* what the runtime still holds of any vCPU's output, now that none runs */
	st->rt->exit(st);
	return st->outcome;
}
