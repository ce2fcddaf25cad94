/* A guest process's memory as the families share it: the break, fresh mappings, sites,
 * reservations, /tmp and shared mappings, limits, the map (sys_mem.c and its neighbours). */
#ifndef EMBER_SYS_MEM_H
#define EMBER_SYS_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "sys/sys.h"

/* brk as the syscall does it (sys_mem.c): the break it has afterwards */
long sys_brk_to(struct sys_state *st, uint64_t want);
/* EMBER_SYS_ARENA (sys_mem.c): fresh writable memory for the runtime's arena */
long sys_arena_grow(struct sys_state *st, uint64_t len);

/* sys_mem.c: len bytes mapped where the program's next mmap would go, with prot (zero: made to
 * read as zero first); the address or -errno; and a range unmapped as munmap does */
long sys_map_fresh(struct sys_state *st, uint64_t len, int prot, int zero);
int sys_unmap_range(struct sys_state *st, uint64_t addr, uint64_t len);

/* sys_sites.c: the syscall sites of the bundle's file on fd, mapped executable at [addr,
 * addr+len) from file offset off, rewritten as the loader rewrites the program's (the call form
 * into the in-guest runtime where it may be, else the trapping one); and the runtime's record of
 * the sites in [start, end) forgotten, what is there being unmapped or replaced */
void sys_sites_mapped(struct sys_state *st, uint64_t fd, uint64_t addr, uint64_t len, uint64_t off);
void sys_sites_gone(struct sys_state *st, uint64_t start, uint64_t end);
/* mremap moved [from, from+len) to to: its sites are at their new place too */
void sys_sites_moved(struct sys_state *st, uint64_t from, uint64_t len, uint64_t to);

/* sys_far.c: reservations beyond guest memory, from SYS_FAR_BASE (1 TiB) to 2^47: a PROT_NONE
 * mapping that does not fit in guest RAM goes there, costing nothing; nothing there can be
 * made accessible (ENOMEM) */
#define SYS_FAR_BASE (1ULL << 40)
int sys_far_is(uint64_t addr, uint64_t len);
/* at addr (fixed, replacing what is reserved there) or, addr 0, the first free range: the
 * address or -ENOMEM */
long sys_far_map(struct sys_state *st, uint64_t addr, uint64_t len);
int sys_far_unmap(struct sys_state *st, uint64_t addr, uint64_t len);
int sys_far_taken(const struct sys_state *st, uint64_t addr, uint64_t len);

/* notes that [start, end) became writable (sys_vma.c) */
void sys_note_writable(struct sys_state *st, uint64_t start, uint64_t end);

/* /tmp files mapped MAP_SHARED (fs_tmp_map.c): a record of [start, end) mapping node from off;
 * flush writes what the program wrote there into the file, refresh the file into the mappings;
 * cut writes back and forgets [lo, hi); names: node is mapped (it lives on while it is) */
int sys_shm_add(struct sys_state *st, uint64_t start, uint64_t end, uint32_t node, uint64_t off,
		int priv);
/* the pages past the end of the files mapped in [lo, hi) made to fault (SIGBUS), the others
 * not (after mprotect, which sets them alike) */
void sys_shm_bus_range(struct sys_state *st, uint64_t lo, uint64_t hi);
int sys_shm_names(const struct sys_state *st, uint32_t node);
void sys_shm_flush(struct sys_state *st, uint32_t node);
void sys_shm_refresh(struct sys_state *st, uint32_t node);
void sys_shm_flush_range(struct sys_state *st, uint64_t lo, uint64_t hi);
void sys_shm_refresh_range(struct sys_state *st, uint64_t lo, uint64_t hi);
void sys_shm_cut(struct sys_state *st, uint64_t lo, uint64_t hi);
void sys_shm_free(struct sys_state *st);

/* RLIMIT_DATA and RLIMIT_AS kept to (sys_rlim.c) where memory is mapped and the break moves:
 * may_map and may_brk 0 or -ENOMEM; the program's mapped bytes; the in-guest runtime told of a
 * new RLIMIT_DATA (it then asks for every page past the break) */
int sys_rlim_may_map(const struct sys_state *st, uint64_t len, int prot, int shared);
int sys_rlim_may_brk(const struct sys_state *st, uint64_t heap);
uint64_t sys_rlim_mapped(const struct sys_state *st);
void sys_rlim_data_set(struct sys_state *st);

/* MAP_SHARED anonymous memory (sys_shmem.c): map puts a new memfd's pages at the fresh mapping
 * [addr, addr+len) (KVM; elsewhere it stays private); cut forgets [lo, hi) (the machine's
 * unmapping puts private memory there); covers: addr is such memory; inherit: a fork child
 * holds the same; remap maps them into the child's machine; free closes them all */
int sys_shmem_map(struct sys_state *st, uint64_t addr, uint64_t len);
void sys_shmem_cut(struct sys_state *st, uint64_t lo, uint64_t hi);
int sys_shmem_covers(const struct sys_state *st, uint64_t addr);
int sys_shmem_inherit(struct sys_state *to, const struct sys_state *from);
int sys_shmem_remap(struct sys_state *st);
void sys_shmem_free(struct sys_state *st);

/* memory bookkeeping (sys_vma.c) */
int sys_vma_map(struct sys_state *st, uint64_t start, uint64_t end, int prot);
int sys_vma_unmap(struct sys_state *st, uint64_t start, uint64_t end);
int sys_vma_protect(struct sys_state *st, uint64_t start, uint64_t end, int prot);
const struct sys_vma *sys_vma_find(const struct sys_state *st, uint64_t addr);
int sys_vma_free_range(const struct sys_state *st, uint64_t start, uint64_t end);
int sys_vma_flag(struct sys_state *st, uint64_t start, uint64_t end, int bit, int on);
uint64_t sys_vma_find_gap(const struct sys_state *st, uint64_t len);

#endif
