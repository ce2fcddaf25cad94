/* Cold starts from a snapshot on disk: guest memory served on demand through userfaultfd, with
 * the recorded working set prefetched in one read first (REAP). */
#ifndef EMBER_SNAP_COLD_H
#define EMBER_SNAP_COLD_H

#include <pthread.h>

#include "snap/snap.h"
#include "cold/cold_prefetch.h"

enum snap_restore_mode { SNAP_LAZY, SNAP_REAP };

/* A REAP start whose mispredictions (pages outside its working set it needed) are this many,
 * and at least 1/SNAP_REREC_DIV of its working set, writes it again with them appended */
#define SNAP_REREC_MIN 8
#define SNAP_REREC_DIV 16

struct cold {
	const struct snap *s; /* loaded without its pages */
	struct vm *vm;
	struct vm_uffds u;
	int memfd;		/* the snapshot's memory file */
	int stop[2];		/* a pipe that ends the fault server */
	struct base_job server; /* the fault server, on a parked thread */
	int running;
	/* keep the order of the faulting pages: 1 from nothing, 2 after the working set's own
	 * (a REAP start: its mispredictions, written back when they are too many) */
	int record;
	uint64_t *trace;
	size_t ntrace, cap, nseed; /* nseed: the working set's pages at the trace's start */
	int rerecorded;		   /* the working set was written again with the misses */
	uint8_t *seen;		   /* one bit per guest page */
	uint8_t *zeroed;	   /* one bit per guest page the run gave back: served as zeros */
	struct sys_state *st;	   /* tells us of those */
	uint64_t faults, prefetched;
	uint64_t prefetch_us, prefetch_bytes;
	int buffered; /* the prefetch could not use O_DIRECT: it went through the page cache */
	struct cold_pf pf;
	/* where the time went: opening the memory file, the bitmaps, registering the machine's
	 * memory (open); until the first chunk of the working set was in (first); the working
	 * set's reads and installs (they overlap the run); serving faults on demand, and faults
	 * that waited for a page the prefetch was bringing */
	uint64_t open_ns, first_ns, read_ns, install_ns, fault_ns, wait_ns, waits;
	int failed;
	/* 1 + the address of the first page whose content on disk failed its checksum (it was
	 * served poisoned, so the run ends soon; its result must be dropped), or 0 */
	uint64_t damaged;
};

/* Restores vm to the snapshot in dir without copying memory: permissions, registers and
 * emulation state now, pages as they are touched. With mode SNAP_REAP and a working-set file,
 * its pages are installed first. With record, faulting pages are recorded. */
int cold_start(struct cold *c, const struct snap *s, struct vm *vm, struct sys_state *st,
	       const char *dir, enum snap_restore_mode mode, int record, char *err, size_t errlen);
/* Stops serving faults (memory stays as installed) and writes the working-set file when
 * recording. */
int cold_finish(struct cold *c, const char *dir, char *err, size_t errlen);
/* after cold_finish: the start's figures into res (faults, prefetch, where time went) */
void cold_result(const struct cold *c, struct ember_result *res);
/* whether dir has a usable working-set file */
int cold_ws_exists(const char *dir);
/* for the prefetch: installs [addr, addr+len) from src (a page there already is kept) */
int cold_install(struct cold *c, uint64_t addr, const void *src, uint64_t len);
/* page, read (or not: read 0) from the memory file as the snapshot's page i: kept when its hash
 * is the page's, else int3 bytes and the start marked damaged */
void cold_check(struct cold *c, size_t i, uint8_t *page, int read);
/* cold_fill.c: every page of the snapshot the machine has not had yet (nor gave back since)
 * installed now, as the fault server would serve it: for a fork, whose copy of the machine's
 * memory reads its memfd, where such a page is still a hole. 0, or -errno */
int cold_fill(struct cold *c);
/* whether a run may record addr: page 0, the runtime's area and the program's memory */
int cold_program_page(const struct vm *vm, uint64_t addr);

#endif
