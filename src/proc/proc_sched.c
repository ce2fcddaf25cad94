/* The scheduler: on each vCPU a loop takes a ready thread, enters it, and serves its exits;
 * a thread that spins loses its vCPU when its slice ends and another is ready. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proc/proc_impl.h"

static struct proc_thread *slot(struct proc *p, size_t link)
{
	return link ? p->t[link - 1] : NULL;
}

static size_t link_of(struct proc *p, struct proc_thread *t)
{
	for (size_t i = 0; i < p->nt; i++)
		if (p->t[i] == t)
			return i + 1;
	return 0;
}

void proc_ready(struct proc *p, struct proc_thread *t)
{
	if (t->state == PROC_READY)
		return;
	t->state = PROC_READY;
	t->next = 0;
	size_t l = link_of(p, t);
	if (p->ready_tail)
		slot(p, p->ready_tail)->next = l;
	else
		p->ready_head = l;
	p->ready_tail = l;
	proc_spread(p);
	/* a vCPU that waits for work takes it */
	for (int i = 0; i < p->ncpu; i++)
		if (p->cpu[i].idle) {
			pthread_cond_broadcast(&p->cv);
			break;
		}
}

void proc_unready(struct proc *p, struct proc_thread *t)
{
	size_t l = link_of(p, t), prev = 0;
	for (size_t at = p->ready_head; at; prev = at, at = slot(p, at)->next) {
		if (at != l)
			continue;
		if (prev)
			slot(p, prev)->next = t->next;
		else
			p->ready_head = t->next;
		if (p->ready_tail == l)
			p->ready_tail = prev;
		t->next = 0;
		return;
	}
}

/* vCPU cpu may run t: t is not pinned elsewhere */
static int may_take(const struct proc_thread *t, int cpu)
{
	return t->pin < 0 || t->pin == cpu;
}

/* a ready thread for vCPU cpu, taken off the queue: one pinned to it first (it holds the
 * runtime's state of this vCPU), else the first in line that may run here: FIFO, so a thread
 * whose state the vCPU holds already gets no head start over one that waited */
static struct proc_thread *take(struct proc *p, int cpu)
{
	struct proc_thread *best = NULL;
	for (size_t at = p->ready_head; at; at = slot(p, at)->next) {
		struct proc_thread *t = slot(p, at);
		if (t->pin == cpu) {
			best = t;
			break;
		}
		if (!best && may_take(t, cpu))
			best = t;
	}
	if (best)
		proc_unready(p, best);
	return best;
}

/* some ready thread could use vCPU cpu */
static int others_ready(struct proc *p, int cpu)
{
	for (size_t at = p->ready_head; at; at = slot(p, at)->next)
		if (may_take(slot(p, at), cpu))
			return 1;
	return 0;
}

/* the earliest time something waits for: a wait's deadline, a timer */
static uint64_t next_event(struct proc *p)
{
	uint64_t next = 0;
	for (size_t i = 0; i < p->nt; i++) {
		const struct proc_thread *t = p->t[i];
		if (t->state == PROC_WAITING && t->wdeadline && (!next || t->wdeadline < next))
			next = t->wdeadline;
	}
	for (int i = 0; i < PROC_TIMERS; i++)
		if (p->timers[i].armed && (!next || p->timers[i].at < next))
			next = p->timers[i].at;
	return next;
}

/* waits whose deadline passed are made again; timers due fire */
static void expire(struct proc *p, uint64_t now)
{
	for (size_t i = 0; i < p->nt; i++) {
		struct proc_thread *t = p->t[i];
		if (t->state == PROC_WAITING && t->wdeadline && t->wdeadline <= now) {
			t->expired = 1;
			t->retry = 1;
			proc_ready(p, t);
		}
	}
	for (int i = 0; i < PROC_TIMERS; i++) {
		struct proc_timer *tm = &p->timers[i];
		if (!tm->armed || tm->at > now)
			continue;
		if (tm->every) {
			/* overruns are not counted: one signal, and the next one period from now */
			tm->at = now + tm->every;
		} else {
			tm->armed = 0;
		}
		if (p->ops->timer)
			p->ops->timer(p->ctx, tm);
	}
}

/* the vCPU lets go of what it holds of its current thread: its FPU state is saved */
static int unload(struct proc *p, int cpu)
{
	struct proc_cpu *c = &p->cpu[cpu];
	struct proc_thread *old = c->cur;
	if (!old)
		return 0;
	if (!old->fpu && !(old->fpu = malloc(VM_FPU_MAX)))
		return -ENOMEM;
	int rc = vm_cpu_get_fpu(p->vm, cpu, old->fpu, &old->fpu_len);
	if (rc)
		return rc;
	if (p->ops->swap)
		p->ops->swap(p->ctx, cpu, old, NULL);
	old->cpu = -1;
	c->cur = NULL;
	return 0;
}

/* vCPU cpu takes t's state, unless it holds it already */
static int load(struct proc *p, int cpu, struct proc_thread *t)
{
	struct proc_cpu *c = &p->cpu[cpu];
	int rc = 0;
	if (c->cur != t) {
		/* a thread last on another vCPU (idle now, or it would not be ready) */
		if (t->cpu >= 0 && (rc = unload(p, t->cpu)))
			return rc;
		if ((rc = unload(p, cpu)))
			return rc;
		if (t->fpu_len && (rc = vm_cpu_set_fpu(p->vm, cpu, t->fpu, t->fpu_len)))
			return rc;
		if ((rc = vm_cpu_set_fs_base(p->vm, cpu, t->fs_base)))
			return rc;
		t->regs_dirty = 1;
		c->cur = t;
		t->cpu = cpu;
		if (p->ops->swap)
			p->ops->swap(p->ctx, cpu, NULL, t);
		p->switches++;
	}
	if (t->regs_dirty) {
		if ((rc = vm_cpu_set_regs(p->vm, cpu, &t->regs)))
			return rc;
		t->regs_dirty = 0;
	}
	return 0;
}

/* when the run about to start must stop: the end of its slice when another thread is ready,
 * the next wait's deadline or timer, whichever comes first (0: only the invocation's deadline) */
static uint64_t run_until(struct proc *p, int cpu, struct proc_thread *t)
{
	uint64_t until = others_ready(p, cpu) ? t->slice_end : 0;
	if (t->poke && (!until || t->poke < until))
		until = t->poke;
	uint64_t next = next_event(p);
	if (next && (!until || next < until))
		until = next;
	/* every entry runs a while: a stop already due would interrupt it before its first
	 * instruction, again and again, while it cannot be taken off (inside the runtime) */
	uint64_t least = base_now_ns() + PROC_MIN_RUN_NS;
	return until && until < least ? least : until;
}

/* the running thread gives its vCPU to a ready one: its slice is over, and it is not inside the
 * in-guest runtime (whose state on this vCPU is the thread's until it leaves) */
static int preempt(struct proc *p, int cpu, struct proc_thread *t, uint64_t now)
{
	return now >= t->slice_end && !proc_in_runtime(t) && others_ready(p, cpu);
}

static struct timespec ts_of(uint64_t ns)
{
	return (struct timespec){(time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL)};
}

/* no thread for this vCPU: wait for one, for the next event, or for the deadline */
static void idle(struct proc *p, int cpu)
{
	uint64_t until = next_event(p);
	if (p->deadline && (!until || p->deadline < until))
		until = p->deadline;
	p->cpu[cpu].idle = 1;
	if (until) {
		struct timespec ts = ts_of(until);
		pthread_cond_timedwait(&p->cv, p->mu, &ts);
	} else {
		pthread_cond_wait(&p->cv, p->mu);
	}
	p->cpu[cpu].idle = 0;
	if (!p->done && p->deadline && base_now_ns() >= p->deadline && p->ops->timeout)
		p->ops->timeout(p->ctx);
}

/* the loop of vCPU cpu, entered and left with the lock held, until the invocation ends */
static void cpu_loop(struct proc *p, int cpu)
{
	struct proc_cpu *c = &p->cpu[cpu];
	struct proc_thread *t = NULL;
	while (!p->done) {
		uint64_t now = base_now_ns(), next = next_event(p);
		if (next && next <= now)
			expire(p, now);
		if (!t) {
			t = take(p, cpu);
			if (!t) {
				idle(p, cpu);
				continue;
			}
			t->state = PROC_RUNNING;
			t->slice_end = now + PROC_SLICE_NS;
		}
		p->cur = t;
		p->cur_cpu = cpu;
		int go = p->ops->enter(p->ctx, t);
		p->cur = NULL;
		if (!go || t->state != PROC_RUNNING || p->done) {
			t = NULL;
			continue;
		}
		int rc = load(p, cpu, t);
		if (rc) {
			struct vm_exit e = {.kind = VM_EXIT_ERROR};
			snprintf(e.msg, sizeof(e.msg), "switching vCPU %d to thread %d: %s", cpu,
				 t->tid, strerror(-rc));
			p->ops->exit(p->ctx, t, &e);
			break;
		}
		uint64_t until = run_until(p, cpu, t);
		c->running = 1;
		pthread_mutex_unlock(p->mu);
		struct vm_exit e;
		uint64_t ran = base_now_ns();
		vm_cpu_run(p->vm, cpu, until, &e);
		ran = base_now_ns() - ran;
		pthread_mutex_lock(p->mu);
		t->cpu_ns += ran;
		c->running = 0;
		vm_cpu_get_regs(p->vm, cpu, &t->regs);
		p->cur = t;
		p->cur_cpu = cpu;
		p->ops->exit(p->ctx, t, &e);
		p->cur = NULL;
		/* out of the in-guest runtime (a call it handed over is the site's once served), a
		 * thread restored inside it (proc_restore) needs its vCPU no more: pinned still, it
		 * jumps the queue there and starves the others */
		if (!proc_in_runtime(t))
			t->pin = -1;
		if (t->state != PROC_RUNNING) { /* it waits, or ended */
			t = NULL;
			continue;
		}
		if (preempt(p, cpu, t, base_now_ns())) {
			proc_ready(p, t);
			t = NULL;
		}
	}
	/* what ran here stays as it is, for a snapshot or the reset: ready, on this vCPU */
	if (t && t->state == PROC_RUNNING)
		proc_ready(p, t);
}

void proc_stop(struct proc *p)
{
	p->done = 1;
	for (int i = 0; i < p->ncpu; i++)
		if (p->cpu[i].running)
			vm_cpu_kick(p->vm, i);
	pthread_cond_broadcast(&p->cv);
}

struct worker_arg {
	struct proc *p;
	int cpu;
};

/* a vCPU past the first: its own host thread takes part in every invocation of the process */
static void *worker(void *arg)
{
	struct worker_arg a = *(struct worker_arg *)arg;
	free(arg);
	struct proc *p = a.p;
	struct proc_cpu *c = &p->cpu[a.cpu];
	uint64_t seen = 0;
	pthread_mutex_lock(p->mu);
	for (;;) {
		while (!p->quit && (!p->active || p->epoch == seen))
			pthread_cond_wait(&p->cv, p->mu);
		if (p->quit)
			break;
		seen = p->epoch;
		c->busy = 1;
		uint64_t deadline = p->deadline;
		pthread_mutex_unlock(p->mu);
		int rc = vm_set_deadline(p->vm, deadline);
		pthread_mutex_lock(p->mu);
		if (!rc)
			cpu_loop(p, a.cpu);
		c->busy = 0;
		pthread_cond_broadcast(&p->cv);
	}
	pthread_mutex_unlock(p->mu);
	return NULL;
}

/* the host threads of vCPUs 1 and up, made once; all signals blocked (the deadline's is taken
 * inside KVM_RUN only, vm_timer.c) */
static void start_workers(struct proc *p)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (int i = 1; i < p->ncpu; i++) {
		struct proc_cpu *c = &p->cpu[i];
		struct worker_arg *a = malloc(sizeof(*a));
		if (c->has_worker || !a) {
			free(a);
			continue;
		}
		*a = (struct worker_arg){p, i};
		if (pthread_create(&c->worker, NULL, worker, a) == 0)
			c->has_worker = 1;
		else
			free(a);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void proc_stop_workers(struct proc *p)
{
	pthread_mutex_lock(p->mu);
	p->quit = 1;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(p->mu);
	for (int i = 1; i < VM_CPUS_MAX; i++)
		if (p->cpu[i].has_worker) {
			pthread_join(p->cpu[i].worker, NULL);
			p->cpu[i].has_worker = 0;
		}
}

/* a thread only a vCPU past the first may run: restored inside the in-guest runtime there */
static int pinned_past_first(struct proc *p)
{
	for (size_t i = 0; i < p->nt; i++)
		if (p->t[i]->state != PROC_FREE && p->t[i]->pin > 0)
			return 1;
	return 0;
}

void proc_spread(struct proc *p)
{
	if (p->ncpu < 2 || p->active || p->done || !p->running)
		return;
	/* one thread needs one vCPU, unless it is pinned to another: a snapshot taken while the
	 * request was read on vCPU 1 by a thread left alone by then hung every invocation */
	if (p->live < 2 && !pinned_past_first(p))
		return;
	start_workers(p);
	p->active = 1;
	p->epoch++;
	pthread_cond_broadcast(&p->cv);
}

void proc_run(struct proc *p, uint64_t deadline)
{
	pthread_mutex_lock(p->mu);
	p->done = 0;
	p->running = 1;
	p->deadline = deadline;
	/* a new process's first thread, which vCPU 0 holds, is ready (a restored process's
	 * threads are in the queue already, vCPU 0's first) */
	struct proc_thread *first = p->cpu[0].cur;
	if (first && first->state == PROC_RUNNING)
		proc_ready(p, first);
	proc_spread(p);
	cpu_loop(p, 0);
	/* every vCPU stops: the workers leave their loops and say so */
	p->done = 1;
	for (int i = 1; i < p->ncpu; i++)
		while (p->cpu[i].busy)
			pthread_cond_wait(&p->cv, p->mu);
	p->active = 0;
	p->running = 0;
	pthread_mutex_unlock(p->mu);
}
