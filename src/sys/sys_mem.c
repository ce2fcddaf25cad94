/* Memory syscalls: brk and mmap/munmap/mremap/mprotect/madvise inside guest RAM. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "sys/sys.h"
#include "fd/fd.h"
#include "fs/fs.h"
#include "fs/fs_tmp.h"

#define PAGE	 EMBER_PAGE_SIZE
#define PROT_ALL (PROT_READ | PROT_WRITE | PROT_EXEC)
#define PROT_SEM 0x8 /* Linux accepts it in mprotect; it means nothing here */

static uint64_t page_up(uint64_t x)
{
	return (x + PAGE - 1) & ~(PAGE - 1);
}

/* gives [start, start+len) back to the machine: it reads as zero until written */
static int discard(struct sys_state *st, uint64_t start, uint64_t len)
{
	if (st->discarded) /* told first: what serves its pages must not put them back */
		st->discarded(st->discarded_ctx, start, len);
	int rc = vm_zero(st->vm, start, len);
	/* what read as something else may read as zero now, also where the program cannot write
	 * (madvise on read-only memory): the reset puts that range back too */
	sys_note_writable(st, start, start + len);
	return rc;
}

/* Maps in both the bookkeeping and the machine; fresh anonymous pages must read as zero. */
static int map_range(struct sys_state *st, uint64_t start, uint64_t len, int prot, int zero)
{
	sys_sites_gone(st, start, start + len); /* what is there goes, or is mapped over */
	sys_shm_cut(st, start, start + len);
	sys_shmem_cut(st, start, start + len);
	if (zero && discard(st, start, len))
		return -ENOMEM;
	if (sys_vma_map(st, start, start + len, prot))
		return -ENOMEM;
	/* the machine refuses (no KVM memory slot to be had): nothing is left mapped there, as
	 * Linux leaves a failed MAP_FIXED's range, so that a brk or mmap may take it again */
	if (vm_protect(st->vm, start, len, prot)) {
		sys_vma_unmap(st, start, start + len);
		vm_protect(st->vm, start, len, 0);
		return -ENOMEM;
	}
	if (prot & PROT_WRITE)
		sys_note_writable(st, start, start + len);
	return 0;
}

static int unmap_range(struct sys_state *st, uint64_t start, uint64_t len)
{
	sys_sites_gone(st, start, start + len);
	sys_shm_cut(st, start, start + len);
	sys_shmem_cut(st, start, start + len);
	if (sys_vma_unmap(st, start, start + len))
		return -ENOMEM;
	vm_protect(st->vm, start, len, 0);
	discard(st, start, len);
	return 0;
}

static int user_range(const struct sys_state *st, uint64_t start, uint64_t len)
{
	return start >= EMBER_SYS_END && start % PAGE == 0 && len <= vm_user_top(st->vm) &&
	       start <= vm_user_top(st->vm) - len;
}

static long sys_brk(struct sys_state *st, const uint64_t a[6])
{
	return sys_brk_to(st, a[0]);
}

/* brk: grows page by page until it would touch a mapping; returns the break it has */
long sys_brk_to(struct sys_state *st, uint64_t want)
{
	uint64_t cur = st->brk_cur;
	/* beyond the mmap area it could never grow (and near 2^64 its page would wrap to 0) */
	if (want < st->proc.brk_start || want > st->proc.mmap_hi)
		return (long)cur;
	uint64_t old_end = page_up(cur), new_end = page_up(want);
	/* RLIMIT_DATA holds a heap that grows; in guest mode a call is the runtime's, asking for
	 * room past the break it keeps itself (sys_rlim.c) */
	if ((new_end > old_end || st->proc.guest) &&
	    !sys_rlim_may_brk(st, new_end - page_up(st->proc.brk_start)))
		return (long)cur;
	if (new_end > old_end) {
		if (new_end > st->proc.mmap_hi || !sys_vma_free_range(st, old_end, new_end))
			return (long)cur;
		if (map_range(st, old_end, new_end - old_end, PROT_READ | PROT_WRITE, 0))
			return (long)cur;
	} else if (new_end < old_end) {
		unmap_range(st, new_end, old_end - new_end);
	}
	st->brk_cur = want;
	return (long)want;
}

static long sys_mmap(struct sys_state *st, const uint64_t a[6])
{
	uint64_t addr = a[0], len = page_up(a[1]);
	int prot = (int)a[2] & PROT_ALL, flags = (int)a[3]; /* Linux ignores other prot bits */
	if (a[1] == 0)
		return -EINVAL;
	if (len < a[1])
		return -ENOMEM;
	int file = !(flags & MAP_ANONYMOUS), type = flags & MAP_TYPE;
	size_t exe_len;
	if (file && sys_dev_zero(st, a[4])) { /* /dev/zero: anonymous memory, shared or not */
		long zrc = sys_dev_zero_check(st, a[4], prot, flags);
		if (zrc)
			return zrc;
		file = 0;
		type = type == MAP_SHARED_VALIDATE ? MAP_SHARED : type;
	}
	if (file && !sys_fs_is(st, a[4]) && !sys_tmp_file(st, a[4]) &&
	    !sys_procfs_exe(st, a[4], &exe_len))
		return sys_fs_map_refused(st, a[4]);
	long frc = file ? sys_fs_map_check(st, a[4], prot, flags, a[5]) : 0;
	if (frc)
		return frc;
	/* a file's end past the largest offset: Linux's EOVERFLOW */
	if (file && a[5] / PAGE > (INT64_MAX - len) / PAGE)
		return -EOVERFLOW;
	/* as Linux: MAP_SHARED_VALIDATE only for a file (its flags are all known here) */
	if (type != MAP_PRIVATE && type != MAP_SHARED && (type != MAP_SHARED_VALIDATE || !file))
		return -EINVAL;
	long lrc = sys_rlim_may_map(st, len, prot, type != MAP_PRIVATE); /* RLIMIT_AS, _DATA */
	if (lrc)
		return lrc;
	if (addr % PAGE) { /* a fixed address must be aligned; a hint is only a hint */
		if (flags & (MAP_FIXED | MAP_FIXED_NOREPLACE))
			return -EINVAL;
		addr = 0;
	}
	if (flags & (MAP_FIXED | MAP_FIXED_NOREPLACE) && sys_far_is(addr, len)) {
		/* beyond guest memory only a reservation can be (it holds nothing) */
		if (prot || file)
			return -ENOMEM;
		if ((flags & MAP_FIXED_NOREPLACE) && sys_far_taken(st, addr, len))
			return -EEXIST;
		return sys_far_map(st, addr, len);
	}
	if (flags & (MAP_FIXED | MAP_FIXED_NOREPLACE)) {
		if (!user_range(st, addr, len))
			return -ENOMEM;
		/* as Linux: MAP_FIXED_NOREPLACE never replaces, with MAP_FIXED or without */
		if ((flags & MAP_FIXED_NOREPLACE) && !sys_vma_free_range(st, addr, addr + len))
			return -EEXIST;
	} else if (!addr || !user_range(st, addr, len) || addr + len > st->proc.mmap_hi ||
		   addr < page_up(st->brk_cur) || !sys_vma_free_range(st, addr, addr + len)) {
		addr = sys_vma_find_gap(st, len);
		/* a reservation of more than guest memory holds: beyond it, costing nothing */
		if (!addr && !prot && !file)
			return sys_far_map(st, 0, len);
		if (!addr)
			return -ENOMEM;
	}
	int rc = map_range(st, addr, len, prot, 1);
	struct sys_obj *tmp = file ? sys_tmp_file(st, a[4]) : NULL;
	if (!rc && tmp)
		sys_shm_flush(st, tmp->id); /* what other shared mappings wrote is the file's */
	if (!rc &&
	    file) /* a copy of the file's bytes: private, or kept one with it (fs_tmp_map.c) */
		rc = sys_fs_map_fill(st, a[4], addr, len, a[5]);
	if (!rc && tmp) /* kept one with the file when shared; past its end, SIGBUS */
		rc = sys_shm_add(st, addr, addr + len, tmp->id, a[5], type == MAP_PRIVATE);
	if (!rc && !file && type != MAP_PRIVATE) /* a fork child's too (sys_shmem.c) */
		rc = sys_shmem_map(st, addr, len);
	/* a library's code, as ld.so maps it (each segment at its final permissions) */
	if (!rc && file && (prot & PROT_EXEC))
		sys_sites_mapped(st, a[4], addr, len, a[5]);
	return rc ? rc : (long)addr;
}

static long sys_munmap(struct sys_state *st, const uint64_t a[6])
{
	uint64_t len = page_up(a[1]);
	if (a[1] && len >= a[1] && a[0] % PAGE == 0 && sys_far_is(a[0], len))
		return sys_far_unmap(st, a[0], len) ? -ENOMEM : 0;
	if (a[1] == 0 || !user_range(st, a[0], len))
		return -EINVAL;
	return unmap_range(st, a[0], len);
}

static long sys_mprotect(struct sys_state *st, const uint64_t a[6])
{
	uint64_t len = page_up(a[1]);
	int prot = (int)a[2];
	/* Linux's order: alignment, an empty range, overflow, the permissions */
	if (a[0] % PAGE)
		return -EINVAL;
	if (a[1] == 0)
		return 0;
	if (len < a[1] || a[0] + len <= a[0])
		return -ENOMEM;
	if (prot & ~(PROT_ALL | PROT_SEM))
		return -EINVAL;
	prot &= PROT_ALL;
	if (sys_far_is(a[0], len)) /* a reservation stays one: nothing there can be accessed */
		return prot || !sys_far_taken(st, a[0], len) ? -ENOMEM : 0;
	if (!user_range(st, a[0], len))
		return -ENOMEM;
	/* the machine's room before the books change: a refusal then changes nothing */
	if (prot && vm_reserve(st->vm, a[0], len))
		return -ENOMEM;
	int rc = sys_vma_protect(st, a[0], a[0] + len, prot);
	if (rc)
		return rc;
	if (prot & PROT_WRITE)
		sys_note_writable(st, a[0], a[0] + len);
	if (vm_protect(st->vm, a[0], len, prot))
		return -ENOMEM;
	sys_shm_bus_range(st, a[0], a[0] + len); /* a file's pages past its end still fault */
	return 0;
}

static long sys_mremap(struct sys_state *st, const uint64_t a[6])
{
	uint64_t old = a[0], old_len = page_up(a[1]), new_len = page_up(a[2]);
	int flags = (int)a[3];
	if (old % PAGE || new_len == 0 || (flags & ~MREMAP_MAYMOVE))
		return -EINVAL; /* MREMAP_FIXED and MREMAP_DONTUNMAP are not supported */
	const struct sys_vma *v = sys_vma_find(st, old);
	if (v && old_len == 0)
		return -EINVAL; /* Linux: only a shared mapping can be duplicated that way */
	if (!v || !user_range(st, old, old_len))
		return -EFAULT;
	if (new_len <= old_len) { /* as Linux: the tail goes, whatever mappings it spans */
		if (new_len < old_len)
			unmap_range(st, old + new_len, old_len - new_len);
		return (long)old;
	}
	if (v->end < old + old_len)
		return -EFAULT; /* growing needs the range to be one mapping */
	int prot = v->prot;
	uint64_t grow = new_len - old_len;
	if (user_range(st, old + old_len, grow) && old + new_len <= st->proc.mmap_hi &&
	    sys_vma_free_range(st, old + old_len, old + new_len)) {
		int rc = map_range(st, old + old_len, grow, prot, 1);
		return rc ? rc : (long)old;
	}
	if (!(flags & MREMAP_MAYMOVE))
		return -ENOMEM;
	uint64_t to = sys_vma_find_gap(st, new_len);
	if (!to)
		return -ENOMEM;
	int rc = map_range(st, to, new_len, prot, 1);
	if (rc)
		return rc;
	void *src = vm_guest(st->vm, old, old_len), *dst = vm_guest(st->vm, to, old_len);
	if (!src || !dst)
		return -EFAULT;
	memcpy(dst, src, old_len);
	sys_sites_moved(st, old, old_len, to);
	unmap_range(st, old, old_len);
	return (long)to;
}

/* madvise's discard: shared anonymous memory keeps its pages (the other processes' too) */
static void discard_private(struct sys_state *st, uint64_t lo, uint64_t hi)
{
	if (!st->nshmem) {
		discard(st, lo, hi - lo);
		return;
	}
	for (uint64_t p = lo; p < hi;) {
		uint64_t q = p;
		int shared = sys_shmem_covers(st, p);
		while (q < hi && sys_shmem_covers(st, q) == shared)
			q += PAGE;
		if (!shared)
			discard(st, p, q - p);
		p = q;
	}
}

static long sys_madvise(struct sys_state *st, const uint64_t a[6])
{
	uint64_t len = page_up(a[1]);
	/* Linux's order: the advice, alignment, overflow, an empty range */
	if (!EMBER_MADV_KNOWN((long)(int)a[2]) || a[0] % PAGE || len < a[1] || a[0] + len < a[0])
		return -EINVAL;
	if (a[1] == 0)
		return 0;
	if (sys_far_is(a[0], len)) /* advice on a reservation changes nothing */
		return sys_far_taken(st, a[0], len) ? 0 : -ENOMEM;
	if (!user_range(st, a[0], len))
		return -ENOMEM;
	int advice = (int)a[2];
	if (advice == MADV_DONTNEED || advice == MADV_FREE || advice == MADV_MERGEABLE)
		for (uint64_t p = a[0]; p < a[0] + len; p += PAGE)
			if (!sys_vma_find(st, p))
				return -ENOMEM;
	if (advice == MADV_DONTNEED || advice == MADV_FREE) {
		/* a shared file mapping keeps its file's bytes: they come back */
		sys_shm_flush_range(st, a[0], a[0] + len);
		discard_private(st, a[0], a[0] + len);
		sys_shm_refresh_range(st, a[0], a[0] + len);
	}
	if (advice == MADV_MERGEABLE && st->merge)
		return st->merge(st->merge_ctx, st->vm, a[0], len);
	return 0;
}

/* mincore: a byte per page of [addr, addr+len), 1 where the page holds memory (vm_resident);
 * Linux's order: alignment (EINVAL), the range (ENOMEM), the vector (EFAULT), then every page
 * mapped (ENOMEM); a reservation beyond guest memory holds none */
static long sys_mincore(struct sys_state *st, const uint64_t a[6])
{
	uint64_t len = page_up(a[1]), start = a[0], end = start + len;
	if (start % PAGE)
		return -EINVAL;
	if (len < a[1] || end < start || end > (1ULL << 47))
		return -ENOMEM;
	if (!len)
		return 0;
	if (!sys_user(st, a[2], len / PAGE, PROT_WRITE))
		return -EFAULT;
	if (sys_far_is(start, len)) {
		if (!sys_far_taken(st, start, len))
			return -ENOMEM;
		uint8_t *vec = sys_user(st, a[2], len / PAGE, PROT_WRITE);
		memset(vec, 0, len / PAGE);
		return 0;
	}
	for (uint64_t p = start; p < end;) {
		const struct sys_vma *v = sys_vma_find(st, p);
		if (!v)
			return -ENOMEM;
		p = v->end;
	}
	uint8_t *vec = malloc(len / PAGE);
	if (!vec)
		return -ENOMEM;
	long rc = vm_resident(st->vm, start, len, vec) ? -ENOMEM : 0;
	if (!rc && sys_put(st, a[2], vec, len / PAGE))
		rc = -EFAULT;
	free(vec);
	return rc;
}

/* EMBER_SYS_ARENA, from the in-guest runtime: fresh writable memory for its arena, placed as an
 * mmap would be */
long sys_map_fresh(struct sys_state *st, uint64_t len, int prot, int zero)
{
	uint64_t addr = sys_vma_find_gap(st, len);
	if (!addr)
		return -ENOMEM;
	int rc = map_range(st, addr, len, prot, zero);
	return rc ? rc : (long)addr;
}

int sys_unmap_range(struct sys_state *st, uint64_t addr, uint64_t len)
{
	return unmap_range(st, addr, len);
}

long sys_arena_grow(struct sys_state *st, uint64_t len0)
{
	uint64_t len = page_up(len0);
	if (len0 == 0 || len < len0)
		return -EINVAL;
	return sys_map_fresh(st, len, PROT_READ | PROT_WRITE, 1);
}

const struct sys_entry sys_mem_table[] = {
    {SYS_brk, "brk", sys_brk, 0, NULL},
    {SYS_mmap, "mmap", sys_mmap, 0, NULL},
    {SYS_munmap, "munmap", sys_munmap, 0, NULL},
    {SYS_mprotect, "mprotect", sys_mprotect, 0, NULL},
    {SYS_mremap, "mremap", sys_mremap, 0, NULL},
    {SYS_madvise, "madvise", sys_madvise, 0, NULL},
    {SYS_mincore, "mincore", sys_mincore, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};
