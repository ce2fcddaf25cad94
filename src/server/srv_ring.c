/* HAProxy's consistent-hash ring: the points of each node and the node a key goes to. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/srv_ring.h"

#define EWGHT_RANGE (256u * 16u) /* HAProxy's SRV_EWGHT_RANGE */

/* Bob Jenkins' full avalanche hash, as HAProxy's full_hash */
static uint32_t full_hash(uint32_t a)
{
	a = (a + 0x7ed55d16) + (a << 12);
	a = (a ^ 0xc761c23c) ^ (a >> 19);
	a = (a + 0x165667b1) + (a << 5);
	a = (a + 0xd3a2646c) ^ (a << 9);
	a = (a + 0xfd7046c5) + (a << 3);
	a = (a ^ 0xb55a4f09) ^ (a >> 16);
	return a * 3221225473U;
}

uint32_t ring_key_hash(const char *key, size_t len)
{
	uint32_t h = 0;
	for (size_t i = 0; i < len; i++)
		h = (uint8_t)key[i] + (h << 6) + (h << 16) - h;
	return h;
}

uint32_t ring_node_id(const char *host, size_t hostlen, unsigned port)
{
	char key[300];
	uint32_t h = 2166136261u;
	snprintf(key, sizeof(key), "%.*s:%u", (int)hostlen, host, port);
	for (const char *p = key; *p; p++)
		h = (h ^ (uint8_t)tolower((unsigned char)*p)) * 16777619u;
	return (h & 0x7fffffffu) ? (h & 0x7fffffffu) : 1;
}

uint32_t ring_addr_id(const char *addr)
{
	const char *colon = strrchr(addr, ':'), *host = addr;
	size_t hostlen = colon ? (size_t)(colon - addr) : 0;
	if (addr[0] == '[') {
		if (!colon || colon[-1] != ']' || hostlen < 3)
			return 0;
		host++;
		hostlen -= 2;
	}
	char *end;
	unsigned long port = colon ? strtoul(colon + 1, &end, 10) : 0;
	if (!hostlen || !port || port > 65535 || *end)
		return 0;
	return ring_node_id(host, hostlen, (unsigned)port);
}

static int by_key(const void *a, const void *b)
{
	const struct ring_point *x = a, *y = b;
	return x->key < y->key	 ? -1
	       : x->key > y->key ? 1
				 : (x->node > y->node) - (x->node < y->node);
}

int ring_build(struct ring *r, const uint32_t *ids, size_t n)
{
	r->n = 0;
	r->pts = n ? calloc(n * RING_POINTS, sizeof(*r->pts)) : NULL;
	if (n && !r->pts)
		return -1;
	for (size_t i = 0; i < n; i++)
		for (uint32_t j = 0; j < RING_POINTS; j++)
			r->pts[r->n++] =
			    (struct ring_point){full_hash(ids[i] * EWGHT_RANGE + j), (uint32_t)i};
	qsort(r->pts, r->n, sizeof(*r->pts), by_key);
	return 0;
}

void ring_free(struct ring *r)
{
	free(r->pts);
	r->pts = NULL;
	r->n = 0;
}

long ring_pick(const struct ring *r, const char *key, long skip)
{
	uint32_t h = full_hash(ring_key_hash(key, strlen(key))); /* sdbm, then avalanche */
	size_t lo = 0, hi = r->n;
	while (lo < hi) { /* the first point at or past h (eb32_lookup_ge) */
		size_t mid = (lo + hi) / 2;
		if (r->pts[mid].key < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* the next point of a node up, wrapping, and the one before it */
	size_t next = r->n, prev = r->n;
	for (size_t k = 0; k < r->n && next == r->n; k++)
		if ((long)r->pts[(lo + k) % r->n].node != skip)
			next = (lo + k) % r->n;
	if (next == r->n)
		return -1;
	for (size_t k = 1; k <= r->n && prev == r->n; k++)
		if ((long)r->pts[(next + r->n - k) % r->n].node != skip)
			prev = (next + r->n - k) % r->n;
	uint32_t dp = h - r->pts[prev].key, dn = r->pts[next].key - h;
	return dp <= dn ? (long)r->pts[prev].node : (long)r->pts[next].node;
}
