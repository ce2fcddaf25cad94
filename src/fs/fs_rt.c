/* The bundle's files the in-guest runtime reads itself: a read-only window of the file's pages
 * in guest memory and its entry in the runtime's table, made when the host serves a read. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "fd/fd.h"
#include "fs/fs.h"

/* a file still open at the snapshot point gets its window there, when it is at most this large:
 * the snapshot then holds its bytes (one copy for the function's virtines, docs/memory.md), and
 * every invocation reads it without an exit or a fault on a fresh window */
#define SYS_FS_SNAP_WINDOW (16ULL << 20)

_Static_assert(SYS_FS_FD0 == EMBER_RT_FD0 && SYS_FS_FILES == EMBER_RT_NFILES,
	       "the runtime's file table and the host's descriptors differ");
_Static_assert(EMBER_RT_FILES + EMBER_RT_NFILES * sizeof(struct ember_rt_file) <= EMBER_RT_BOUNCE &&
		   EMBER_RT_FILES >= EMBER_RT_CTL + sizeof(struct ember_rt_ctl),
	       "the runtime's file table overlaps the control block or the bounce slot");

static struct ember_rt_file *entry(struct sys_state *st, size_t i)
{
	return vm_guest(st->vm, EMBER_RT_FILES + i * sizeof(struct ember_rt_file),
			sizeof(struct ember_rt_file));
}

/* the slot of fd in the runtime's table, or -1: it has none */
static long index_of(uint64_t fd)
{
	return fd >= SYS_FS_FD0 && fd < SYS_FS_FD0 + SYS_FS_FILES ? (long)(fd - SYS_FS_FD0) : -1;
}

/* where the file's bytes are in the bundle's memfd: the page they start in, and their offset
 * in it */
static void place_of(const struct sys_state *st, const struct sys_obj *f, uint64_t *page,
		     uint64_t *in_page)
{
	const struct bnd *b = st->bundle;
	uint64_t at = b->fd_off + b->data_at + b->nodes[f->id].data_off;
	*page = at & ~(EMBER_PAGE_SIZE - 1);
	*in_page = at - *page;
}

static uint64_t window_len(const struct sys_state *st, const struct sys_obj *f)
{
	uint64_t page, in_page;
	place_of(st, f, &page, &in_page);
	return bnd_page_up(in_page + st->bundle->nodes[f->id].size);
}

void sys_fs_rt_pull(struct sys_state *st, uint64_t fd, struct sys_obj *f)
{
	long i = index_of(fd);
	if (i < 0 || !st->fs_win[i])
		return;
	struct ember_rt_file *e = entry(st, (size_t)i);
	/* guest memory: any value is the program's own doing, but a position stays one Linux
	 * could have (below 2^63) */
	uint64_t pos = e ? e->pos : f->pos;
	f->pos = pos > INT64_MAX ? INT64_MAX : pos;
}

void sys_fs_rt_push(struct sys_state *st, uint64_t fd, struct sys_obj *f)
{
	long i = index_of(fd);
	if (i < 0 || !st->fs_win[i])
		return;
	uint64_t page, in_page;
	place_of(st, f, &page, &in_page);
	struct ember_rt_file *e = entry(st, (size_t)i);
	struct stat s;
	sys_fs_stat_of(st->bundle, f->id, &s);
	if (e)
		*e = (struct ember_rt_file){.addr = st->fs_win[i] + in_page,
					    .size = (uint64_t)s.st_size,
					    .pos = f->pos,
					    .ino = s.st_ino,
					    .mode = s.st_mode,
					    .mtime_nsec = (uint32_t)s.st_mtim.tv_nsec,
					    .mtime_sec = s.st_mtim.tv_sec};
}

/* the window's entry gone (the runtime hands the file's calls to the host again) */
static void forget(struct sys_state *st, size_t i)
{
	struct sys_obj *f = sys_fd_obj(st, SYS_FS_FD0 + i);
	if (f)
		sys_fs_rt_pull(st, SYS_FS_FD0 + i, f);
	st->fs_win[i] = 0;
	struct ember_rt_file *e = entry(st, i);
	if (e)
		memset(e, 0, sizeof(*e));
}

void sys_fs_rt_window(struct sys_state *st, uint64_t fd, struct sys_obj *f)
{
	long i = index_of(fd);
	const struct bnd_node *n = &st->bundle->nodes[f->id];
	/* guest mode only, a file with bytes that no other descriptor shares (its position is the
	 * entry's), where guest memory can map the bundle's pages (KVM: the ptrace stub sees guest
	 * memory through its memfd only), read at all (not O_PATH) */
	if (i < 0 || f->refs != 1 || !st->proc.guest || st->fs_win[i] || !n->size ||
	    (f->flags & O_PATH) || st->bundle->fd < 0 || vm_backend_of(st->vm) != VM_BACKEND_KVM ||
	    !bnd_is(st->bundle, f->id, S_IFREG))
		return;
	uint64_t len = window_len(st, f), page, in_page;
	place_of(st, f, &page, &in_page);
	long addr = sys_map_fresh(st, len, PROT_READ, 0);
	if (addr < 0)
		return;
	const struct bnd *b = st->bundle;
	if (sys_fs_map_pages(st->vm, b, (uint64_t)addr, len, page - b->fd_off - b->data_at)) {
		sys_unmap_range(st, (uint64_t)addr, len);
		return;
	}
	st->fs_win[i] = (uint64_t)addr;
	sys_fs_rt_push(st, fd, f);
}

void sys_fs_rt_opened(struct sys_state *st, uint64_t fd, struct sys_obj *f)
{
	/* a larger one would take its pages into the snapshot if it stays open there: its
	 * window comes with its first read, as before */
	if (st->bundle->nodes[f->id].size <= SYS_FS_SNAP_WINDOW)
		sys_fs_rt_window(st, fd, f);
}

void sys_fs_rt_closed(struct sys_state *st)
{
	struct ember_rt_ctl *c = st->bundle ? vm_guest(st->vm, EMBER_RT_CTL, sizeof(*c)) : NULL;
	if (!c || c->magic != EMBER_RT_MAGIC || !__atomic_load_n(&c->closed, __ATOMIC_ACQUIRE))
		return;
	uint64_t bits = __atomic_exchange_n(&c->closed, 0, __ATOMIC_ACQ_REL);
	/* guest memory: a bit the program set itself closes a file of its own, as close would */
	for (size_t i = 0; i < SYS_FS_FILES; i++) {
		struct sys_obj *o = bits & (1ULL << i) ? sys_fd_obj(st, SYS_FS_FD0 + i) : NULL;
		if (o && o->kind == SYS_KIND_FILE)
			sys_fd_close(st, SYS_FS_FD0 + i);
	}
}

/* the file on window i's descriptor */
static struct sys_obj *file_of(struct sys_state *st, size_t i)
{
	struct sys_obj *f = sys_fd_obj(st, SYS_FS_FD0 + i);
	return f && f->kind == SYS_KIND_FILE ? f : NULL;
}

void sys_fs_rt_unmapped(struct sys_state *st, uint64_t start, uint64_t end)
{
	if (!st->bundle)
		return;
	for (size_t i = 0; i < SYS_FS_FILES; i++) {
		uint64_t w = st->fs_win[i];
		struct sys_obj *f = w ? file_of(st, i) : NULL;
		if (f && w < end && start < w + window_len(st, f))
			forget(st, i);
	}
}

void sys_fs_rt_close(struct sys_state *st, uint64_t fd)
{
	long i = index_of(fd);
	struct sys_obj *f = i >= 0 && st->fs_win[i] ? file_of(st, (size_t)i) : NULL;
	if (f)
		sys_unmap_range(st, st->fs_win[i],
				window_len(st, f)); /* forgets it (sys_fs_rt_unmapped) */
	if (i >= 0 && st->fs_win[i])
		forget(st, (size_t)i);
}

void sys_fs_rt_snapshot(struct sys_state *st)
{
	/* the closes the runtime left pending are made first: the runtime's own read of the
	 * request (EMBER_HC_INPUT) is a snapshot point no served call precedes, and a file the
	 * program closed would stay open in the state saved, its window's pages in the snapshot */
	sys_fs_rt_closed(st);
	for (size_t i = 0; i < SYS_FS_FILES; i++) {
		struct sys_obj *f = file_of(st, i);
		if (!f)
			continue;
		sys_fs_rt_pull(st, SYS_FS_FD0 + i, f);
		if (st->bundle->nodes[f->id].size <= SYS_FS_SNAP_WINDOW)
			sys_fs_rt_window(st, SYS_FS_FD0 + i, f);
	}
	/* the files mapped so far (windows, the program's mmaps) are the snapshot's pages now */
	vm_keep_files(st->vm);
}

void sys_fs_rt_begin(struct sys_state *st)
{
	if (!st->bundle)
		return;
	for (size_t i = 0; i < SYS_FS_FILES; i++) {
		struct ember_rt_file *e = st->fs_win[i] ? NULL : entry(st, i);
		if (e && (e->addr || e->size || e->pos))
			memset(e, 0, sizeof(*e));
	}
}
