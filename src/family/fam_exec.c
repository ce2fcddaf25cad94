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

/* whether a process of f runs the program whose bytes are at exe */
static int runs(const struct fam *f, const uint8_t *exe)
{
	if (f->root->exe == exe || (f->cur && f->cur->exe == exe) ||
	    (f->next_st && f->next_st->exe == exe))
		return 1;
	for (const struct fam_proc *c = f->procs; c; c = c->next)
		if ((c->st && c->st->exe == exe) || (c->next_st && c->next_st->exe == exe))
			return 1;
	return 0;
}

void fam_kept_sweep(struct fam *f, int all)
{
	for (struct fam_kept **k = &f->kept; *k;) {
		struct fam_kept *e = *k;
		if (!all && runs(f, e->exe)) {
			k = &e->next;
			continue;
		}
		*k = e->next;
		f->ld->keep_free(f->ld_ctx, e->keep);
		free(e);
	}
}

long fam_exec(void *ctx, struct sys_state *st, const struct sys_exec_at *at, char *const *argv,
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
	void *keep = NULL;
	struct fam_kept *kept = malloc(sizeof(*kept));
	int rc = kept ? f->ld->exec(f->ld_ctx, st, at, argv, envp, vm, ns, &keep) : -ENOMEM;
	if (!rc && keep) {
		*kept = (struct fam_kept){keep, ns->exe, f->kept};
		f->kept = kept; /* held from here: fam_drop of ns below leaves it to a sweep */
	} else
		free(kept);
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
	fam_kept_sweep(f, 0); /* the programs no process runs any more */
	sys_stop(st, SYS_EXECED, 0, "became %s (execve)", at->path[0] ? at->path : "an open file");
	return 0;
}
