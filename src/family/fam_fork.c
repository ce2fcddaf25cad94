/* fork: a child virtine made from its parent's memory and state, as a restore makes one. */
#include <errno.h>
#include <linux/sched.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "family/fam.h"
#include "proc/proc_impl.h"

struct fork_args {
	struct fam *f;
	struct sys_state *parent, *child;
	struct proc_thread *t;
	uint64_t sp, flags, ctid;
	const struct snap *base; /* beneath mem (its pages not written since), or NULL */
	const struct snap *mem;
	/* the parent's thread's FPU state, read on the parent's machine thread */
	uint8_t *fpu;
	size_t fpu_len;
	int rc;
};

/* the child's thread: the parent's at its call, returning 0, on vCPU cpu as the parent's was
 * when it stopped inside the in-guest runtime (whose state there is the thread's) */
static int child_thread(struct fork_args *a, int cpu)
{
	struct sys_state *c = a->child;
	struct proc_thread *t = a->t;
	struct proc_saved s = {0};
	struct proc_saved_thread *x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->tid = c->pid;
	x->cpu = cpu;
	x->pin = cpu ? cpu : -1;
	x->regs = t->regs;
	x->regs.rax = 0;
	if (a->sp)
		x->regs.rsp = a->sp;
	x->fs_base = t->fs_base;
	x->sigmask = sys_sigmask(a->parent, t);
	memcpy(x->altstack, t->altstack, sizeof(x->altstack));
	if (a->flags & CLONE_CHILD_CLEARTID)
		x->clear_tid = a->ctid;
	memcpy(x->fpu, a->fpu, a->fpu_len);
	x->fpu_len = a->fpu_len;
	s.t = x;
	s.nt = 1;
	s.next_tid = c->pid + 1;
	int rc = proc_restore(&c->pr, &s);
	struct proc_thread *n = rc ? NULL : proc_find(&c->pr, c->pid);
	if (!rc && n && cpu == 0) {
		/* vCPU 0 holds it: its registers, FS base and FPU state go there */
		if ((rc = vm_cpu_set_regs(c->vm, 0, &x->regs)) ||
		    (rc = vm_cpu_set_fs_base(c->vm, 0, x->fs_base)) ||
		    (x->fpu_len && (rc = vm_cpu_set_fpu(c->vm, 0, x->fpu, x->fpu_len))))
			goto out;
		n->regs_dirty = 0;
	}
	if (!rc && n)
		sys_thread_inherit(n, t, 0);
	if (!rc && n)
		c->rt->swap(c, n->cpu >= 0 ? n->cpu : 0, NULL, n); /* the runtime's tid and mask */
out:
	free(x);
	return rc;
}

/* on the child's machine thread: its memory, protections and thread */
static void build(void *p)
{
	struct fork_args *a = p;
	struct sys_state *c = a->child;
	int rc = 0;
	/* the base in one mapping where it has an image (KVM, upm), not a mapping per run of it
	 * (~40 runs, 3 system calls each, for a small program); its pages outside the child's
	 * map are out of the program's reach (no PTE), and a mapping made there later is zeroed
	 * as in any image. The memfd stays: the machine is emptied for another later. */
	int image = a->base && !snap_image_map(a->base, c->vm, 1);
	for (size_t i = 0; i < c->nvma && !rc; i++) {
		const struct sys_vma *v = &c->vmas[i];
		if (a->base && !image)
			rc = snap_put_memory(a->base, c->vm, v->start, v->end, SNAP_SHARE_UPM);
		if (!rc)
			rc = snap_put_memory(a->mem, c->vm, v->start, v->end, SNAP_SHARE_UPM);
		if (!rc)
			rc = vm_protect(c->vm, v->start, v->end - v->start, v->prot);
	}
	if (!rc) /* shared memory: the parent's pages themselves over the copy */
		rc = sys_shmem_remap(c);
	int cpu = a->t->cpu > 0 && proc_in_runtime(a->t) ? a->t->cpu : 0;
	if (!rc)
		rc = child_thread(a, cpu);
	/* the child's tid in its own memory, before it runs: a write that faults fails the fork */
	const int tid = c->pid;
	if (!rc && (a->flags & CLONE_CHILD_SETTID) && sys_put(c, a->ctid, &tid, sizeof(tid)))
		rc = -EFAULT;
	a->rc = rc;
}

/* the in-guest runtime's lock as the child must find it: free, unless the forking thread holds
 * it (another vCPU's hold would never be let go in the child) */
static void free_rt_lock(struct sys_state *c, const struct proc_thread *t)
{
	struct ember_rt_ctl *ctl = vm_guest(c->vm, EMBER_RT_CTL, sizeof(*ctl));
	if (!ctl || !c->proc.guest)
		return;
	uint64_t owner = __atomic_load_n(&ctl->lock, __ATOMIC_RELAXED);
	if (owner && owner != (uint64_t)t->cpu + 1)
		__atomic_store_n(&ctl->lock, 0, __ATOMIC_RELAXED);
}

long fam_fork(void *ctx, struct sys_state *st, struct proc_thread *t, uint64_t sp, uint64_t flags,
	      uint64_t ctid)
{
	struct fam *f = ctx;
	if (f->ending)
		return -EAGAIN;
	if (fam_in_init(f, st))
		return -EAGAIN;
	if (f->nprocs + 1 >= st->proc.max_pids)
		return -EAGAIN; /* --pids: the first process counts too */
	if (!f->shared) {	/* one lock and one tid space from the first fork on */
		f->next_tid = f->root->pr.next_tid > 2 ? f->root->pr.next_tid : 2;
		proc_share(&f->root->pr, NULL, &f->next_tid);
		f->shared = 1;
	}
	fam_sweep(f);
	sys_in_share(st); /* the request is read by both from now on, at one position */
	struct fam_proc *c = calloc(1, sizeof(*c));
	struct sys_state *cs = calloc(1, sizeof(*cs));
	struct snap mem;
	memset(&mem, 0, sizeof(mem));
	long rc = -ENOMEM;
	int cpu = t->cpu > 0 && proc_in_runtime(t) ? t->cpu : 0;
	char err[EMBER_ERR_MAX];
	if (!c || !cs)
		goto fail;
	if (f->ld->vm_new(f->ld_ctx, cpu + 1, &c->vm, err, sizeof(err))) {
		rc = -EAGAIN; /* no memory for another machine: fork's answer to its limits */
		goto fail;
	}
	struct sys_process proc = st->proc;
	proc.cpus = cpu + 1;
	if (sys_init(cs, c->vm, &proc))
		goto fail_vm;
	c->st = cs;
	proc_share(&cs->pr, fam_lock(f), &f->next_tid);
	c->pid = f->next_tid++;
	if (sys_inherit(cs, st, 0))
		goto fail_st;
	if (flags & CLONE_CLEAR_SIGHAND)
		sys_sig_default(cs);
	cs->pid = c->pid;
	cs->ppid = c->ppid = st->pid;
	c->thread = t->tid;
	/* a warm first process on KVM: the function's snapshot beneath, only what it changed
	 * copied; else every page that holds data */
	const struct snap *base = st == f->root && vm_backend_of(st->vm) == VM_BACKEND_KVM
				      ? f->ld->base(f->ld_ctx, st)
				      : NULL;
	if ((rc = f->ld->settle(f->ld_ctx, st)) ||
	    (rc = base ? snap_capture_changed(&mem, st->vm, st)
		       : snap_capture_memory(&mem, st->vm, st)))
		goto fail_st;
	struct fork_args a = {f, st, cs, t, sp, flags, ctid, base, &mem, NULL, 0, 0};
	if (!(a.fpu = malloc(VM_FPU_MAX)) || proc_fpu_of(&st->pr, t, a.fpu, &a.fpu_len))
		a.fpu_len = 0; /* a thread that never ran: the child starts fresh */
	vm_call(c->vm, build, &a);
	free(a.fpu);
	snap_free(&mem);
	if ((rc = a.rc))
		goto fail_st;
	free_rt_lock(cs, t);
	c->next = f->procs;
	f->procs = c;
	f->nprocs++;
	if ((rc = fam_start(f, c))) {
		f->procs = c->next;
		f->nprocs--;
		goto fail_st;
	}
	return c->pid;
fail_st:
	c->st = NULL;
	/* its descriptors are closed under the lock (its pipes' other ends see it), the rest of it
	 * freed without: sys_free takes the lock it shares */
	fam_close_fds(cs);
	fam_drop(f, c->vm, cs);
	free(c);
	return rc < 0 ? rc : -ENOMEM;
fail_vm:
	f->ld->vm_free(f->ld_ctx, c->vm);
fail:
	free(cs);
	free(c);
	return rc;
}
