/* A process's threads: their slots, waits and wake-ups, signals pending, and their FPU state. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proc/proc_impl.h"

int proc_init(struct proc *p, struct vm *vm, int ncpu, int max_threads, const struct proc_ops *ops,
	      void *ctx)
{
	memset(p, 0, sizeof(*p));
	p->vm = vm;
	p->ncpu = ncpu < 1 ? 1 : ncpu;
	p->max_threads = max_threads < 1 ? PROC_THREADS_DEFAULT : max_threads;
	p->ops = ops;
	p->ctx = ctx;
	p->next_tid = 1;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&p->own, NULL);
	p->mu = &p->own;
	p->tids = &p->next_tid;
	pthread_cond_init(&p->cv, &ca);
	pthread_condattr_destroy(&ca);
	struct vm_regs none;
	memset(&none, 0, sizeof(none));
	struct proc_thread *t = proc_spawn(p, &none, 0, 0);
	if (!t)
		return -ENOMEM;
	/* the first thread is on vCPU 0, which holds its state, and runs when the process does */
	t->state = PROC_RUNNING;
	t->cpu = 0;
	p->cpu[0].cur = t;
	return 0;
}

void proc_free(struct proc *p)
{
	if (!p->mu)
		return; /* never made (a virtine given up before its state was) */
	proc_stop_workers(p);
	for (size_t i = 0; i < p->nt; i++) {
		if (p->t[i])
			free(p->t[i]->fpu);
		free(p->t[i]);
	}
	free(p->t);
	p->t = NULL;
	p->nt = p->cap = 0;
	pthread_mutex_destroy(&p->own);
	pthread_cond_destroy(&p->cv);
}

void proc_share(struct proc *p, pthread_mutex_t *mu, int *tids)
{
	p->mu = mu ? mu : &p->own;
	p->tids = tids ? tids : &p->next_tid;
}

void proc_unshare(struct proc *p)
{
	for (int i = 1; i < VM_CPUS_MAX; i++)
		if (p->cpu[i].has_worker) {
			proc_stop_workers(p);
			break;
		}
	proc_share(p, NULL, NULL);
}

int proc_threads(const struct proc *p)
{
	return p->live;
}

/* a free slot, made if need be: its index, or -1 */
static long free_slot(struct proc *p)
{
	for (size_t i = 0; i < p->nt; i++)
		if (p->t[i]->state == PROC_FREE && p->t[i]->cpu < 0)
			return (long)i;
	if (p->nt == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 4;
		struct proc_thread **t = realloc(p->t, cap * sizeof(*t));
		if (!t)
			return -1;
		p->t = t;
		p->cap = cap;
	}
	struct proc_thread *t = calloc(1, sizeof(*t));
	if (!t)
		return -1;
	t->cpu = -1;
	p->t[p->nt] = t;
	return (long)p->nt++;
}

struct proc_thread *proc_spawn(struct proc *p, const struct vm_regs *regs, uint64_t fs_base,
			       uint64_t sigmask)
{
	if (p->live >= p->max_threads)
		return NULL;
	long i = free_slot(p);
	if (i < 0)
		return NULL;
	struct proc_thread *t = p->t[i];
	uint8_t *fpu = t->fpu;
	memset(t, 0, sizeof(*t));
	t->fpu = fpu;
	t->tid = (*p->tids)++;
	t->cpu = t->pin = -1;
	t->regs = *regs;
	t->fs_base = fs_base;
	t->sigmask = sigmask;
	t->state = PROC_WAITING; /* not ready until the caller says so (proc_ready) */
	p->live++;
	return t;
}

void proc_exit_thread(struct proc *p, struct proc_thread *t)
{
	if (t->state == PROC_FREE)
		return;
	if (t->state == PROC_READY)
		proc_unready(p, t);
	t->state = PROC_FREE;
	t->pending = 0;
	p->live--;
	p->cpu_gone += t->cpu_ns;
	/* its vCPU holds nothing of anyone now: the next thread there is loaded whole */
	if (t->cpu >= 0) {
		if (p->ops->swap)
			p->ops->swap(p->ctx, t->cpu, t, NULL);
		p->cpu[t->cpu].cur = NULL;
		t->cpu = -1;
	}
}

uint64_t proc_cpu_ns(struct proc *p)
{
	uint64_t ns = p->cpu_gone;
	for (size_t i = 0; i < p->nt; i++)
		if (p->t[i]->state != PROC_FREE)
			ns += p->t[i]->cpu_ns;
	return ns;
}

struct proc_thread *proc_find(struct proc *p, int tid)
{
	for (size_t i = 0; i < p->nt; i++)
		if (p->t[i]->state != PROC_FREE && p->t[i]->tid == tid)
			return p->t[i];
	return NULL;
}

struct proc_thread *proc_each(struct proc *p, size_t *i)
{
	while (*i < p->nt) {
		struct proc_thread *t = p->t[(*i)++];
		if (t->state != PROC_FREE)
			return t;
	}
	return NULL;
}

int proc_fpu_of(struct proc *p, struct proc_thread *t, uint8_t *buf, size_t *len)
{
	if (t->cpu >= 0)
		return vm_cpu_get_fpu(p->vm, t->cpu, buf, len);
	if (!t->fpu_len)
		return -ENODATA;
	memcpy(buf, t->fpu, t->fpu_len);
	*len = t->fpu_len;
	return 0;
}

int proc_set_fpu(struct proc *p, struct proc_thread *t, const uint8_t *buf, size_t len)
{
	if (len > VM_FPU_MAX)
		return -EINVAL;
	if (t->cpu >= 0)
		return vm_cpu_set_fpu(p->vm, t->cpu, buf, len);
	if (!t->fpu && !(t->fpu = malloc(VM_FPU_MAX)))
		return -ENOMEM;
	memcpy(t->fpu, buf, len);
	t->fpu_len = len;
	return 0;
}

int proc_set_fs(struct proc *p, struct proc_thread *t, uint64_t base)
{
	t->fs_base = base;
	return t->cpu >= 0 ? vm_cpu_set_fs_base(p->vm, t->cpu, base) : 0;
}

void proc_wait(struct proc *p, struct proc_thread *t, uint64_t key, uint32_t bits,
	       uint64_t deadline)
{
	(void)p;
	t->state = PROC_WAITING;
	t->wkey = key;
	t->wbits = bits;
	t->wdeadline = deadline;
	t->woken = t->expired = 0;
}

/* t's call is made again before it runs: woken, at its deadline, or for a signal */
static void rouse(struct proc *p, struct proc_thread *t)
{
	t->retry = 1;
	proc_ready(p, t);
}

void proc_rouse(struct proc *p, struct proc_thread *t)
{
	if (t->state == PROC_WAITING)
		rouse(p, t);
}

/* t waits on key, or was roused (by a signal, its deadline) and has not run since: it still
 * waits, as on Linux until it runs: a wake counts it and its call returns woken, the signal's
 * handler after it (made again, the call waited once more: the wake was lost) */
static int queued(const struct proc_thread *t, uint64_t key, uint32_t bits)
{
	int waits = t->state == PROC_WAITING || (t->state == PROC_READY && t->retry && !t->woken);
	return waits && t->wkey == key && (t->wbits & bits);
}

struct proc_thread *proc_waiter(struct proc *p, uint64_t key, struct proc_thread *after)
{
	size_t i = 0;
	if (after)
		while (i < p->nt && p->t[i++] != after)
			;
	for (; i < p->nt; i++)
		if (queued(p->t[i], key, ~0u))
			return p->t[i];
	return NULL;
}

void proc_wake_thread(struct proc *p, struct proc_thread *t)
{
	t->woken = 1;
	if (t->state == PROC_WAITING)
		rouse(p, t);
}

int proc_wake(struct proc *p, uint64_t key, uint32_t bits, int n)
{
	int woken = 0;
	/* in slot order, which is the order of their tids, not of their waits (a FIFO per key
	 * would be fairer; futex guarantees no order) */
	for (size_t i = 0; i < p->nt && woken < n; i++) {
		if (!queued(p->t[i], key, bits))
			continue;
		proc_wake_thread(p, p->t[i]);
		woken++;
	}
	return woken;
}

int proc_requeue(struct proc *p, uint64_t key, uint64_t key2, int n, int m, int *moved)
{
	int woken = proc_wake(p, key, ~0u, n);
	*moved = 0;
	for (size_t i = 0; i < p->nt && *moved < m; i++) {
		struct proc_thread *t = p->t[i];
		if (t->state == PROC_WAITING && t->wkey == key) {
			t->wkey = key2;
			(*moved)++;
		}
	}
	return woken + *moved;
}

void proc_signal(struct proc *p, struct proc_thread *t, int sig)
{
	uint64_t bit = 1ULL << (sig - 1);
	if (t)
		t->pending |= bit;
	else
		p->pending |= bit;
	/* every thread that may take it looks at its signals before it runs again: those that
	 * wait make their call again (the layer above decides whether it is interrupted), those
	 * on a vCPU are kicked off it */
	for (size_t i = 0; i < p->nt; i++) {
		struct proc_thread *u = p->t[i];
		if (t && u != t)
			continue;
		if (u->state == PROC_WAITING)
			rouse(p, u);
		else if (u->state == PROC_RUNNING && u->cpu >= 0 && p->cpu[u->cpu].running)
			vm_cpu_kick(p->vm, u->cpu);
	}
}
