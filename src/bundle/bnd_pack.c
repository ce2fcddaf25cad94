/* Building a bundle: entries checked and gathered into a tree, then packed into one read-only
 * block whose folders list their children contiguously, by name. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "bundle/bnd.h"

struct bnode {
	char *name;
	int type; /* 'f', 'd', 'l' */
	unsigned perm;
	uint8_t *data;
	size_t len;
	int64_t mtime_ns;
	struct bnode **kids;
	size_t nkids, cap;
};

struct bnd_builder {
	struct bnode root;
	size_t nodes;
	uint64_t bytes;
	int64_t next_time; /* for the next entry added */
};

void bnd_builder_time(struct bnd_builder *bb, int64_t mtime_ns)
{
	bb->next_time = mtime_ns;
}

struct bnd_builder *bnd_builder_new(void)
{
	struct bnd_builder *bb = calloc(1, sizeof(*bb));
	if (bb) {
		bb->root.type = 'd';
		bb->root.perm = 0755;
		bb->nodes = 1;
	}
	return bb;
}

static void node_free(struct bnode *n)
{
	for (size_t i = 0; i < n->nkids; i++) {
		node_free(n->kids[i]);
		free(n->kids[i]);
	}
	free(n->kids);
	free(n->name);
	free(n->data);
}

void bnd_builder_free(struct bnd_builder *bb)
{
	if (!bb)
		return;
	node_free(&bb->root);
	free(bb);
}

/* a name a file may have: no '/', no control character, not "." or "..", not too long */
static const char *bad_name(const char *s, size_t n)
{
	if (n == 0)
		return "an empty name";
	if (n > BND_NAME_MAX)
		return "a name longer than 255 bytes";
	if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
		return "a '.' or '..' component";
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return "a control character in a name";
	return NULL;
}

static struct bnode *child(struct bnode *d, const char *name, size_t n)
{
	for (size_t i = 0; i < d->nkids; i++)
		if (strlen(d->kids[i]->name) == n && !memcmp(d->kids[i]->name, name, n))
			return d->kids[i];
	return NULL;
}

static struct bnode *add_child(struct bnd_builder *bb, struct bnode *d, const char *name, size_t n)
{
	if (bb->nodes >= BND_MAX_NODES)
		return NULL;
	if (d->nkids == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 8;
		struct bnode **k = realloc(d->kids, cap * sizeof(*k));
		if (!k)
			return NULL;
		d->kids = k;
		d->cap = cap;
	}
	struct bnode *c = calloc(1, sizeof(*c));
	if (!c || !(c->name = strndup(name, n))) {
		free(c);
		return NULL;
	}
	c->type = 'd';
	c->perm = 0755;
	d->kids[d->nkids++] = c;
	bb->nodes++;
	return c;
}

#define FAIL(...) (snprintf(err, errlen, __VA_ARGS__), -1)

int bnd_add(struct bnd_builder *bb, const char *path, int type, unsigned perm, const void *data,
	    size_t len, char *err, size_t errlen)
{
	struct bnode *d = &bb->root;
	const char *p = path;
	int depth = 0;
	int64_t mtime_ns = bb->next_time;
	bb->next_time = 0;
	if (strlen(path) >= BND_PATH_MAX)
		return FAIL("%.200s: path too long", path);
	if (type == 'l' && (len == 0 || len >= BND_PATH_MAX || memchr(data, 0, len)))
		return FAIL("%.200s: a link's target must be 1 to 4095 bytes", path);
	if (type == 'f' && len > BND_MAX_BYTES - bb->bytes)
		return FAIL("%.200s: the files are larger than %llu bytes together", path,
			    (unsigned long long)BND_MAX_BYTES);
	while (*p == '/')
		p++;
	for (;;) {
		const char *e = strchr(p, '/');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		while (e && e[1] == '/')
			e++;
		int last = !e || !e[1];
		if (n == 1 && p[0] == '.' && !last) { /* "./a" as tar writes it */
			p = e + 1;
			continue;
		}
		if (n == 1 && p[0] == '.' && last && d == &bb->root && type == 'd') {
			bb->root.mtime_ns = mtime_ns ? mtime_ns : bb->root.mtime_ns;
			return 0; /* the root itself */
		}
		const char *why = bad_name(p, n);
		if (why)
			return FAIL("%.200s: %s", path, why);
		if (++depth > BND_DEPTH_MAX)
			return FAIL("%.200s: deeper than %d folders", path, BND_DEPTH_MAX);
		struct bnode *c = child(d, p, n);
		/* a folder may be named again (two sources, or a tar listing it twice); a file or
		 * a link never */
		if (c && (c->type != 'd' || (last && type != 'd')))
			return FAIL("%.200s: given twice, or below a file", path);
		if (!c && !(c = add_child(bb, d, p, n)))
			return FAIL("%.200s: more than %d entries, or out of memory", path,
				    BND_MAX_NODES);
		if (last) {
			c->type = type;
			c->perm = perm & 07777;
			c->mtime_ns = mtime_ns;
			if (type != 'd' && len && !(c->data = malloc(len)))
				return FAIL("out of memory");
			if (type != 'd' && len)
				memcpy(c->data, data, len);
			c->len = type == 'd' ? 0 : len;
			bb->bytes += type == 'f' ? len : 0;
			return 0;
		}
		d = c;
		p = e + 1;
	}
}

static int by_name(const void *a, const void *b)
{
	return strcmp((*(struct bnode *const *)a)->name, (*(struct bnode *const *)b)->name);
}

static const uint32_t type_mode[128] = {['f'] = S_IFREG, ['d'] = S_IFDIR, ['l'] = S_IFLNK};

struct packer {
	struct bnd_node *nodes;
	char *names;
	uint8_t *data;
	uint32_t next;
	size_t names_len, data_len;
};

/* node index i is n; its children get the next free indices, breadth first */
static void place(struct packer *pk, struct bnode *n, uint32_t i, uint32_t parent)
{
	struct bnd_node *o = &pk->nodes[i];
	o->parent = parent;
	o->mode = type_mode[n->type] | n->perm;
	o->name_off = (uint32_t)pk->names_len;
	o->name_len = n->name ? (uint32_t)strlen(n->name) : 0;
	memcpy(pk->names + pk->names_len, n->name ? n->name : "", o->name_len + 1);
	pk->names_len += o->name_len + 1;
	o->size = n->len;
	o->mtime_ns = n->mtime_ns;
	if (n->len >= BND_PAGE) /* mappable as it is: its own pages, zero past its end */
		pk->data_len = bnd_page_up(pk->data_len);
	o->data_off = pk->data_len;
	if (n->len)
		memcpy(pk->data + pk->data_len, n->data, n->len);
	pk->data_len += n->len >= BND_PAGE ? bnd_page_up(n->len) : (n->len + 7) & ~7ULL;
	if (n->nkids)
		qsort(n->kids, n->nkids, sizeof(*n->kids), by_name);
	o->first = pk->next;
	o->count = (uint32_t)n->nkids;
	pk->next += (uint32_t)n->nkids;
}

static void place_kids(struct packer *pk, struct bnode *n, uint32_t i)
{
	uint32_t first = pk->nodes[i].first;
	for (size_t k = 0; k < n->nkids; k++)
		place(pk, n->kids[k], first + (uint32_t)k, i);
	for (size_t k = 0; k < n->nkids; k++)
		place_kids(pk, n->kids[k], first + (uint32_t)k);
}

static void sizes(const struct bnode *n, size_t *names, size_t *data)
{
	*names += (n->name ? strlen(n->name) : 0) + 1;
	*data += n->len >= BND_PAGE ? bnd_page_up(n->len) + BND_PAGE : (n->len + 7) & ~7ULL;
	for (size_t i = 0; i < n->nkids; i++)
		sizes(n->kids[i], names, data);
}

void *bnd_block_new(size_t total, int *fd)
{
	*fd = memfd_create("ember-bundle", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (*fd < 0)
		return MAP_FAILED;
	void *mem = ftruncate(*fd, (off_t)total)
			? MAP_FAILED
			: mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	if (mem == MAP_FAILED) {
		close(*fd);
		*fd = -1;
	}
	return mem;
}

void *bnd_block_seal(void *mem, size_t total, int fd)
{
	munmap(mem, total); /* no writable mapping may remain for the seal */
	/* The kernel refuses the write seal (EBUSY) while a page still has a reference beyond its
	 * mappings, after waiting ~75 ms for it to go: seen once under a loaded host (a page in
	 * another CPU's batch, or being migrated). Nothing of ours holds one: asked again, twice.
	 */
	int rc, tries = 0;
	while ((rc = fcntl(fd, F_ADD_SEALS,
			   F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) < 0 &&
	       errno == EBUSY && ++tries < 3)
		;
	if (rc < 0)
		return MAP_FAILED;
	return mmap(NULL, total, PROT_READ, MAP_SHARED, fd, 0);
}

struct bnd *bnd_pack(struct bnd_builder *bb, char *err, size_t errlen)
{
	size_t names = 0, data = 0;
	sizes(&bb->root, &names, &data);
	size_t nodes_len = bb->nodes * sizeof(struct bnd_node);
	size_t names_at = nodes_len, data_at = bnd_page_up(names_at + names);
	size_t total = bnd_page_up(data_at + data + 1);
	int fd = -1;
	struct bnd *b = calloc(1, sizeof(*b));
	void *mem = b ? bnd_block_new(total, &fd) : MAP_FAILED;
	if (mem == MAP_FAILED) {
		free(b);
		bnd_builder_free(bb);
		snprintf(err, errlen, "out of memory packing the files");
		return NULL;
	}
	struct packer pk = {.nodes = mem,
			    .names = (char *)mem + names_at,
			    .data = (uint8_t *)mem + data_at,
			    .next = 1};
	place(&pk, &bb->root, 0, 0);
	place_kids(&pk, &bb->root, 0);
	bnd_builder_free(bb);
	uint64_t digest = XXH3_64bits(mem, total);
	if ((mem = bnd_block_seal(mem, total, fd)) == MAP_FAILED) {
		close(fd);
		free(b);
		snprintf(err, errlen, "cannot map the packed files: %s", strerror(errno));
		return NULL;
	}
	b->mem = mem;
	b->mem_len = total;
	b->fd = fd;
	b->data_at = data_at;
	b->nodes = mem;
	b->nnodes = (uint32_t)(nodes_len / sizeof(struct bnd_node));
	b->names = (const char *)mem + names_at;
	b->data = (const uint8_t *)mem + data_at;
	b->digest = digest;
	return b;
}

void bnd_let_go(struct bnd *b)
{
	/* a kept file starts after its header's page (bnd_cache.c); a memfd at 0 */
	if (b && b->fd_off && b->mem_len > b->data_at)
		madvise(b->mem + b->data_at, b->mem_len - b->data_at, MADV_DONTNEED);
}

void bnd_free(struct bnd *b)
{
	if (!b)
		return;
	munmap(b->mem, b->mem_len);
	if (b->fd >= 0)
		close(b->fd);
	free(b->shared_off);
	free(b);
}
