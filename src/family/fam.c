/* The family's table: who is whose child, waits, signals and groups between them, the end. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "family/fam.h"

struct fam *fam_new(struct sys_state *root, const struct fam_loader *ld, void *ld_ctx)
{
	struct fam *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->ld = ld;
	f->ld_ctx = ld_ctx;
	f->root = root;
	f->cur = root;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&f->cv, &ca);
	pthread_condattr_destroy(&ca);
	root->kin = &fam_kin_ops;
	root->kin_ctx = f;
	return f;
}

void fam_free(struct fam *f)
{
	if (!f)
		return;
	fam_kept_sweep(f, 1);
	pthread_cond_destroy(&f->cv);
	free(f);
}

struct fam_proc *fam_find(struct fam *f, int pid)
{
	for (struct fam_proc *c = f->procs; c; c = c->next)
		if (c->pid == pid && !c->reaped)
			return c;
	return NULL;
}

/* the state process pid runs now: the first's (its latest program), a live child's; NULL */
static struct sys_state *state_of(struct fam *f, int pid)
{
	if (pid == f->root->pid)
		return f->cur;
	struct fam_proc *c = fam_find(f, pid);
	return c && c->state == FAM_LIVE ? c->st : NULL;
}

static void reap(struct fam *f, struct fam_proc *c)
{
	c->reaped = 1;
	f->nprocs--;
}

void fam_ended(struct fam *f, struct sys_state *st, int status)
{
	struct fam_proc *c = fam_find(f, st->pid);
	if (!c)
		return;
	c->state = FAM_ZOMBIE;
	c->status = status;
	c->cpu_ns = proc_cpu_ns(&st->pr) + st->children_cpu;
	c->pgid = st->pgid;
	/* its children are the first process's now, as init's on Linux */
	for (struct fam_proc *k = f->procs; k; k = k->next) {
		if (k->reaped || k->ppid != c->pid)
			continue;
		k->ppid = f->root->pid;
		k->orphan = 1;
		if (k->state == FAM_LIVE && k->st)
			k->st->ppid = f->root->pid;
		else
			reap(f, k);
	}
	if (c->orphan) {
		reap(f, c); /* the init it went to reaps it, the first process never sees it */
		return;
	}
	struct sys_state *p = state_of(f, c->ppid);
	if (!p) {
		reap(f, c); /* nobody left to wait for it */
		return;
	}
	const struct sys_sig *a = &p->sig[SIGCHLD];
	if (a->handler == (uint64_t)(uintptr_t)SIG_IGN || (a->flags & SA_NOCLDWAIT)) {
		reap(f, c); /* the parent said it will not wait */
	} else {
		sys_send(p, NULL, SIGCHLD, WIFEXITED(status) ? CLD_EXITED : CLD_KILLED);
	}
	proc_wake(&p->pr, SYS_KEY_CHILD, ~0u, INT_MAX);
	if (c->reaped && f->cur != p)
		proc_wake(&f->cur->pr, SYS_KEY_CHILD, ~0u, INT_MAX);
}

int fam_in_init(struct fam *f, struct sys_state *st)
{
	if (!f->root->snap_armed)
		return 0;
	f->root->init_forked = 1;
	sys_stop(st, SYS_ERROR, 0, "started a process before reading its request");
	return 1;
}

static int matches(const struct fam_proc *c, int idtype, int id)
{
	int pgid = c->state == FAM_LIVE && c->st ? c->st->pgid : c->pgid;
	return idtype == P_ALL || (idtype == P_PID && c->pid == id) ||
	       (idtype == P_PGID && pgid == id);
}

/* a thread's own child, for __WNOTHREAD: one the thread made, or one whose maker has ended (its
 * children are the process's, as Linux gives them to another thread) */
static int own_child(const struct fam_proc *c, struct sys_state *st)
{
	return c->thread == sys_cur(st)->tid || !proc_find(&st->pr, c->thread);
}

static long kin_wait(void *ctx, struct sys_state *st, int idtype, int id, int options, int *status,
		     uint64_t *cpu_ns)
{
	struct fam *f = ctx;
	int some = 0;
	for (struct fam_proc *c = f->procs; c; c = c->next) {
		if (c->reaped || c->orphan || c->ppid != st->pid || !matches(c, idtype, id) ||
		    (options & __WNOTHREAD && !own_child(c, st)))
			continue;
		some = 1;
		if (c->state != FAM_ZOMBIE && !status)
			return 0; /* one alive */
		if (c->state != FAM_ZOMBIE || !status)
			continue;
		*status = c->status;
		*cpu_ns = c->cpu_ns;
		if (!(options & WNOWAIT)) {
			st->children_cpu += c->cpu_ns;
			reap(f, c);
		}
		return c->pid;
	}
	return some && status ? 0 : -ECHILD;
}

static void send(struct sys_state *st, int sig)
{
	if (sig)
		sys_send(st, NULL, sig, 0 /* SI_USER */);
}

static long kin_kill(void *ctx, struct sys_state *st, int pid, int sig)
{
	struct fam *f = ctx;
	if (pid > 0) {
		struct sys_state *t = state_of(f, pid);
		if (t) {
			send(t, sig);
			return 0;
		}
		return fam_find(f, pid) ? 0 : -ESRCH; /* a zombie takes it and nothing happens */
	}
	/* a group (0: the caller's), or everyone but the first (-1) */
	int pgid = pid == 0 ? st->pgid : -pid, n = 0;
	if (pid != -1 && f->cur->pgid == pgid && ++n)
		send(f->cur, sig);
	for (struct fam_proc *c = f->procs; c; c = c->next) {
		if (c->reaped || c->state != FAM_LIVE || !c->st)
			continue;
		if ((pid == -1 && c->st != st) || (pid != -1 && c->st->pgid == pgid)) {
			n++;
			send(c->st, sig);
		}
	}
	return n ? 0 : -ESRCH;
}

static long kin_setpgid(void *ctx, struct sys_state *st, int pid, int pgid)
{
	struct fam *f = ctx;
	struct sys_state *t = pid == st->pid ? st : NULL;
	if (!t) {
		struct fam_proc *c = fam_find(f, pid);
		if (!c || c->ppid != st->pid || c->orphan)
			return -ESRCH;
		if (c->state != FAM_LIVE || !c->st)
			return -ESRCH;
		t = c->st;
	}
	if (pgid != pid) { /* joining a group: one that exists */
		int found = f->cur->pgid == pgid;
		for (struct fam_proc *c = f->procs; c && !found; c = c->next)
			found = !c->reaped && c->state == FAM_LIVE && c->st && c->st->pgid == pgid;
		if (!found)
			return -EPERM;
	}
	t->pgid = pgid;
	return 0;
}

static long kin_getpgid(void *ctx, struct sys_state *st, int pid)
{
	(void)st;
	struct sys_state *t = state_of(ctx, pid);
	return t ? t->pgid : -ESRCH;
}

static void kin_changed(void *ctx, struct sys_state *st)
{
	struct fam *f = ctx;
	if (f->cur != st)
		proc_wake(&f->cur->pr, SYS_KEY_FD, ~0u, INT_MAX);
	for (struct fam_proc *c = f->procs; c; c = c->next)
		if (!c->reaped && c->state == FAM_LIVE && c->st && c->st != st)
			proc_wake(&c->st->pr, SYS_KEY_FD, ~0u, INT_MAX);
}

const struct sys_kin_ops fam_kin_ops = {
    .fork = fam_fork,
    .exec = fam_exec,
    .wait = kin_wait,
    .kill = kin_kill,
    .setpgid = kin_setpgid,
    .getpgid = kin_getpgid,
    .changed = kin_changed,
};

/* the program the first process became runs to its end; the first gets its outcome */
static void run_successors(struct fam *f)
{
	pthread_mutex_lock(fam_lock(f));
	while (f->cur->outcome == SYS_EXECED && f->next_st && !f->root->limit_hit) {
		struct sys_state *prev = f->cur;
		struct vm *prev_vm = f->cur_vm;
		f->cur = f->next_st;
		f->cur_vm = f->next_vm;
		f->next_st = NULL;
		f->next_vm = NULL;
		fam_close_fds(prev);
		pthread_mutex_unlock(fam_lock(f));
		if (prev != f->root)
			fam_drop(f, prev_vm, prev);
		fam_run_state(f, f->cur);
		pthread_mutex_lock(fam_lock(f));
		fam_add_stats(f, f->cur);
	}
	struct sys_state *last = f->cur, *root = f->root;
	if (last != root) {
		root->outcome = last->outcome;
		root->status = last->status;
		root->fault = last->fault;
		memcpy(root->msg, last->msg, sizeof(root->msg));
		fam_close_fds(last);
	}
	f->cur = root;
	if (root->limit_hit && root->outcome != SYS_LIMIT) { /* a child's, or its successor's */
		root->outcome = SYS_LIMIT;
		root->status = 0;
		snprintf(root->msg, sizeof(root->msg), "output limit of %llu bytes exceeded",
			 (unsigned long long)root->out_limit);
	}
	pthread_mutex_unlock(fam_lock(f));
	if (last != root)
		fam_drop(f, f->cur_vm, last);
	f->cur_vm = NULL;
	if (root->outcome == SYS_EXECED) /* its program could not be made after all */
		root->outcome = SYS_ERROR;
}

/* every process left is stopped; their host threads end and are joined */
static void end_all(struct fam *f)
{
	pthread_mutex_lock(fam_lock(f));
	f->ending = 1;
	for (;;) {
		int left = 0;
		for (struct fam_proc *c = f->procs; c; c = c->next) {
			if (c->has_host != 1)
				continue;
			left++;
			if (c->st)
				sys_stop(c->st, SYS_SIGNALED, SIGKILL,
					 "killed: the invocation ended");
			if (c->st) /* a run about to start takes no stop before it: again */
				proc_stop(&c->st->pr);
		}
		if (!left)
			break;
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += 5000000;
		if (ts.tv_nsec >= 1000000000)
			ts.tv_sec++, ts.tv_nsec -= 1000000000;
		pthread_cond_timedwait(&f->cv, fam_lock(f), &ts);
	}
	struct fam_proc *all = f->procs;
	f->procs = NULL;
	f->nprocs = 0;
	pthread_mutex_unlock(fam_lock(f));
	while (all) {
		struct fam_proc *c = all;
		all = c->next;
		if (c->has_host)
			pthread_join(c->host, NULL);
		free(c);
	}
	f->ending = 0;
	if (f->shared) {
		/* tids handed out meanwhile are not handed out again (threads init left, say) */
		if (f->root->pr.next_tid < f->next_tid)
			f->root->pr.next_tid = f->next_tid;
		proc_share(&f->root->pr, NULL, NULL);
		f->shared = 0;
	}
}

void fam_finish(struct fam *f)
{
	if (!f)
		return;
	if (f->root->outcome == SYS_EXECED)
		run_successors(f);
	if (f->shared || f->procs)
		end_all(f);
	fam_kept_sweep(f, 1); /* nothing an execve of /tmp made outlives the invocation */
}
