/* Paths into the scratch /tmp: looked up a name at a time, its links followed (40 at most in one
 * lookup), ".." taken from the folder reached (physically); where a lookup that left /tmp ends. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "fd/fd.h"
#include "fs/fs.h"
#include "fs/fs_tmp.h"

#define TMP_LINKS 40 /* Linux's MAXSYMLINKS */

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

/* the child of dir called name (len bytes), or 0 */
static uint32_t child(const struct sys_tmp *t, uint32_t dir, const char *name, size_t len)
{
	for (uint32_t i = 1; i < t->nn; i++)
		if (t->n[i].mode != SYS_TMP_FREE && t->n[i].parent == dir &&
		    strlen(t->n[i].name) == len && !memcmp(t->n[i].name, name, len))
			return i;
	return 0;
}

/* A lookup under way: in /tmp at a folder node, or outside it at a path kept as text (taken
 * lexically, as the bundle's own lookup is given it); the path still to go in rest */
struct walk {
	int in, was_in;		/* now in /tmp; it has been in /tmp */
	uint32_t node, entry;	/* in /tmp: the folder or file reached, and the name it was by */
	char out[BND_PATH_MAX]; /* outside: "" (the root) or "/a/b" */
	char rest[2 * BND_PATH_MAX + 2];
	unsigned links;
};

/* where a relative path starts: a folder of /tmp's, or the text of the bundle's; 1 when dirfd
 * is neither (the caller's lookup says why), 0, or -errno */
static long start(struct sys_state *st, uint64_t dirfd, struct walk *w)
{
	struct sys_obj *o = (int)dirfd == AT_FDCWD ? NULL : sys_fd_obj(st, dirfd);
	uint32_t tmp = UINT32_MAX;
	if ((int)dirfd == AT_FDCWD && (st->cwd & SYS_CWD_TMP))
		tmp = st->cwd & ~SYS_CWD_TMP;
	else if (o && o->kind == SYS_KIND_TMP && !S_ISDIR(st->tmp->n[o->id].mode))
		return -ENOTDIR;
	else if (o && o->kind == SYS_KIND_TMP)
		tmp = o->id;
	if (tmp != UINT32_MAX) {
		if (!sys_tmp_tree(st))
			return -ENOMEM;
		if (tmp && st->tmp->n[tmp].parent == SYS_TMP_GONE)
			return -ENOENT; /* removed: nothing is in it */
		w->in = w->was_in = 1;
		w->node = w->entry = tmp;
		return 0;
	}
	long n;
	if ((int)dirfd == AT_FDCWD)
		n = st->bundle ? bnd_path_of(st->bundle, st->cwd, w->out, sizeof(w->out)) : 0;
	else if (o && o->kind == SYS_KIND_FILE && bnd_is(st->bundle, o->id, S_IFDIR))
		n = bnd_path_of(st->bundle, o->id, w->out, sizeof(w->out));
	else
		return 1;
	if (n < 0)
		return n;
	if (!strcmp(w->out, "/"))
		w->out[0] = 0;
	return 0;
}

/* a folder of the function's files that ".." leaves: it must be one (gVisor's PathNotCleaned),
 * unless it is of the made /proc, /sys or /dev; 0 or -errno */
static long is_dir_out(const struct sys_state *st, const char *path)
{
	static const char *const made[] = {"/proc", "/sys", "/dev"};
	uint32_t node;
	for (size_t i = 0; i < sizeof(made) / sizeof(made[0]); i++)
		if (!strncmp(path, made[i], strlen(made[i])) &&
		    (!path[strlen(made[i])] || path[strlen(made[i])] == '/'))
			return 0;
	if (!st->bundle)
		return 0;
	long rc = bnd_lookup(st->bundle, 0, path, 1, &node, NULL);
	return rc ? rc : bnd_is(st->bundle, node, S_IFDIR) ? 0 : -ENOTDIR;
}

/* outside /tmp, one name: taken lexically, but for a ".." after a missing name or a file's;
 * "/tmp" reached is /tmp's root */
static long step_out(struct sys_state *st, struct walk *w, const char *c, size_t len)
{
	char *slash = strrchr(w->out, '/');
	if (len == 2 && c[0] == '.' && c[1] == '.') {
		long rc = slash ? is_dir_out(st, w->out) : 0;
		if (slash && !rc)
			*slash = 0;
		return rc;
	}
	size_t k = strlen(w->out);
	if (k + 1 + len >= sizeof(w->out))
		return -ENAMETOOLONG;
	w->out[k] = '/';
	memcpy(w->out + k + 1, c, len);
	w->out[k + 1 + len] = 0;
	if (strcmp(w->out, "/tmp"))
		return 0;
	if (!sys_tmp_tree(st))
		return -ENOMEM;
	w->in = w->was_in = 1;
	w->node = w->entry = 0;
	return 0;
}

/* the link node's target in place of its name: the rest of the path after it (from p) */
static long expand(const struct sys_tmp_node *l, struct walk *w, const char *p)
{
	size_t k = strlen(p);
	if (++w->links > TMP_LINKS)
		return -ELOOP;
	if (!l->size || !l->data) /* symlink refuses an empty target: never made, never followed */
		return -ENOENT;
	if (l->size + 1 + k >= sizeof(w->rest))
		return -ENAMETOOLONG;
	memmove(w->rest + l->size + 1, p, k + 1); /* p lies in rest */
	memcpy(w->rest, l->data, l->size);
	w->rest[l->size] = '/';
	if (l->data[0] == '/') { /* from the root */
		w->in = 0;
		w->out[0] = 0;
	}
	return 0;
}

long sys_tmp_walk(struct sys_state *st, uint64_t dirfd, const char *path, int follow,
		  struct sys_tmp_at *at)
{
	struct walk w_, *w = &w_;
	long rc;
	memset(at, 0, sizeof(*at));
	if (!path[0])
		return 0;
	w->in = w->was_in = 0;
	w->node = w->entry = w->links = 0;
	w->out[0] = 0;
	if (path[0] != '/' && (rc = start(st, dirfd, w)))
		return rc < 0 ? rc : 0;
	snprintf(w->rest, sizeof(w->rest), "%s", path);
	at->trailing = path[strlen(path) - 1] == '/';
	int last_follows = follow == SYS_TMP_FOLLOW || (follow == SYS_TMP_NOFOLLOW && at->trailing);
	const char *p = w->rest;
	for (;;) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		const char *e = p;
		while (*e && *e != '/')
			e++;
		const char *c = p;
		size_t len = (size_t)(e - p);
		p = e;
		while (*p == '/')
			p++;
		int last = !*p;
		if (w->in && !S_ISDIR(st->tmp->n[w->node].mode))
			return -ENOTDIR; /* a name, "." or ".." after a file's */
		at->dots = len == 1 && c[0] == '.'		    ? 1
			   : len == 2 && c[0] == '.' && c[1] == '.' ? 2
								    : 0;
		if (len == 1 && c[0] == '.')
			continue;
		if (!w->in) {
			if ((rc = step_out(st, w, c, len)))
				return rc;
			continue;
		}
		const struct sys_tmp *t = st->tmp;
		if (len == 2 && c[0] == '.' && c[1] == '.') {
			if (!w->node)
				w->in = 0, w->out[0] = 0; /* /tmp's own "..": the root */
			else if (t->n[w->node].parent == SYS_TMP_GONE)
				return -ENOENT;
			else
				w->node = t->n[w->node].parent;
			w->entry = w->node;
			continue;
		}
		if (len >= SYS_TMP_NAME)
			return -ENAMETOOLONG;
		uint32_t ch = child(t, w->node, c, len);
		if (!ch && !last)
			return -ENOENT;
		if (!ch) {
			at->in = 1;
			at->parent = w->node;
			memcpy(at->name, c, len);
			at->name[len] = 0;
			return 0;
		}
		uint32_t file = t->n[ch].same ? t->n[ch].same : ch; /* a hard link's file */
		if (S_ISLNK(t->n[file].mode) && (!last || last_follows)) {
			if ((rc = expand(&t->n[file], w, p)))
				return rc;
			p = w->rest;
			continue;
		}
		w->node = file;
		w->entry = ch;
	}
	if (!w->in && w->was_in) /* left /tmp: where to look it up from the root */
		snprintf(at->outside, sizeof(at->outside), "%s", w->out[0] ? w->out : "/");
	if (!w->in)
		return 0;
	at->in = at->found = 1;
	at->node = w->node;
	at->entry = w->entry;
	if (at->trailing && !S_ISDIR(st->tmp->n[w->node].mode))
		return -ENOTDIR;
	return 0;
}

long sys_tmp_path(struct sys_state *st, uint64_t dirfd, uint64_t addr, int follow,
		  struct sys_tmp_at *at)
{
	char path[BND_PATH_MAX];
	memset(at, 0, sizeof(*at));
	long rc = sys_fs_get_path(st, addr, path);
	return rc ? rc : sys_tmp_walk(st, dirfd, path, follow, at);
}
