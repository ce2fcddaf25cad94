/* The in-guest runtime's pool: ranges of memory the host made writable for it (rt_pool.c). */
#ifndef EMBER_RT_POOL_H
#define EMBER_RT_POOL_H

#include "rt.h"

#define PAGE	  4096ULL
#define USED	  EMBER_RT_SEG_USED
#define FREE	  EMBER_RT_SEG_FREE
#define DIRTY	  EMBER_RT_SEG_DIRTY
#define BIT(s)	  ((s) < 32 ? 1u << (s) : 0u)
#define ANY_STATE (~0u)

static inline uint64_t page_up(uint64_t x)
{
	return (x + PAGE - 1) & ~(PAGE - 1);
}

/* A call the runtime makes for itself (more pool, zeroing, the heap's top): the host serves it
 * and leaves it out of the program's counts. */
long rt_own(long nr, uint64_t a0, uint64_t a1, uint64_t a2);

/* how many bytes of [a, b) the pool holds, and the states met there (a bit per state) */
uint64_t pool_cover(uint64_t a, uint64_t b, unsigned *states);
/* ranges of the pool start and end at a and b: 0, or -ENOMEM when the table is full; after it,
 * pool_retag(a, b, ...) cannot fail */
int pool_prepare(uint64_t a, uint64_t b);
/* every range of the pool in [a, b) whose state is in `from` goes to state `to`; to == 0 takes
 * them out of the pool (the host keeps them mapped); -ENOMEM when the table is full */
int pool_retag(uint64_t a, uint64_t b, unsigned from, uint64_t to);
/* the pool's used and dirty memory in [a, b) reads as zero afterwards */
long pool_zero(uint64_t a, uint64_t b);
/* len bytes of zeroed memory, marked used, the pool grown if need be: the address or -ENOMEM */
long pool_alloc(uint64_t len);
/* calls the host with (nr, gap, len, a2) for each gap of [a, b) the pool does not hold; the
 * first error, or 0 */
long pool_each_gap(long nr, uint64_t a, uint64_t b, uint64_t a2);
/* [a, b) leaves the pool: its free parts are unmapped for the host too, which then holds what
 * the program sees */
int pool_give_up(uint64_t a, uint64_t b);
/* every free run of the pool goes back to the host, which needs the room: 1 if there was one */
int pool_release_free(void);

#endif
