/* The descriptor table in a snapshot: saved compact (the open descriptors, their objects, epoll's
 * entries, the pipes' bytes), checked whole and put back for every invocation. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fd/fd.h"
#include "fs/fs.h"
#include "fs/fs_tmp.h"

/* an object that holds a ring: a pipe's read end, a socket's end */
static int reader(const struct sys_obj *o)
{
	return (o->kind == SYS_KIND_PIPE && (o->flags & O_ACCMODE) == O_RDONLY) ||
	       o->kind == SYS_KIND_SOCK;
}

int sys_fd_save(const struct sys_state *st, struct sys_saved *out)
{
	size_t nfd = 0, nobj = 0, bytes = 0;
	for (size_t i = 0; i < SYS_FDS; i++) {
		nfd += st->fd[i].obj != 0;
		nobj += st->obj[i].kind != SYS_KIND_NONE;
		bytes += reader(&st->obj[i]) ? st->obj[i].len : 0;
	}
	out->fds = malloc((nfd ? nfd : 1) * sizeof(*out->fds));
	out->objs = malloc((nobj ? nobj : 1) * sizeof(*out->objs));
	out->epi = malloc((st->nepi ? st->nepi : 1) * sizeof(*out->epi));
	out->pipes.data = malloc(bytes ? bytes : 1);
	if (!out->fds || !out->objs || !out->epi || !out->pipes.data)
		return -ENOMEM;
	out->pipes.cap = bytes;
	for (uint32_t i = 0; i < SYS_FDS; i++)
		if (st->fd[i].obj)
			out->fds[out->nfd++] =
			    (struct sys_saved_fd){i, st->fd[i].obj - 1, st->fd[i].cloexec};
	uint64_t now = base_now_ns();
	for (uint32_t i = 0; i < SYS_FDS; i++) {
		const struct sys_obj *o = &st->obj[i];
		if (o->kind == SYS_KIND_NONE)
			continue;
		struct sys_saved_obj *s = &out->objs[out->nobj++];
		*s = (struct sys_saved_obj){i, *o};
		if (o->kind == SYS_KIND_TIMER && o->at) /* the time left, as the process's timers */
			s->o.at = o->at > now ? o->at - now : 1;
		if (!reader(o))
			continue;
		/* the bytes from the start of the ring, whatever their place in it */
		for (uint64_t k = 0; k < o->len; k++)
			out->pipes.data[out->pipes.len++] =
			    st->pipe_buf[i][(o->pos + k) % sys_pipe_cap(o)];
		s->o.pos = 0;
	}
	if (st->nepi) /* st->epi may be NULL */
		memcpy(out->epi, st->epi, st->nepi * sizeof(*out->epi));
	out->nepi = st->nepi;
	return 0;
}

/* the saved object of slot, or NULL */
static const struct sys_obj *saved(const struct sys_saved *s, uint64_t slot)
{
	for (size_t i = 0; i < s->nobj; i++)
		if (s->objs[i].slot == slot)
			return &s->objs[i].o;
	return NULL;
}

/* one object as the kinds leave them */
static int obj_ok(const struct sys_saved *s, const struct sys_obj *o)
{
	uint32_t acc = o->flags & O_ACCMODE;
	const struct sys_obj *p;
	switch (o->kind) {
	case SYS_KIND_STD:
		return o->id <= EMBER_META_FD;
	case SYS_KIND_FILE: /* its node: sys_fs_check */
	case SYS_KIND_EPOLL:
		return 1;
	case SYS_KIND_PIPE:
		if (acc != O_RDONLY && acc != O_WRONLY)
			return 0;
		if (o->id && (!(p = saved(s, o->id - 1)) || p->kind != SYS_KIND_PIPE ||
			      (p->flags & O_ACCMODE) == acc || !p->id || saved(s, p->id - 1) != o))
			return 0;
		return acc == O_RDONLY
			   ? (!o->every || (o->every >= 4096 && o->every <= SYS_PIPE_MAX &&
					    !(o->every & (o->every - 1)))) &&
				 o->len <= sys_pipe_cap(o) && o->pos < sys_pipe_cap(o)
			   : !o->len;
	case SYS_KIND_SOCK: /* its peer names it back; its ring as a read end's */
		if (acc != O_RDWR || o->at > 3 || o->every)
			return 0;
		if (o->id && (!(p = saved(s, o->id - 1)) || p->kind != SYS_KIND_SOCK ||
			      saved(s, p->id - 1) != o || !p->id))
			return 0;
		return o->len <= sys_pipe_cap(o) && o->pos < sys_pipe_cap(o);
	case SYS_KIND_EVENT:
		return o->id <= 1 && o->pos != UINT64_MAX;
	case SYS_KIND_TIMER:
		return o->id == CLOCK_REALTIME || o->id == CLOCK_MONOTONIC ||
		       o->id == CLOCK_BOOTTIME;
	case SYS_KIND_PROC:
		return sys_procfs_valid(o);
	case SYS_KIND_DEV:
		return sys_dev_valid(o);
	case SYS_KIND_FIFO: /* a named pipe of the saved /tmp */
		return s->tmp && o->id < s->tmp->nn && S_ISFIFO(s->tmp->n[o->id].mode);
	case SYS_KIND_TMP: /* a node of the saved /tmp */
		return s->tmp && o->id < s->tmp->nn && s->tmp->n[o->id].mode != SYS_TMP_FREE;
	default:
		return 0;
	}
}

/* the saved table is one Ember could have made: 0 or -EINVAL */
static int check(const struct sys_saved *s)
{
	uint64_t bytes = 0;
	for (size_t i = 0; i < s->nobj; i++) {
		const struct sys_saved_obj *x = &s->objs[i];
		if (x->slot >= SYS_FDS || (i && x->slot <= s->objs[i - 1].slot) || !x->o.refs ||
		    !obj_ok(s, &x->o))
			return -EINVAL;
		uint32_t refs = 0;
		for (size_t k = 0; k < s->nfd; k++)
			refs += s->fds[k].obj == x->slot;
		if (refs != x->o.refs)
			return -EINVAL;
		bytes += reader(&x->o) ? x->o.len : 0;
	}
	for (size_t i = 0; i < s->nfd; i++)
		if (s->fds[i].fd >= SYS_FDS || (i && s->fds[i].fd <= s->fds[i - 1].fd) ||
		    !saved(s, s->fds[i].obj) || s->fds[i].cloexec > 1)
			return -EINVAL;
	for (size_t i = 0; i < s->nepi; i++) {
		const struct sys_obj *ep = saved(s, s->epi[i].ep);
		if (!ep || ep->kind != SYS_KIND_EPOLL || !saved(s, s->epi[i].obj) ||
		    s->epi[i].fd >= SYS_FDS)
			return -EINVAL;
	}
	return bytes == s->pipes.len && s->nepi <= SYS_EPI_MAX ? 0 : -EINVAL;
}

int sys_fd_restore(struct sys_state *st, const struct sys_saved *s)
{
	if (check(s))
		return -EINVAL;
	if (st->epi_cap < s->nepi) {
		struct sys_epi *e = realloc(st->epi, s->nepi * sizeof(*e));
		if (!e)
			return -ENOMEM;
		st->epi = e;
		st->epi_cap = s->nepi;
	}
	memset(st->fd, 0, sizeof(st->fd));
	memset(st->obj, 0, SYS_FDS * sizeof(*st->obj));
	uint64_t now = base_now_ns(), at = 0;
	for (size_t i = 0; i < s->nobj; i++) {
		struct sys_obj *o = &st->obj[s->objs[i].slot];
		*o = s->objs[i].o;
		if (o->kind == SYS_KIND_TIMER && o->at)
			o->at = o->at > UINT64_MAX - now ? UINT64_MAX : now + o->at;
	}
	for (size_t i = 0; i < s->nfd; i++)
		st->fd[s->fds[i].fd] = (struct sys_fd){s->fds[i].obj + 1, s->fds[i].cloexec};
	/* every ring made again at its size (F_SETPIPE_SZ may have changed it since) */
	for (size_t i = 0; i < SYS_FDS; i++) {
		struct sys_obj *o = &st->obj[i];
		free(st->pipe_buf[i]);
		st->pipe_buf[i] = NULL;
		if (reader(o) && o->len && !(st->pipe_buf[i] = malloc(sys_pipe_cap(o))))
			return -ENOMEM;
		if (reader(o) && o->len) {
			memcpy(st->pipe_buf[i], s->pipes.data + at, o->len);
			at += o->len;
		}
	}
	if (s->nepi)
		memcpy(st->epi, s->epi, s->nepi * sizeof(*s->epi));
	st->nepi = s->nepi;
	return sys_epoll_loops(st) ? -EINVAL : 0;
}

void sys_fd_saved_free(struct sys_saved *s)
{
	free(s->fds);
	free(s->objs);
	free(s->epi);
	free(s->pipes.data);
	s->fds = NULL;
	s->objs = NULL;
	s->epi = NULL;
	s->pipes.data = NULL;
	s->nfd = s->nobj = s->nepi = s->pipes.len = s->pipes.cap = 0;
}
