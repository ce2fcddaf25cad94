/* The in-guest runtime's arena: ranges of memory the host made writable for it (rt_arena.c). */
#ifndef EMBER_RT_ARENA_H
#define EMBER_RT_ARENA_H

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

/* A call the runtime makes for itself (more arena, zeroing, the heap's top): the host serves it
 * and leaves it out of the program's counts. */
long rt_own(long nr, uint64_t a0, uint64_t a1, uint64_t a2);

/* how many bytes of [a, b) the arena holds, and the states met there (a bit per state) */
uint64_t arena_cover(uint64_t a, uint64_t b, unsigned *states);
/* ranges of the arena start and end at a and b: 0, or -ENOMEM when the table is full; after it,
 * arena_retag(a, b, ...) cannot fail */
int arena_prepare(uint64_t a, uint64_t b);
/* every range of the arena in [a, b) whose state is in `from` goes to state `to`; to == 0 takes
 * them out of the arena (the host keeps them mapped); -ENOMEM when the table is full */
int arena_retag(uint64_t a, uint64_t b, unsigned from, uint64_t to);
/* the arena's used and dirty memory in [a, b) reads as zero afterwards */
long arena_zero(uint64_t a, uint64_t b);
/* len bytes of zeroed memory, marked used, the arena grown if need be: the address or -ENOMEM */
long arena_alloc(uint64_t len);
/* calls the host with (nr, gap, len, a2) for each gap of [a, b) the arena does not hold; the
 * first error, or 0 */
long arena_each_gap(long nr, uint64_t a, uint64_t b, uint64_t a2);
/* [a, b) leaves the arena: its free parts are unmapped for the host too, which then holds what
 * the program sees */
int arena_give_up(uint64_t a, uint64_t b);
/* every free run of the arena goes back to the host, which needs the room: 1 if there was one */
int arena_release_free(void);

#endif
