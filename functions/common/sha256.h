/* SHA-256 (FIPS 180-4), a small portable implementation. */
#ifndef FN_SHA256_H
#define FN_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct sha256 {
	uint32_t h[8];
	uint64_t len;
	uint8_t blk[64];
	size_t fill;
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *p, size_t n);
void sha256_final(struct sha256 *s, uint8_t out[32]);
/* Writes the 64 lowercase hex digits of the digest of p[0..n) and a NUL to hex. */
void sha256_hex(const void *p, size_t n, char hex[65]);

#endif
