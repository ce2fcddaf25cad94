/* HAProxy's consistent-hash ring, computed as HAProxy 2.6 computes it (lb_chash.c, backend.c). */
#ifndef EMBER_SRV_RING_H
#define EMBER_SRV_RING_H

#include <stddef.h>
#include <stdint.h>

/* A server of weight 1 has BE_WEIGHT_SCALE (16) points, at full_hash(id * SRV_EWGHT_RANGE + j)
 * (SRV_EWGHT_RANGE: 256 * 16); a key (`balance hash path,field(3,/)`: the function's name) is
 * hashed with sdbm then full_hash (`hash-type consistent sdbm avalanche`, what `consistent` alone
 * means) and goes to the closest point, the one before it on a tie. */
#define RING_POINTS 16

struct ring_point {
	uint32_t key;
	uint32_t node; /* the index of its node in the ids given to ring_build */
};
struct ring {
	struct ring_point *pts; /* sorted by key */
	size_t n;
};

/* A node's id (its server `id` in `ember lb-config`'s output): FNV-1a of "host:port", the host
 * without brackets and in lower case, masked to 31 bits, never 0. */
uint32_t ring_node_id(const char *host, size_t hostlen, unsigned port);
/* the same of "HOST:PORT" or "[V6]:PORT"; 0 when it is neither */
uint32_t ring_addr_id(const char *addr);
uint32_t ring_key_hash(const char *key, size_t len); /* HAProxy's hash_sdbm */
/* the ring of n nodes: 0, or -1 when out of memory (r empty) */
int ring_build(struct ring *r, const uint32_t *ids, size_t n);
void ring_free(struct ring *r);
/* the node (an index into the ids) HAProxy picks for key while every node but skip (an index;
 * -1: none skipped) is up; -1 when none is left */
long ring_pick(const struct ring *r, const char *key, long skip);

#endif
