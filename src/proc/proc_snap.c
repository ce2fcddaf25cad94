/* A process's threads in a snapshot: saved whole, and put back, every later thread gone. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proc/proc_impl.h"

int proc_save(struct proc *p, struct proc_saved *out,
	      uint64_t (*mask)(void *ctx, struct proc_thread *t), void *ctx)
{
	memset(out, 0, sizeof(*out));
	out->t = calloc(p->live ? (size_t)p->live : 1, sizeof(*out->t));
	if (!out->t)
		return -ENOMEM;
	uint64_t now = base_now_ns();
	size_t i = 0;
	for (struct proc_thread *t; (t = proc_each(p, &i));) {
		struct proc_saved_thread *s = &out->t[out->nt++];
		s->tid = t->tid;
		s->cpu = t->cpu;
		/* one stopped inside the in-guest runtime goes on from there on the same vCPU */
		s->pin = t->cpu >= 0 && proc_in_runtime(t) ? t->cpu : t->pin;
		s->regs = t->regs;
		if (t->state == PROC_WAITING || (t->state == PROC_READY && t->retry)) {
			/* its call is made again when it runs: from the site, number in rax. So is
			 * the call of one woken (or whose wait ended) that has not run since: the
			 * snapshot keeps no retry, and its registers still hold the call, not its
			 * result (rax the number: a futex that returned 202) */
			s->regs.rip -= EMBER_HC_LEN;
			s->regs.rax = t->nr;
		}
		s->fs_base = t->fs_base;
		s->sigmask = mask(ctx, t);
		s->pending = t->pending;
		s->clear_tid = t->clear_tid;
		memcpy(s->altstack, t->altstack, sizeof(s->altstack));
		if (t->cpu == 0)
			continue; /* the caller keeps vCPU 0's FPU state */
		size_t len = 0;
		int rc = proc_fpu_of(p, t, s->fpu, &len);
		if (rc && rc != -ENODATA) {
			proc_saved_free(out);
			return rc;
		}
		s->fpu_len = rc ? 0 : len;
	}
	out->next_tid = p->next_tid;
	out->pending = p->pending;
	for (int k = 0; k < PROC_TIMERS; k++) {
		out->timers[k] = p->timers[k];
		if (p->timers[k].armed)
			out->timers[k].at = p->timers[k].at > now ? p->timers[k].at - now : 1;
	}
	return 0;
}

int proc_restore(struct proc *p, const struct proc_saved *s)
{
	for (size_t i = 0; i < p->nt; i++) {
		struct proc_thread *t = p->t[i];
		t->state = PROC_FREE;
		t->cpu = -1;
		t->next = 0;
	}
	for (int i = 0; i < VM_CPUS_MAX; i++)
		p->cpu[i].cur = NULL;
	p->ready_head = p->ready_tail = 0;
	p->live = 0;
	p->cpu_gone = 0; /* an invocation's CPU time starts at 0, as a process's */
	p->next_tid = 1;
	struct proc_thread *first = NULL;
	for (size_t i = 0; i < s->nt; i++) {
		const struct proc_saved_thread *x = &s->t[i];
		struct proc_thread *t = proc_spawn(p, &x->regs, x->fs_base, x->sigmask);
		if (!t)
			return -ENOMEM;
		t->tid = x->tid;
		t->pin = x->pin;
		t->pending = x->pending;
		t->clear_tid = x->clear_tid;
		memcpy(t->altstack, x->altstack, sizeof(t->altstack));
		if (x->cpu == 0) {
			/* vCPU 0 gets its FPU state from the caller's snapshot, and its registers
			 * too, but the saved ones go in before it runs: they are the same, but for
			 * a wait proc_save rewound, which the vCPU holds past its call (the thread
			 * would take the number of its call for its result) */
			t->cpu = 0;
			p->cpu[0].cur = t;
			t->regs_dirty = 1;
			first = t;
		} else if (x->fpu_len && proc_set_fpu(p, t, x->fpu, x->fpu_len)) {
			return -ENOMEM;
		}
	}
	/* vCPU 0's thread first, then the others in their order */
	if (first)
		proc_ready(p, first);
	for (size_t i = 0; i < p->nt; i++)
		if (p->t[i]->state == PROC_WAITING) /* proc_spawn's: not ready yet */
			proc_ready(p, p->t[i]);
	p->next_tid = s->next_tid > p->next_tid ? s->next_tid : p->next_tid;
	p->pending = s->pending;
	uint64_t now = base_now_ns();
	for (int k = 0; k < PROC_TIMERS; k++) {
		p->timers[k] = s->timers[k];
		if (p->timers[k].armed)
			p->timers[k].at = now + s->timers[k].at;
	}
	return 0;
}

void proc_saved_free(struct proc_saved *s)
{
	free(s->t);
	memset(s, 0, sizeof(*s));
}
