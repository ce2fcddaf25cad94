/* The warm-capacity policy: how many virtines a function keeps, from the concurrency it saw. */
#ifndef EMBER_DEMAND_H
#define EMBER_DEMAND_H

#include <stdint.h>

/* The peaks of in-use virtines over two windows of keepAlive: the capacity wanted is the larger
 * of the two plus headroom, so idle capacity goes after one to two windows without a peak. */
struct demand {
	unsigned floor;	    /* never fewer (minWarm, or the default pool) */
	unsigned cap;	    /* never more (maxConcurrency, or the pool's slots) */
	uint64_t window_ns; /* keepAlive; 0: capacity never shrinks */
	uint64_t window_start;
	unsigned peak, prev_peak; /* this window's and the last one's */
};

void demand_init(struct demand *d, unsigned floor, unsigned cap, uint64_t window_ns,
		 uint64_t now_ns);
/* the spare virtines kept above a peak of in-use ones */
unsigned demand_headroom(unsigned peak);
/* Virtines (ready and in use) wanted now: the recent peak plus headroom, at least one spare
 * above in_use, within floor and cap. */
unsigned demand_target(const struct demand *d, unsigned in_use);
/* in_use virtines are taken now: raises this window's peak */
void demand_seen(struct demand *d, unsigned in_use);
/* Starts the next window when this one is over (now_ns), its peak becoming the last one's and
 * the next starting at in_use; returns 1 when it did. *next_ns: when to call it again (0: never).
 */
int demand_tick(struct demand *d, unsigned in_use, uint64_t now_ns, uint64_t *next_ns);

#endif
