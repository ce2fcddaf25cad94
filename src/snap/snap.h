/* Snapshots: a function's state right after its initialisation, and putting a virtine back to it.
 */
#ifndef EMBER_SNAP_H
#define EMBER_SNAP_H

#include <stddef.h>
#include <stdint.h>

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
};

/* Captures the state of a stopped virtine: registers, FPU, emulation state and every page of
 * its memory map that holds data. */
int snap_capture(struct snap *s, struct vm *vm, const struct sys_state *st);
void snap_free(struct snap *s);
/* index of the first snapshot page at or above addr */
size_t snap_page_index(const struct snap *s, uint64_t addr);

/* The snapshot's registers, FS base and (unless the in-guest runtime restores it) FPU state. */
int snap_set_cpu(const struct snap *s, struct vm *vm);

/* Puts a clean machine (all memory unmapped and zero) into the snapshot's state. */
int snap_restore(const struct snap *s, struct vm *vm, struct sys_state *st);

/* Puts a machine restored from s, and run since, back into the snapshot's state. The cost is
 * the snapshot's writable pages plus the pages the run added, never the size of guest RAM.
 * *touched gets the pages put back: those the run changed or added. */
int snap_reset(const struct snap *s, struct vm *vm, struct sys_state *st, size_t *touched);

#endif
