/* The bundle's folders listed (getdents64, and the old getdents's layout) and its files mapped
 * (mmap of a descriptor). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "fd/fd.h"
#include "fs/fs.h"
#include "fs/fs_tmp.h"

struct dirent64_hdr {
	uint64_t ino;
	int64_t off;
	uint16_t reclen;
	uint8_t type;
} __attribute__((packed));

static const struct {
	uint32_t mode;
	uint8_t type;
} dtypes[] = {{S_IFREG, 8 /* DT_REG */}, {S_IFDIR, 4 /* DT_DIR */}, {S_IFLNK, 10 /* DT_LNK */}};

static uint8_t dtype(uint32_t mode)
{
	for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
		if ((mode & S_IFMT) == dtypes[i].mode)
			return dtypes[i].type;
	return 0;
}

/* entry i of folder d: ".", "..", then its children by name */
static void entry(const struct bnd *b, uint32_t d, uint64_t i, uint32_t *node, const char **name,
		  size_t *len)
{
	const struct bnd_node *n = &b->nodes[d];
	if (i < 2) {
		*node = i == 0 ? d : n->parent;
		*name = i == 0 ? "." : "..";
		*len = i + 1;
		return;
	}
	*node = n->first + (uint32_t)(i - 2);
	*name = b->names + b->nodes[*node].name_off;
	*len = b->nodes[*node].name_len;
}

/* one entry of a listing at a[1]: 0, or -EINVAL when it does not fit (nothing written yet),
 * -EFAULT */
/* the old getdents's: the name after the length, its type in the record's last byte */
struct dirent_hdr {
	uint64_t ino;
	int64_t off;
	uint16_t reclen;
} __attribute__((packed));

static long put_entry(struct sys_state *st, const uint64_t a[6], int old, uint64_t *done,
		      uint64_t ino, int64_t next, uint8_t type, const char *name, size_t len)
{
	size_t head = old ? sizeof(struct dirent_hdr) : sizeof(struct dirent64_hdr);
	size_t reclen = (head + len + 1 + old + 7) & ~(size_t)7;
	if (*done + reclen > a[2] || a[2] > INT32_MAX) /* Linux's count is an int */
		return -EINVAL;
	uint8_t *p = sys_user(st, a[1] + *done, reclen, PROT_WRITE);
	if (!p)
		return -EFAULT;
	struct dirent64_hdr h = {ino, next, (uint16_t)reclen, type};
	memset(p, 0, reclen);
	memcpy(p, &h, head); /* the old header is the new one's first part */
	memcpy(p + head, name, len);
	if (old)
		p[reclen - 1] = type;
	*done += reclen;
	return 0;
}

/* a /tmp folder: ".", "..", then its children in node order; pos is 0, 1, or 2 + the next node
 * to look at */
static long tmp_getdents(struct sys_state *st, struct sys_obj *f, const uint64_t a[6], int old)
{
	const struct sys_tmp *t = st->tmp;
	if (!S_ISDIR(t->n[f->id].mode))
		return -ENOTDIR;
	uint64_t done = 0;
	for (; f->pos < 2 + (uint64_t)t->nn; f->pos++) {
		uint64_t i = f->pos < 2 ? f->id : f->pos - 2;
		if (f->pos == 1)
			i = t->n[f->id].parent; /* /tmp's own parent: itself, as far as it knows */
		if (f->pos >= 2 && (!i || t->n[i].mode == SYS_TMP_FREE || t->n[i].parent != f->id))
			continue;
		const char *name = f->pos == 0 ? "." : f->pos == 1 ? ".." : t->n[i].name;
		uint64_t ino = (t->n[i].same ? t->n[i].same : i) + 1; /* a hard link: its file's */
		long rc = put_entry(st, a, old, &done, ino, (int64_t)f->pos + 1,
				    dtype(t->n[i].mode), name, strlen(name));
		if (rc)
			return done ? (long)done : rc;
	}
	return (long)done;
}

/* a made /proc folder (fs_proc.c's entries); pos is where the next one is */
static long proc_getdents(struct sys_state *st, struct sys_obj *f, const uint64_t a[6], int old)
{
	if (!sys_procfs_is_dir(f))
		return -ENOTDIR;
	uint64_t done = 0, ino, next;
	uint8_t type;
	char name[32];
	while (sys_procfs_entry(st, f, f->pos, &ino, &type, name, sizeof(name), &next)) {
		long rc =
		    put_entry(st, a, old, &done, ino, (int64_t)next, type, name, strlen(name));
		if (rc)
			return done ? (long)done : rc;
		f->pos = next;
	}
	return (long)done;
}

/* a[0]'s entries into a[2] bytes at a[1]; old: the old getdents's layout */
static long list_dir(struct sys_state *st, const uint64_t a[6], int old)
{
	struct sys_obj *pf = sys_fd_obj(st, a[0]);
	if (pf && pf->kind == SYS_KIND_PROC)
		return proc_getdents(st, pf, a, old);
	struct sys_obj *tf = sys_tmp_file(st, a[0]);
	if (tf)
		return tmp_getdents(st, tf, a, old);
	struct sys_obj *f = sys_fs_file(st, a[0]);
	if (!f)
		return sys_fd_obj(st, a[0]) ? -ENOTDIR : -EBADF;
	const struct bnd *b = st->bundle;
	if (!bnd_is(b, f->id, S_IFDIR))
		return -ENOTDIR;
	uint64_t total = 2 + b->nodes[f->id].count, done = 0;
	while (f->pos < total) {
		uint32_t node;
		const char *name;
		size_t len;
		entry(b, f->id, f->pos, &node, &name, &len);
		long rc = put_entry(st, a, old, &done, node + 1, (int64_t)f->pos + 1,
				    dtype(b->nodes[node].mode), name, len);
		if (rc)
			return done ? (long)done : rc;
		f->pos++;
	}
	return (long)done;
}

static long sys_getdents64(struct sys_state *st, const uint64_t a[6])
{
	return list_dir(st, a, 0);
}

static long sys_getdents(struct sys_state *st, const uint64_t a[6])
{
	return list_dir(st, a, 1);
}

long sys_fs_map_refused(struct sys_state *st, uint64_t fd)
{
	struct sys_obj *o = sys_fd_obj(st, fd);
	if (!o)
		return -EBADF;
	/* as Linux: a descriptor not open for reading first (a pipe's write end); Ember's own
	 * (the request, the output) as before; the others have no pages */
	return o->kind == SYS_KIND_STD || (o->flags & O_ACCMODE) == O_WRONLY ? -EACCES : -ENODEV;
}

long sys_fs_map_check(struct sys_state *st, uint64_t fd, int prot, int flags, uint64_t off)
{
	size_t exe_len;
	if (sys_procfs_exe(st, fd, &exe_len)) /* read-only: a shared writable mapping, EACCES */
		return off % EMBER_PAGE_SIZE					  ? -EINVAL
		       : (flags & MAP_TYPE) != MAP_PRIVATE && (prot & PROT_WRITE) ? -EACCES
										  : 0;
	struct sys_obj *t = sys_tmp_file(st, fd);
	if (t) { /* a copy, kept one with the file when shared (fs_tmp_map.c) */
		if (off % EMBER_PAGE_SIZE)
			return -EINVAL;
		if (!S_ISREG(st->tmp->n[t->id].mode))
			return -ENODEV;
		if ((t->flags & O_ACCMODE) == O_WRONLY)
			return -EACCES;
		/* a shared mapping writes the file: the descriptor must allow it (fs_tmp_map.c) */
		return (flags & MAP_TYPE) != MAP_PRIVATE && (prot & PROT_WRITE) &&
			       (t->flags & O_ACCMODE) != O_RDWR
			   ? -EACCES
			   : 0;
	}
	struct sys_obj *f = sys_fs_file(st, fd);
	if (!f)
		return -EBADF;
	if (off % EMBER_PAGE_SIZE)
		return -EINVAL;
	if (!bnd_is(st->bundle, f->id, S_IFREG))
		return -ENODEV;
	/* the descriptor is read-only: a shared writable mapping could change the file */
	if ((flags & MAP_TYPE) != MAP_PRIVATE && (prot & PROT_WRITE))
		return -EACCES;
	return 0;
}

int sys_fs_map_fill(struct sys_state *st, uint64_t fd, uint64_t addr, uint64_t len, uint64_t off)
{
	struct sys_obj *t = sys_tmp_file(st, fd);
	size_t size = 0;
	const uint8_t *bytes = t ? st->tmp->n[t->id].data : sys_procfs_exe(st, fd, &size);
	if (t)
		size = st->tmp->n[t->id].size;
	if (t || bytes) { /* a copy: /tmp's files and the program's are in host memory */
		uint64_t k = off < size ? size - off : 0;
		k = k < len ? k : len;
		uint8_t *dst = k ? vm_guest(st->vm, addr, k) : NULL;
		if (k && !dst)
			return -EFAULT;
		if (k)
			memcpy(dst, bytes + off, k);
		return 0;
	}
	const struct bnd *b = st->bundle;
	const struct bnd_node *n = &b->nodes[sys_fs_file(st, fd)->id];
	uint64_t k = off < n->size ? n->size - off : 0;
	k = k < len ? k : len;
	if (!k)
		return 0;
	/* a file with pages of its own: those of the bundle, shared copy-on-write (KVM); else, and
	 * wherever that fails, a copy */
	uint64_t pages = bnd_page_up(k);
	if (n->size >= BND_PAGE && b->fd >= 0 &&
	    !sys_fs_map_pages(st->vm, b, addr, pages, n->data_off + off))
		return 0;
	uint8_t *dst = vm_guest(st->vm, addr, k); /* the range was just mapped: checked there */
	if (!dst)
		return -EFAULT;
	bnd_want(st->bundle, n->data_off + off, k);
	memcpy(dst, st->bundle->data + n->data_off + off, k);
	return 0;
}

const struct sys_entry sys_fs_dir_table[] = {
    {SYS_getdents64, "getdents64", sys_getdents64, 0, NULL},
    {SYS_getdents, "getdents", sys_getdents, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};
