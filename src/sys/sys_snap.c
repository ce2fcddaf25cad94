/* Saving and restoring the emulation state that a snapshot holds beside memory and registers. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fd/fd.h"
#include "fs/fs_tmp.h"

static int copy_buf(struct sys_buf *dst, const struct sys_buf *src)
{
	dst->len = 0;
	if (!src->len)
		return 0;
	if (dst->cap < src->len) {
		uint8_t *d = realloc(dst->data, src->len);
		if (!d)
			return -ENOMEM;
		dst->data = d;
		dst->cap = src->len;
	}
	memcpy(dst->data, src->data, src->len);
	dst->len = src->len;
	return 0;
}

static uint64_t mask_of(void *ctx, struct proc_thread *t)
{
	return sys_sigmask(ctx, t);
}

int sys_save(const struct sys_state *cst, struct sys_saved *out)
{
	/* the threads' masks may be in guest memory (the in-guest runtime's), read through the
	 * machine; nothing else of st changes */
	struct sys_state *st = (struct sys_state *)cst;
	memset(out, 0, sizeof(*out));
	if (proc_save(&st->pr, &out->threads, mask_of, st) || sys_fd_save(st, out))
		return -ENOMEM;
	for (size_t i = 0; i < st->nshm; i++) /* the file as the mappings have it */
		sys_shm_flush(st, st->shm[i].node);
	if (copy_buf(&out->out, &st->out) || copy_buf(&out->log, &st->log) ||
	    sys_tmp_save(st, &out->tmp))
		return -ENOMEM;
	if (st->nshm && !(out->shm = malloc(st->nshm * sizeof(*out->shm))))
		return -ENOMEM;
	if (st->nshm)
		memcpy(out->shm, st->shm, st->nshm * sizeof(*out->shm));
	out->nshm = st->nshm;
	out->vmas = malloc((st->nvma ? st->nvma : 1) * sizeof(*out->vmas));
	if (!out->vmas)
		return -ENOMEM;
	memcpy(out->vmas, st->vmas, st->nvma * sizeof(*out->vmas));
	out->nvma = st->nvma;
	out->far = malloc((st->nfar ? st->nfar : 1) * sizeof(*out->far));
	if (!out->far)
		return -ENOMEM;
	if (st->nfar)
		memcpy(out->far, st->far, st->nfar * sizeof(*out->far));
	out->nfar = st->nfar;
	out->brk_cur = st->brk_cur;
	out->code_pos = st->code_pos;
	out->cwd = st->cwd;
	out->umask = st->umask == SYS_UMASK ? 0 : st->umask | 01000;
	memcpy(out->fs_win, st->fs_win, sizeof(out->fs_win));
	memcpy(out->sig, st->sig, sizeof(out->sig));
	out->rlim_set = st->rlim_set;
	memcpy(out->rlim, st->rlim, sizeof(out->rlim));
	out->snap_tid = st->snap_tid;
	out->pending = st->pending;
	return 0;
}

int sys_restore(struct sys_state *st, const struct sys_saved *s)
{
	if (st->vma_cap < s->nvma) {
		struct sys_vma *v = realloc(st->vmas, s->nvma * sizeof(*v));
		if (!v)
			return -ENOMEM;
		st->vmas = v;
		st->vma_cap = s->nvma;
	}
	memcpy(st->vmas, s->vmas, s->nvma * sizeof(*s->vmas));
	st->nvma = s->nvma;
	if (st->far_cap < s->nfar) {
		struct sys_vma *f = realloc(st->far, s->nfar * sizeof(*f));
		if (!f)
			return -ENOMEM;
		st->far = f;
		st->far_cap = s->nfar;
	}
	if (s->nfar)
		memcpy(st->far, s->far, s->nfar * sizeof(*s->far));
	st->nfar = s->nfar;
	st->brk_cur = s->brk_cur;
	st->code_pos = s->code_pos;
	st->cwd = s->cwd;
	if (!sys_rlimit_valid(s->rlim_set, s->rlim))
		return -EINVAL;
	st->rlim_set = s->rlim_set;
	memcpy(st->rlim, s->rlim, sizeof(st->rlim));
	st->umask = s->umask ? s->umask & 0777 : SYS_UMASK;
	int rc = sys_tmp_restore(st, s->tmp); /* before the descriptors that name its files */
	if (rc)
		return rc;
	sys_shmem_free(st); /* the machine's reset gave its shared memory back, private */
	st->nshm = 0;	    /* the snapshot's shared mappings of its /tmp files, those only */
	for (size_t i = 0; i < s->nshm && !rc; i++)
		rc = sys_shm_add(st, s->shm[i].start, s->shm[i].end, s->shm[i].node, s->shm[i].off,
				 s->shm[i].priv);
	if (rc)
		return rc;
	rc = sys_fd_restore(st, s);
	if (rc)
		return rc;
	memcpy(st->fs_win, s->fs_win, sizeof(st->fs_win)); /* 0 from a disk snapshot */
	if (sys_fs_check(st))
		return -EINVAL; /* descriptors of another bundle */
	memcpy(st->sig, s->sig, sizeof(st->sig));
	memset(st->sigcode, 0, sizeof(st->sigcode));
	if (proc_restore(&st->pr, &s->threads))
		return -ENOMEM;
	/* the runtime learns the number of threads at the start of the next run (rt_begin): guest
	 * memory may not be there yet (a cold start installs it after this) */
	st->snap_tid = s->snap_tid;
	st->undumpable = st->subreaper = 0; /* prctl's, as Linux starts a process */
	st->nice = 0;
	st->children_cpu = 0;
	st->nvmkid = 0;
	st->pending = s->pending;
	st->nwr = 0;
	st->snap_armed = 0;
	st->in = NULL;
	st->in_len = st->in_pos = 0;
	st->meta = NULL;
	st->meta_len = st->meta_pos = 0;
	if (copy_buf(&st->out, &s->out) || copy_buf(&st->log, &s->log))
		return -ENOMEM;
	free(st->head.data); /* a response head is an invocation's own, never init's */
	memset(&st->head, 0, sizeof(st->head));
	st->outcome = SYS_RUNNING;
	st->status = 0;
	st->msg[0] = 0;
	memset(&st->fault, 0, sizeof(st->fault));
	sys_stats_clear(&st->stats);
	return 0;
}

void sys_saved_free(struct sys_saved *s)
{
	proc_saved_free(&s->threads);
	sys_tmp_free(s->tmp);
	free(s->shm);
	free(s->far);
	sys_fd_saved_free(s);
	free(s->vmas);
	free(s->out.data);
	free(s->log.data);
	memset(s, 0, sizeof(*s));
}
