/* The virtine, Ember's unit of isolation: one machine with its guest's emulation state. */
#ifndef EMBER_VIRTINE_H
#define EMBER_VIRTINE_H

#include <stdint.h>

#include "share/share.h"
#include "sys/sys.h"
#include "vm/vm.h"

/* Defined here, in the pool, the lowest layer that holds and destroys virtines; the function
 * layer (src/func) builds them (virtine_prepare) and runs them. */
struct ember_budget;
struct virtine {
	struct vm *vm;
	struct sys_state st;
	struct ember_budget *budget; /* what it holds of it: charged bytes */
	uint64_t charged;
	struct share_refs merged; /* the store's pages its program merged with (madvise) */
};

/* destroys v and gives its memory back to its budget */
void virtine_destroy(struct virtine *v);

#endif
