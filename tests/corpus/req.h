/* req.h: how the corpus C and C++ programs read their request (the snapshot point). */
#ifndef CORPUS_REQ_H
#define CORPUS_REQ_H

#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

/* read_req: reads stdin to its end (at most cap - 1 bytes) into buf, NUL-terminated, without its
 * trailing newlines; returns the length, or -1 when a read fails. Ember snapshots the program at
 * its first read of fd 0, so every program calls this once its initialisation is done. */
static inline long read_req(char *buf, size_t cap)
{
	size_t len = 0;
	ssize_t n = 0;

	if (cap == 0)
		return -1;
	while (len + 1 < cap && (n = read(0, buf + len, cap - 1 - len)) > 0)
		len += (size_t)n;
	if (n < 0)
		return -1;
	while (len > 0 && buf[len - 1] == '\n')
		len--;
	buf[len] = '\0';
	return (long)len;
}

/* req_seed: FNV-1a of the request, so that the work depends on it */
static inline uint64_t req_seed(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* mix: one step of a 64-bit LCG with an xorshift out, the unit of work the threads repeat */
static inline uint64_t mix(uint64_t x)
{
	x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x ^ (x >> 29);
}

#endif
