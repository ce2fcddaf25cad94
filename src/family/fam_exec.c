/* execve: the process goes on as another program, in a clean machine of its own. */
#include <errno.h>
#include <stdlib.h>

#include "family/fam.h"

/* the tid of st's one thread is the process's pid, and its signal mask and pending signals
 * the caller's (execve keeps them), here and in the in-guest runtime */
static void own_pid(struct sys_state *st, struct sys_state *from)
{
	size_t i = 0;
	struct proc_thread *t = proc_each(&st->pr, &i), *caller = sys_cur(from);
	if (!t)
		return;
	t->tid = st->pid;
	if (caller) {
		t->sigmask = sys_sigmask(from, caller);
		t->pending = caller->pending;
		sys_thread_inherit(t, caller, 1);
		st->pr.pending = from->pr.pending;
	}
	st->rt->swap(st, 0, NULL, t);
}

long fam_exec(void *ctx, struct sys_state *st, const char *path, char *const *argv,
	      char *const *envp)
{
	struct fam *f = ctx;
	if (f->ending)
		return -EAGAIN;
	if (fam_in_init(f, st))
		return -EAGAIN;
	struct fam_proc *c = NULL;
	if (st != f->cur) {
		for (c = f->procs; c && c->st != st; c = c->next)
			;
		if (!c)
			return -EINVAL; /* a state the family does not know: never */
	}
	char err[EMBER_ERR_MAX];
	struct vm *vm;
	if (f->ld->vm_new(f->ld_ctx, 1, &vm, err, sizeof(err)))
		return -ENOMEM;
	struct sys_state *ns = calloc(1, sizeof(*ns));
	if (!ns) {
		f->ld->vm_free(f->ld_ctx, vm);
		return -ENOMEM;
	}
	int rc = f->ld->exec(f->ld_ctx, st, path, argv, envp, vm, ns);
	if (rc) {
		int made = ns->vm != NULL; /* sys_init ran: fam_drop frees it whole */
		fam_drop(f, vm, made ? ns : NULL);
		if (!made)
			free(ns);
		return rc;
	}
	sys_in_share(st); /* the new program reads the request where this one left it */
	if (!f->shared) {
		f->next_tid = f->root->pr.next_tid > 2 ? f->root->pr.next_tid : 2;
		proc_share(&f->root->pr, NULL, &f->next_tid);
		f->shared = 1;
	}
	proc_share(&ns->pr, fam_lock(f), &f->next_tid);
	if ((rc = sys_inherit(ns, st, 1))) {
		fam_close_fds(ns);
		fam_drop(f, vm, ns);
		return rc;
	}
	own_pid(ns, st);
	if (c) {
		c->next_vm = vm;
		c->next_st = ns;
	} else {
		f->next_vm = vm;
		f->next_st = ns;
	}
	sys_stop(st, SYS_EXECED, 0, "became %s (execve)", path);
	return 0;
}
