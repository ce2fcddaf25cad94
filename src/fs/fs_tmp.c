/* The scratch /tmp's tree: its nodes in host memory, paths into it, its descriptors, its copy in
 * a snapshot (so each invocation starts from /tmp as init left it, and nothing else). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <time.h>

#include "fd/fd.h"
#include "fs/fs.h"
#include "fs/fs_tmp.h"

#define TMP_DEV 0xeb02 /* st_dev of /tmp's files, not a bundle's */

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

struct sys_tmp *sys_tmp_tree(struct sys_state *st)
{
	if (st->tmp)
		return st->tmp;
	struct sys_tmp *t = calloc(1, sizeof(*t));
	if (!t || !(t->n = calloc(1, sizeof(*t->n)))) {
		free(t);
		return NULL;
	}
	t->nn = 1;
	t->n[0] = (struct sys_tmp_node){.mode = S_IFDIR | 01777, .parent = 0, .name = "tmp"};
	t->n[0].atime_ns = t->n[0].mtime_ns = now_ns();
	st->tmp = t;
	return t;
}

uint64_t sys_tmp_limit(const struct sys_state *st)
{
	return st->proc.stack_hi / 4;
}

long sys_tmp_new(struct sys_state *st, uint32_t parent, const char *name, uint32_t mode)
{
	struct sys_tmp *t = sys_tmp_tree(st);
	if (!t)
		return -ENOMEM;
	uint32_t i = 1;
	while (i < t->nn && t->n[i].mode != SYS_TMP_FREE)
		i++;
	if (i == t->nn) {
		if (t->nn == SYS_TMP_NODES)
			return -ENOSPC;
		struct sys_tmp_node *n = realloc(t->n, (t->nn + 1) * sizeof(*n));
		if (!n)
			return -ENOMEM;
		t->n = n;
		t->nn++;
	}
	struct sys_tmp_node *n = &t->n[i];
	memset(n, 0, sizeof(*n));
	n->mode = mode;
	n->parent = parent;
	snprintf(n->name, sizeof(n->name), "%s", name);
	n->atime_ns = n->mtime_ns = t->n[parent].mtime_ns = now_ns();
	return i;
}

/* The bound counts what is held, not what is used: every file's capacity. A file grows by
 * doubling while the bound allows, else to its size in pages; it gives memory back when it
 * shrinks below a quarter of what it holds */
static long resize(struct sys_state *st, uint32_t node, uint64_t size)
{
	struct sys_tmp *t = st->tmp;
	struct sys_tmp_node *n = &t->n[node];
	uint64_t room = sys_tmp_limit(st) - (t->bytes - n->cap), cap = n->cap;
	if (size > cap) {
		uint64_t want = (size + 4095) & ~4095ULL, twice = cap * 2;
		if (size > room || want < size)
			return -ENOSPC;
		cap = twice > want && twice <= room ? twice : want <= room ? want : size;
	} else if (size < cap / 4) {
		cap = (size + 4095) & ~4095ULL;
	}
	if (cap != n->cap) {
		uint8_t *d = cap ? realloc(n->data, cap) : NULL;
		if (cap && !d && cap > n->cap)
			return -ENOMEM;
		if (cap && !d) /* a shrink that fails keeps what it had */
			cap = n->cap;
		else if (!cap)
			free(n->data);
		if (d || !cap)
			n->data = d;
		t->bytes = t->bytes - n->cap + cap;
		n->cap = cap;
	}
	if (size > n->size)
		memset(n->data + n->size, 0, size - n->size);
	n->size = size;
	n->mtime_ns = now_ns();
	return 0;
}

/* a file mapped MAP_SHARED sees its new size (sys_shm.c) */
long sys_tmp_resize(struct sys_state *st, uint32_t node, uint64_t size)
{
	sys_shm_flush(st, node);
	long rc = resize(st, node, size);
	sys_shm_refresh(st, node);
	return rc;
}

int sys_tmp_open_node(const struct sys_state *st, uint32_t node)
{
	for (size_t i = 0; i < SYS_FDS; i++)
		if ((st->obj[i].kind == SYS_KIND_TMP || st->obj[i].kind == SYS_KIND_FIFO) &&
		    st->obj[i].refs && st->obj[i].id == node)
			return 1;
	const struct sys_tmp_fifo *f = &st->tmp->n[node].fifo;
	if (f->readers || f->writers)
		return 1;		/* an open of a named pipe waits for its partner */
	return sys_shm_names(st, node); /* a shared mapping holds it as a descriptor does */
}

static void free_node(struct sys_tmp *t, uint32_t node)
{
	struct sys_tmp_node *n = &t->n[node];
	t->bytes -= n->cap;
	free(n->data);
	memset(n, 0, sizeof(*n));
}

/* a descriptor or the cwd names node: it stays, out of the tree, while one does */
static int in_use(const struct sys_state *st, uint32_t node)
{
	return sys_tmp_open_node(st, node) || st->cwd == (SYS_CWD_TMP | node);
}

uint32_t sys_tmp_names(const struct sys_tmp *t, uint32_t node)
{
	uint32_t n = 1;
	for (uint32_t i = 1; i < t->nn; i++)
		n += t->n[i].mode != SYS_TMP_FREE && t->n[i].same == node;
	return n;
}

void sys_tmp_unlink(struct sys_state *st, uint32_t node)
{
	struct sys_tmp *t = st->tmp;
	t->n[t->n[node].parent].mtime_ns = now_ns();
	uint32_t other = 0;
	for (uint32_t i = 1; !t->n[node].same && i < t->nn && !other; i++)
		other = t->n[i].mode != SYS_TMP_FREE && t->n[i].same == node ? i : 0;
	if (other) { /* the file takes its other name's place: its descriptors name it still */
		t->n[node].parent = t->n[other].parent;
		memcpy(t->n[node].name, t->n[other].name, sizeof(t->n[node].name));
		node = other;
	}
	if (t->n[node].same) /* a name only */
		free_node(t, node);
	else if (in_use(st, node))
		t->n[node].parent = SYS_TMP_GONE;
	else
		free_node(t, node);
}

void sys_tmp_release(struct sys_state *st, uint32_t node)
{
	if (st->tmp && node < st->tmp->nn && st->tmp->n[node].parent == SYS_TMP_GONE &&
	    !in_use(st, node))
		free_node(st->tmp, node);
}

/* a folder's links: its name, its ".", and each sub-folder's ".." */
static uint32_t sub_dirs(const struct sys_tmp *t, uint32_t dir)
{
	uint32_t n = 0;
	for (uint32_t i = 1; i < t->nn; i++)
		n += S_ISDIR(t->n[i].mode) && t->n[i].parent == dir;
	return n;
}

void sys_tmp_stat(const struct sys_state *st, uint32_t node, struct stat *s)
{
	const struct sys_tmp_node *n = &st->tmp->n[node];
	memset(s, 0, sizeof(*s));
	s->st_dev = TMP_DEV;
	s->st_ino = node + 1;
	s->st_mode = n->mode;
	s->st_nlink = S_ISDIR(n->mode)		  ? 2 + sub_dirs(st->tmp, node)
		      : n->parent == SYS_TMP_GONE ? 0
						  : sys_tmp_names(st->tmp, node);
	s->st_uid = s->st_gid = node ? 1000 : 0; /* the guest's (AT_UID), /tmp itself root's */
	s->st_size = S_ISDIR(n->mode) ? 4096 : (off_t)n->size;
	s->st_blksize = 4096;
	s->st_blocks = (blkcnt_t)((n->size + 511) / 512);
	s->st_mtim = (struct timespec){n->mtime_ns / 1000000000LL, n->mtime_ns % 1000000000LL};
	s->st_ctim = s->st_mtim;
	s->st_atim = (struct timespec){n->atime_ns / 1000000000LL, n->atime_ns % 1000000000LL};
}

struct sys_obj *sys_tmp_file(struct sys_state *st, uint64_t fd)
{
	struct sys_obj *o = sys_fd_obj(st, fd);
	return o && o->kind == SYS_KIND_TMP ? o : NULL;
}

/* the descriptors' operations: a regular file read and written at its position, or a folder */
static long tmp_read(struct sys_state *st, uint64_t fd, struct sys_obj *o, const struct sys_iov *v,
		     int n)
{
	(void)fd;
	return sys_iov_at(st, o, v, n, sys_tmp_read_at, NULL);
}

static long tmp_write(struct sys_state *st, uint64_t fd, struct sys_obj *o, const struct sys_iov *v,
		      int n)
{
	(void)fd;
	const uint64_t *end = o->flags & O_APPEND ? &st->tmp->n[o->id].size : NULL;
	return sys_iov_at(st, o, v, n, sys_tmp_write_at, end);
}

static uint32_t tmp_poll(struct sys_state *st, struct sys_obj *o, uint64_t *next)
{
	(void)st, (void)o, (void)next;
	return EPOLLIN | EPOLLRDNORM | EPOLLOUT | EPOLLWRNORM;
}

static void tmp_stat(struct sys_state *st, struct sys_obj *o, struct stat *s)
{
	sys_tmp_stat(st, o->id, s);
}

/* the last descriptor of a file unlinked while open: it goes now */
static void tmp_close(struct sys_state *st, struct sys_obj *o)
{
	sys_tmp_release(st, o->id); /* o has no descriptor left: the look passes it by */
}

const struct sys_fd_ops sys_tmp_ops = {
    .read = tmp_read,
    .write = tmp_write,
    .poll = tmp_poll,
    .stat = tmp_stat,
    .close = tmp_close,
};

/* a deep copy of t into *out (NULL for an absent one: made again on first use); on -ENOMEM,
 * *out holds what was copied, for the caller to free */
static int copy_tree(const struct sys_tmp *t, struct sys_tmp **out)
{
	*out = NULL;
	if (!t) /* none made: it is made again on first use */
		return 0;
	struct sys_tmp *c = calloc(1, sizeof(*c));
	if (!c || !(c->n = calloc(t->nn, sizeof(*c->n)))) {
		free(c);
		return -ENOMEM;
	}
	*out = c;
	c->nn = t->nn;
	for (uint32_t i = 0; i < t->nn; i++) {
		c->n[i] = t->n[i];
		c->n[i].data = NULL;
		c->n[i].cap = t->n[i].size; /* the copy holds its size, and the bound counts that */
		c->bytes += t->n[i].size;
		/* a named pipe's ring is held outside the bound, as a pipe's */
		uint64_t keep = S_ISFIFO(t->n[i].mode) ? sys_tmp_fifo_held(&t->n[i]) : t->n[i].size;
		if (keep && !(c->n[i].data = malloc(keep)))
			return -ENOMEM; /* the caller frees the copy */
		if (keep)
			memcpy(c->n[i].data, t->n[i].data, keep);
	}
	return 0;
}

int sys_tmp_saved_used(const struct sys_saved *s)
{
	for (uint32_t i = 1; s->tmp && i < s->tmp->nn; i++)
		if (s->tmp->n[i].mode != SYS_TMP_FREE)
			return 1;
	for (size_t i = 0; i < s->nobj; i++)
		if (s->objs[i].o.kind == SYS_KIND_TMP || s->objs[i].o.kind == SYS_KIND_FIFO)
			return 1;
	return 0;
}

int sys_tmp_save(const struct sys_state *st, struct sys_tmp **out)
{
	return copy_tree(st->tmp, out);
}

int sys_tmp_restore(struct sys_state *st, const struct sys_tmp *saved)
{
	sys_tmp_free(st->tmp);
	st->tmp = NULL;
	return copy_tree(saved, &st->tmp);
}

void sys_tmp_free(struct sys_tmp *t)
{
	if (!t)
		return;
	for (uint32_t i = 0; i < t->nn; i++)
		free(t->n[i].data);
	free(t->n);
	free(t);
}
