/* Path lookup inside a bundle: the root is the top, links are followed from inside the tree. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "bundle/bnd.h"

/* the child of folder d called name[0..n), or -1: a binary search, children are by name */
static long find(const struct bnd *b, uint32_t d, const char *name, size_t n)
{
	const struct bnd_node *dn = &b->nodes[d];
	uint32_t lo = dn->first, hi = dn->first + dn->count;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct bnd_node *c = &b->nodes[mid];
		size_t m = c->name_len < n ? c->name_len : n;
		int r = memcmp(b->names + c->name_off, name, m);
		if (!r)
			r = c->name_len < n ? -1 : c->name_len > n;
		if (!r)
			return mid;
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

int bnd_lookup(const struct bnd *b, uint32_t dir, const char *path, int follow, uint32_t *node,
	       int *parent_ok)
{
	/* what is left to walk: the path, with links' targets put in front of their rest */
	char work[2 * BND_PATH_MAX + 2];
	size_t len = strlen(path);
	if (parent_ok)
		*parent_ok = 0;
	if (len >= BND_PATH_MAX)
		return -ENAMETOOLONG;
	if (len == 0)
		return -ENOENT;
	memcpy(work, path, len + 1);
	uint32_t cur = dir < b->nnodes ? dir : 0;
	int links = 0;
	char *p = work;
	for (;;) {
		if (*p == '/')
			cur = 0;
		while (*p == '/')
			p++;
		if (!*p)
			break;
		char *e = p;
		while (*e && *e != '/')
			e++;
		size_t n = (size_t)(e - p);
		char *rest = e;
		while (*rest == '/')
			rest++;
		int last = !*rest, slash = *e == '/';
		if (!bnd_is(b, cur, S_IFDIR))
			return -ENOTDIR;
		if (n > BND_NAME_MAX)
			return -ENAMETOOLONG;
		if (n == 1 && p[0] == '.') {
			p = rest;
			continue;
		}
		if (n == 2 && p[0] == '.' && p[1] == '.') {
			cur = b->nodes[cur].parent;
			p = rest;
			continue;
		}
		long c = find(b, cur, p, n);
		if (c < 0) {
			if (parent_ok)
				*parent_ok = last;
			return -ENOENT;
		}
		const struct bnd_node *cn = &b->nodes[c];
		if (bnd_is(b, (uint32_t)c, S_IFLNK) && (!last || follow || slash)) {
			if (++links > BND_LINKS_MAX)
				return -ELOOP;
			size_t rl = strlen(rest);
			if (cn->size + 1 + rl >= sizeof(work))
				return -ENAMETOOLONG;
			/* target + "/" + rest, built at the end of work then moved to its start */
			memmove(work + cn->size + 1, rest, rl + 1);
			memcpy(work, b->data + cn->data_off, cn->size);
			work[cn->size] = rl ? '/' : 0;
			p = work;
			continue; /* an absolute target restarts at the root, a relative one here */
		}
		cur = (uint32_t)c;
		p = rest;
		if (last && slash && !bnd_is(b, cur, S_IFDIR))
			return -ENOTDIR;
	}
	*node = cur;
	return 0;
}

long bnd_path_of(const struct bnd *b, uint32_t node, char *buf, size_t len)
{
	char tmp[BND_PATH_MAX];
	size_t at = sizeof(tmp) - 1;
	tmp[at] = 0;
	for (uint32_t n = node; n != 0; n = b->nodes[n].parent) {
		const struct bnd_node *x = &b->nodes[n];
		if (x->name_len + 1 > at)
			return -ENAMETOOLONG;
		at -= x->name_len;
		memcpy(tmp + at, b->names + x->name_off, x->name_len);
		tmp[--at] = '/';
	}
	if (at == sizeof(tmp) - 1)
		tmp[--at] = '/';
	size_t n = sizeof(tmp) - at; /* with the NUL */
	if (n > len)
		return -ERANGE;
	memcpy(buf, tmp + at, n);
	return (long)n;
}
