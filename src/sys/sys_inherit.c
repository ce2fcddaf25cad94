/* What a process hands on: to the child fork makes, and to the program execve makes of it. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "fd/fd.h"
#include "fs/fs_tmp.h"

/* the descriptors (those without FD_CLOEXEC, for exec): naming the same objects, in the
 * table every process of the invocation shares */
static int inherit_fds(struct sys_state *to, struct sys_state *from, int exec)
{
	for (size_t fd = 0; fd < SYS_FDS; fd++)
		if (to->fd[fd].obj)
			sys_fd_close(to, fd); /* what sys_init opened: the parent's go there */
	sys_fd_free(to);
	to->obj = from->obj;
	to->pipe_buf = from->pipe_buf;
	for (size_t fd = 0; fd < SYS_FDS; fd++) {
		const struct sys_fd *d = &from->fd[fd];
		if (!d->obj || (exec && d->cloexec))
			continue;
		struct sys_obj *o = &from->obj[d->obj - 1];
		/* an epoll's list names the parent's descriptors: a program that execs has none
		 * (Linux's keeps watching the parent's files, which this one cannot reach) */
		if (exec && o->kind == SYS_KIND_EPOLL)
			continue;
		/* a file the in-guest runtime reads for the parent gives its position back first */
		const struct sys_fd_ops *ops = sys_obj_ops(o);
		if (ops && ops->share)
			ops->share(from, fd, o);
		to->fd[fd] = *d;
		o->refs++;
	}
	to->std_changed = 1;
	if (exec || !from->nepi)
		return 0;
	to->epi = malloc(from->nepi * sizeof(*to->epi));
	if (!to->epi)
		return -ENOMEM;
	memcpy(to->epi, from->epi, from->nepi * sizeof(*to->epi));
	to->nepi = to->epi_cap = from->nepi;
	return 0;
}

/* the memory map and everything about it, as fork copies memory */
static int inherit_memory(struct sys_state *to, const struct sys_state *from)
{
	to->vmas = malloc((from->nvma ? from->nvma : 1) * sizeof(*to->vmas));
	to->far = malloc((from->nfar ? from->nfar : 1) * sizeof(*to->far));
	if (!to->vmas || !to->far)
		return -ENOMEM;
	memcpy(to->vmas, from->vmas, from->nvma * sizeof(*to->vmas));
	if (from->nfar)
		memcpy(to->far, from->far, from->nfar * sizeof(*to->far));
	to->nvma = to->vma_cap = from->nvma;
	to->nfar = to->far_cap = from->nfar;
	to->brk_cur = from->brk_cur;
	memcpy(to->fs_win, from->fs_win, sizeof(to->fs_win));
	memcpy(to->wr, from->wr, sizeof(to->wr));
	to->nwr = from->nwr;
	return sys_shmem_inherit(to, from); /* the same pages, not a copy (fam_fork.c) */
}

void sys_sig_default(struct sys_state *st)
{
	for (int s = 1; s <= 64; s++)
		if (st->sig[s].handler != (uint64_t)(uintptr_t)SIG_IGN)
			memset(&st->sig[s], 0, sizeof(st->sig[s]));
}

int sys_inherit(struct sys_state *to, struct sys_state *from, int exec)
{
	int rc;
	if ((rc = inherit_fds(to, from, exec)) || (!exec && (rc = inherit_memory(to, from))))
		return rc;
	to->in = from->in, to->in_len = from->in_len, to->in_pos = from->in_pos;
	to->in_shared = 1; /* sys_in_share(from) made it so before */
	to->meta = from->meta, to->meta_len = from->meta_len, to->meta_pos = from->meta_pos;
	to->code = from->code, to->code_len = from->code_len, to->code_pos = from->code_pos;
	to->out_limit = from->out_limit;
	to->bundle = from->bundle;
	to->file_sites = from->file_sites, to->file_sites_ctx = from->file_sites_ctx;
	to->cwd = from->cwd;
	to->umask = from->umask;
	/* setpriority's: a fork's child and an execve's program keep it, as Linux's */
	to->nice = from->nice;
	if (!exec) /* the new program's: the loader set them */
		to->exe = from->exe, to->exe_len = from->exe_len, to->exe_path = from->exe_path;
	/* one /tmp for the whole invocation: the first process owns it */
	struct sys_state *root = from->out_to ? from->out_to : from;
	to->tmp = sys_tmp_tree(root);
	if (!to->tmp)
		return -ENOMEM;
	to->tmp_borrowed = 1;
	memcpy(to->sig, from->sig, sizeof(to->sig));
	to->rlim_set = from->rlim_set;
	memcpy(to->rlim, from->rlim, sizeof(to->rlim));
	if (exec) /* a handler is code the new program has not: its signal goes back to default */
		sys_sig_default(to);
	/* setitimer's and alarm's timers go on in the program execve runs, as Linux's (not
	 * timer_create's); a fork's child starts with none */
	if (exec)
		memcpy(to->pr.timers, from->pr.timers, SYS_ITIMERS * sizeof(to->pr.timers[0]));
	to->pid = from->pid, to->ppid = from->ppid, to->pgid = from->pgid, to->sid = from->sid;
	to->kin = from->kin, to->kin_ctx = from->kin_ctx;
	to->out_to = root;
	to->start_ns = from->start_ns;
	/* a fork's child may dump as its parent may; an execve's program may, and stays a
	 * subreaper if it was */
	to->undumpable = exec ? 0 : from->undumpable;
	to->subreaper = exec ? from->subreaper : 0;
	to->children_cpu = exec ? from->children_cpu : 0;
	to->discarded = NULL;
	to->merge = NULL;
	return 0;
}
