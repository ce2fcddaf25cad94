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

#include "sys/sys_fd.h"
#include "sys/sys_fs.h"
#include "sys/sys_tmp.h"

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
		if (st->obj[i].kind == SYS_KIND_TMP && st->obj[i].refs && st->obj[i].id == node)
			return 1;
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

void sys_tmp_unlink(struct sys_state *st, uint32_t node)
{
	struct sys_tmp *t = st->tmp;
	t->n[t->n[node].parent].mtime_ns = now_ns();
	if (in_use(st, node))
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

void sys_tmp_stat(const struct sys_state *st, uint32_t node, struct stat *s)
{
	const struct sys_tmp_node *n = &st->tmp->n[node];
	memset(s, 0, sizeof(*s));
	s->st_dev = TMP_DEV;
	s->st_ino = node + 1;
	s->st_mode = n->mode;
	s->st_nlink = S_ISDIR(n->mode) ? 2 : n->parent == SYS_TMP_GONE ? 0 : 1;
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

long sys_tmp_path_of(const struct sys_state *st, uint32_t node, char *buf, size_t len)
{
	const char *names[64];
	int n = 0;
	for (uint32_t i = node; i; i = st->tmp->n[i].parent) {
		if (n == 64 || st->tmp->n[i].parent == SYS_TMP_GONE)
			return n == 64 ? -ENAMETOOLONG : -ENOENT; /* too deep, or removed */
		names[n++] = st->tmp->n[i].name;
	}
	size_t k = (size_t)snprintf(buf, len, "/tmp");
	while (n-- > 0 && k < len)
		k += (size_t)snprintf(buf + k, len - k, "/%s", names[n]);
	return k < len ? (long)k : -ENAMETOOLONG;
}

long sys_tmp_outside(const struct sys_state *st, uint32_t node, const char *rel, char *out,
		     size_t len)
{
	const char *p = rel;
	for (;;) { /* up by "..", "." skipped, until /tmp's own ".." */
		while (*p == '/')
			p++;
		const char *e = p;
		while (*e && *e != '/')
			e++;
		size_t l = (size_t)(e - p);
		if (l == 1 && p[0] == '.') {
			p = e;
			continue;
		}
		if (l != 2 || p[0] != '.' || p[1] != '.')
			return -ENOENT; /* a name inside /tmp, or the end: not outside */
		p = e;
		if (!node)
			break;
		if (st->tmp->n[node].parent == SYS_TMP_GONE)
			return -ENOENT;
		node = st->tmp->n[node].parent;
	}
	int n = snprintf(out, len, "/%s", p);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* the child of dir called name (len bytes), or 0 */
static uint32_t child(const struct sys_tmp *t, uint32_t dir, const char *name, size_t len)
{
	for (uint32_t i = 1; i < t->nn; i++)
		if (t->n[i].mode != SYS_TMP_FREE && t->n[i].parent == dir &&
		    strlen(t->n[i].name) == len && !memcmp(t->n[i].name, name, len))
			return i;
	return 0;
}

/* where a relative path starts, as text: the cwd, or dirfd's folder; 0, 1 when dirfd is no
 * folder of /tmp's or the bundle's (the caller's lookup says why), or -errno */
static long base_of(struct sys_state *st, uint64_t dirfd, char *buf, size_t len)
{
	if ((int)dirfd == AT_FDCWD && (st->cwd & SYS_CWD_TMP)) {
		long n = sys_tmp_path_of(st, st->cwd & ~SYS_CWD_TMP, buf, len);
		return n < 0 ? n : 0;
	}
	if ((int)dirfd == AT_FDCWD) {
		if (!st->bundle)
			return snprintf(buf, len, "/"), 0;
		long n = bnd_path_of(st->bundle, st->cwd, buf, len);
		return n < 0 ? n : 0;
	}
	struct sys_obj *o = sys_fd_obj(st, dirfd);
	if (o && o->kind == SYS_KIND_TMP && S_ISDIR(st->tmp->n[o->id].mode)) {
		long n = sys_tmp_path_of(st, o->id, buf, len);
		return n < 0 ? n : 0;
	}
	if (o && o->kind == SYS_KIND_FILE && bnd_is(st->bundle, o->id, S_IFDIR)) {
		long n = bnd_path_of(st->bundle, o->id, buf, len);
		return n < 0 ? n : 0;
	}
	return 1;
}

long sys_tmp_path(struct sys_state *st, uint64_t dirfd, uint64_t addr, struct sys_tmp_at *at)
{
	char path[BND_PATH_MAX], full[2 * BND_PATH_MAX + 2];
	memset(at, 0, sizeof(*at));
	long rc = sys_fs_get_path(st, addr, path);
	if (rc || !path[0])
		return rc;
	full[0] = 0;
	if (path[0] != '/' && (rc = base_of(st, dirfd, full, BND_PATH_MAX)))
		return rc < 0 ? rc : 0;
	size_t k = strlen(full);
	snprintf(full + k, sizeof(full) - k, "/%s", path);
	/* the components, . and .. taken lexically: /tmp holds no links */
	const char *c[BND_PATH_MAX / 2];
	size_t l[BND_PATH_MAX / 2], n = 0;
	for (char *p = full; *p;) {
		while (*p == '/')
			p++;
		char *e = p;
		while (*e && *e != '/')
			e++;
		size_t len = (size_t)(e - p);
		if (len == 2 && p[0] == '.' && p[1] == '.')
			n -= n > 0;
		else if (len && !(len == 1 && p[0] == '.') && n == sizeof(l) / sizeof(l[0]))
			return -ENAMETOOLONG;
		else if (len && !(len == 1 && p[0] == '.'))
			c[n] = p, l[n++] = len;
		p = e;
	}
	if (!n || l[0] != 3 || memcmp(c[0], "tmp", 3))
		return 0;
	struct sys_tmp *t = sys_tmp_tree(st);
	if (!t)
		return -ENOMEM;
	at->in = 1;
	at->trailing = path[strlen(path) - 1] == '/';
	uint32_t node = 0;
	for (size_t i = 1; i < n; i++) {
		if (l[i] >= SYS_TMP_NAME)
			return -ENAMETOOLONG;
		if (!S_ISDIR(t->n[node].mode))
			return -ENOTDIR;
		uint32_t ch = child(t, node, c[i], l[i]);
		if (!ch && i == n - 1) {
			at->parent = node;
			memcpy(at->name, c[i], l[i]);
			at->name[l[i]] = 0;
			return 0;
		}
		if (!ch)
			return -ENOENT;
		node = ch;
	}
	if (at->trailing && !S_ISDIR(t->n[node].mode))
		return -ENOTDIR;
	at->found = 1;
	at->node = node;
	return 0;
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
		if (t->n[i].size && !(c->n[i].data = malloc(t->n[i].size)))
			return -ENOMEM; /* the caller frees the copy */
		if (t->n[i].size)
			memcpy(c->n[i].data, t->n[i].data, t->n[i].size);
	}
	return 0;
}

int sys_tmp_saved_used(const struct sys_saved *s)
{
	for (uint32_t i = 1; s->tmp && i < s->tmp->nn; i++)
		if (s->tmp->n[i].mode != SYS_TMP_FREE)
			return 1;
	for (size_t i = 0; i < s->nobj; i++)
		if (s->objs[i].o.kind == SYS_KIND_TMP)
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
