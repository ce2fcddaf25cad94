/* Cold starts from a snapshot on disk: guest memory served on demand through userfaultfd, with
 * the recorded working set prefetched in one read first (REAP). */
#ifndef EMBER_SNAP_COLD_H
#define EMBER_SNAP_COLD_H

#include <pthread.h>

#include "snap/snap.h"

enum snap_restore_mode { SNAP_LAZY, SNAP_REAP };

struct snap_cold {
	const struct snap *s; /* loaded without its pages */
	struct vm *vm;
	struct vm_uffds u;
	int memfd;   /* the snapshot's memory file */
	int stop[2]; /* a pipe that ends the fault server */
	pthread_t th;
	int running;
	int record; /* keep the order of the faulting pages */
	uint64_t *trace;
	size_t ntrace, cap;
	uint8_t *seen;	      /* one bit per guest page */
	uint8_t *zeroed;      /* one bit per guest page the run gave back: served as zeros */
	struct sys_state *st; /* tells us of those */
	uint64_t faults, prefetched;
	uint64_t prefetch_us, prefetch_bytes;
	int buffered; /* the prefetch could not use O_DIRECT: it went through the page cache */
	int failed;
	/* 1 + the address of the first page whose content on disk failed its checksum (it was
	 * served poisoned, so the run ends soon; its result must be dropped), or 0 */
	uint64_t damaged;
};

/* Restores vm to the snapshot in dir without copying memory: permissions, registers and
 * emulation state now, pages as they are touched. With mode SNAP_REAP and a working-set file,
 * its pages are installed first. With record, faulting pages are recorded. */
int snap_cold_start(struct snap_cold *c, const struct snap *s, struct vm *vm, struct sys_state *st,
		    const char *dir, enum snap_restore_mode mode, int record, char *err,
		    size_t errlen);
/* Stops serving faults (memory stays as installed) and writes the working-set file when
 * recording. */
int snap_cold_finish(struct snap_cold *c, const char *dir, char *err, size_t errlen);
/* whether dir has a usable working-set file */
int snap_ws_exists(const char *dir);

#endif
