/* Snapshots: a function's state right after its initialisation, and putting a virtine back to it.
 */
#ifndef EMBER_SNAP_H
#define EMBER_SNAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sys/sys.h"
#include "vm/vm.h"

struct snap {
	struct vm_regs regs;
	uint64_t fs_base;
	uint8_t fpu[VM_FPU_MAX];
	size_t fpu_len; /* 0: the in-guest runtime restores the FPU state from guest memory */
	struct sys_saved sys;
	struct sys_process proc;
	uint64_t *pages; /* guest addresses of the pages the snapshot holds, ascending */
	size_t npages;
	uint8_t *data;	  /* npages * 4096 bytes, in the same order; NULL until loaded */
	uint64_t *hashes; /* per page, for snapshots read from disk */
	/* 1: data is a read-only mapping of page i at offs[i] of memfd (offs NULL: at i * 4096),
	 * which machines map copy-on-write: the snapshot's own sealed memfd, or a page store's
	 * (store_fd: not the snapshot's to close) */
	int sealed, memfd, store_fd;
	int own_copy; /* kept out of the page store, which would scatter its runs (share_snap.c) */
	uint64_t *offs;
	/* snap_image.c: its pages at their guest addresses in one sealed memfd (KVM, upm) */
	int has_image, image_fd;
	/* per page, 1: left out of the image, mapped from the page store over it (a long run of
	 * pages other holders share, share_snap.c); NULL: none */
	uint8_t *overlay;
};

/* How a machine holds the snapshot's memory (snap_mem.c). */
enum snap_share {
	SNAP_SHARE_UPM, /* mapped copy-on-write from the one sealed copy (KVM; ptrace copies) */
	SNAP_SHARE_OFF, /* a private copy per machine, as a confidential VM must hold */
	SNAP_SHARE_KSM, /* a private copy in anonymous memory that KSM may merge (KVM) */
};
int snap_share_parse(const char *s, enum snap_share *out);
const char *snap_share_name(enum snap_share m);

/* a dense read-only view of n pages of fd, page i at offs[i]: one mapping per run of consecutive
 * offsets; NULL and errno */
uint8_t *snap_view(int fd, const uint64_t *offs, size_t n);
/* Moves data into a sealed memfd, mapped read-only in its place: the one copy every machine
 * restored from s maps. Nothing to do when sealed already or empty. */
int snap_seal(struct snap *s);
void snap_data_free(struct snap *s);
/* The machine s was captured from, its memory still equal to s, made to hold it in mode m
 * (upm: its own copies of the snapshot's pages given up for the shared one). */
int snap_adopt(const struct snap *s, struct vm *vm, enum snap_share m);
/* The image of s (snap_image.c): its pages, and the host's own structures of vm (the machine it
 * was captured from), at their guest addresses below user_top in one sealed memfd, which
 * snap_image_map maps over a machine's memory with one copy-on-write mapping (the overlay runs
 * from the page store over it). KVM only; without an image a machine maps s run by run.
 * keep_memfd: as vm_map_image's. */
int snap_image_build(struct snap *s, struct vm *vm);
int snap_image_map(const struct snap *s, struct vm *vm, int keep_memfd);
void snap_image_free(struct snap *s);
/* The snapshot's pages in [start, end) into a clean machine, in mode m. */
int snap_put_memory(const struct snap *s, struct vm *vm, uint64_t start, uint64_t end,
		    enum snap_share m);

/* Captures the state of a stopped virtine: registers, FPU, emulation state and every page of
 * its memory map that holds data. */
int snap_capture(struct snap *s, struct vm *vm, const struct sys_state *st);
/* Only the memory (the pages of st's map that hold data), sealed: what fork copies */
int snap_capture_memory(struct snap *s, struct vm *vm, const struct sys_state *st);
/* Only the pages of st's map that may differ from what the last reset put there (vm_unwritten
 * says 0), their bytes now, zeros included: with that reset's snapshot beneath them, the
 * machine's memory, for a fraction of the copy. It holds while every change of a page is a
 * guest write, a host write through the accessor or a discard: a file mapped over a page is
 * one (the sys layer discards the range first), a file run that skipped it would not be */
int snap_capture_changed(struct snap *s, struct vm *vm, const struct sys_state *st);
void snap_free(struct snap *s);
/* calls fn for each page of [start, end) that holds data in the machine's memfd, run by run (a
 * page swapped out counts: it still holds data) */
int snap_each_data(struct vm *vm, uint64_t start, uint64_t end, int (*fn)(void *ctx, uint64_t addr),
		   void *ctx);
/* the same over the pages that may hold other than zeros (vm_next_used): for the reset */
int snap_each_used(struct vm *vm, uint64_t start, uint64_t end, int (*fn)(void *ctx, uint64_t addr),
		   void *ctx);
/* index of the first snapshot page at or above addr */
size_t snap_page_index(const struct snap *s, uint64_t addr);

/* The snapshot's registers, FS base and (unless the in-guest runtime restores it) FPU state. */
int snap_set_cpu(const struct snap *s, struct vm *vm);

/* Puts a clean machine (all memory unmapped and zero) into the snapshot's state, its memory
 * held in mode m. */
int snap_restore(const struct snap *s, struct vm *vm, struct sys_state *st, enum snap_share m);

/* Puts a machine restored from s, and run since, back into the snapshot's state. The cost is
 * the snapshot's writable pages plus the pages the run added (a comparison), or, once the
 * backend records writes for this machine (KVM's dirty log, switched on by the reset itself when
 * the snapshot's writable pages far outnumber those a run changes), the pages the run wrote;
 * never the size of guest RAM.
 * *touched gets the pages put back: those the run changed or added. */
int snap_reset(const struct snap *s, struct vm *vm, struct sys_state *st, size_t *touched);

#endif
