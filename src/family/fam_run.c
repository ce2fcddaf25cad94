/* A child process's life on its host thread: its runs, the programs execve makes of it, its end. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "family/fam.h"
#include "fd/fd.h"

void fam_close_fds(struct sys_state *st)
{
	for (uint64_t fd = 0; st && fd < SYS_FDS; fd++)
		sys_fd_close(st, fd);
}

void fam_drop(struct fam *f, struct vm *vm, struct sys_state *st)
{
	if (st) {
		/* its own lock again (its vCPUs' workers stopped first, under the family's, which
		 * only a process that ran has and whose caller does not hold it): its end may not
		 * take the family's, which the caller may hold */
		proc_unshare(&st->pr);
		sys_free(st);
		free(st);
	}
	if (vm)
		f->ld->vm_free(f->ld_ctx, vm);
}

/* the wait status a run's outcome stands for: an exit, a signal; a machine that failed or ran
 * out of time is killed, as the kernel's OOM killer or a timeout would */
static int wait_status(const struct sys_state *st)
{
	switch (st->outcome) {
	case SYS_EXITED:
		return (st->status & 0xff) << 8;
	case SYS_SIGNALED:
		return st->status & 0x7f;
	default:
		return SIGKILL;
	}
}

struct run_args {
	struct fam *f;
	struct sys_state *st;
};

static void run_once(void *p)
{
	struct run_args *a = p;
	struct sys_state *st = a->st;
	struct sys_state *root = a->f->root;
	uint64_t deadline = vm_deadline(root->vm);
	if (vm_set_deadline(st->vm, deadline))
		sys_stop(st, SYS_ERROR, 0, "cannot arm the deadline timer");
	else if (st->rt->begin(st))
		sys_stop(st, SYS_ERROR, 0, "cannot prepare the in-guest runtime");
	else
		sys_run(st);
	vm_set_deadline(st->vm, 0);
}

void fam_run_state(struct fam *f, struct sys_state *st)
{
	struct run_args a = {f, st};
	vm_call(st->vm, run_once, &a);
}

void fam_add_stats(struct fam *f, const struct sys_state *st)
{
	struct sys_stats *to = &f->root->stats;
	const struct sys_stats *from = &st->stats;
	for (int i = sys_stats_next(from, 0); i >= 0; i = sys_stats_next(from, i + 1)) {
		to->served[i] += from->served[i];
		to->denied[i] += from->denied[i];
		to->in_guest[i] += from->in_guest[i];
		sys_stats_mark(to, (size_t)i);
	}
	for (int k = 0; k < VM_EXIT_KINDS; k++)
		to->exits[k] += from->exits[k];
}

static void *child_main(void *p)
{
	struct fam_proc *c = p;
	struct fam *f = c->st->kin_ctx;
	for (;;) {
		fam_run_state(f, c->st);
		pthread_mutex_lock(fam_lock(f));
		struct vm *old_vm = c->vm;
		struct sys_state *old_st = c->st;
		fam_add_stats(f, old_st);
		/* an execve's program follows on, unless the invocation ends meanwhile */
		int go = old_st->outcome == SYS_EXECED && c->next_st && !f->ending;
		if (!go) {
			fam_close_fds(c->next_st);
			fam_drop(f, c->next_vm, c->next_st); /* made, never run */
			c->next_vm = NULL;
			c->next_st = NULL;
			/* its descriptors close now, under the lock: a pipe's other end sees it */
			fam_close_fds(old_st);
			fam_ended(f, old_st, wait_status(old_st));
			c->st = NULL;
			c->vm = NULL;
		} else {
			c->vm = c->next_vm;
			c->st = c->next_st;
			c->next_vm = NULL;
			c->next_st = NULL;
			fam_close_fds(old_st);
		}
		pthread_mutex_unlock(fam_lock(f));
		fam_drop(f, old_vm, old_st);
		if (!go)
			break;
	}
	pthread_mutex_lock(fam_lock(f));
	c->has_host = 2; /* ended: fam_finish joins it */
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(fam_lock(f));
	return NULL;
}

void fam_sweep(struct fam *f)
{
	for (struct fam_proc **pp = &f->procs; *pp;) {
		struct fam_proc *c = *pp;
		if (!c->reaped || c->has_host == 1) {
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		if (c->has_host)
			pthread_join(c->host, NULL);
		free(c);
	}
}

int fam_start(struct fam *f, struct fam_proc *c)
{
	(void)f;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old); /* the deadline's signal is taken in runs only */
	int rc = pthread_create(&c->host, NULL, child_main, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		return -EAGAIN;
	c->has_host = 1;
	return 0;
}
