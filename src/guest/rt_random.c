/* getrandom inside the guest: ChaCha20, keyed with fresh host entropy at every invocation. */
#include "rt.h"

#define EINVAL 22

static uint32_t key_state[16];
static uint8_t block[64];
static unsigned used = 64;
static uint64_t gen = ~0ULL;

static uint32_t rotl(uint32_t v, int n)
{
	return (v << n) | (v >> (32 - n));
}

#define QR(a, b, c, d)                                                                             \
	do {                                                                                       \
		a += b, d ^= a, d = rotl(d, 16);                                                   \
		c += d, b ^= c, b = rotl(b, 12);                                                   \
		a += b, d ^= a, d = rotl(d, 8);                                                    \
		c += d, b ^= c, b = rotl(b, 7);                                                    \
	} while (0)

static void next_block(void)
{
	uint32_t x[16];
	for (int i = 0; i < 16; i++)
		x[i] = key_state[i];
	for (int i = 0; i < 10; i++) {
		QR(x[0], x[4], x[8], x[12]);
		QR(x[1], x[5], x[9], x[13]);
		QR(x[2], x[6], x[10], x[14]);
		QR(x[3], x[7], x[11], x[15]);
		QR(x[0], x[5], x[10], x[15]);
		QR(x[1], x[6], x[11], x[12]);
		QR(x[2], x[7], x[8], x[13]);
		QR(x[3], x[4], x[9], x[14]);
	}
	for (int i = 0; i < 16; i++) {
		uint32_t v = x[i] + key_state[i];
		block[4 * i] = (uint8_t)v;
		block[4 * i + 1] = (uint8_t)(v >> 8);
		block[4 * i + 2] = (uint8_t)(v >> 16);
		block[4 * i + 3] = (uint8_t)(v >> 24);
	}
	if (++key_state[12] == 0)
		key_state[13]++;
	used = 0;
}

/* a new key whenever the host wrote one: an invocation never repeats another's stream, even
 * when both start from the same snapshot */
static void rekey(void)
{
	volatile struct ember_rt_ctl *c = RT_CTL;
	static const uint32_t sigma[4] = {0x61707865, 0x3320646e, 0x79622d32, 0x6b206574};
	for (int i = 0; i < 4; i++)
		key_state[i] = sigma[i];
	for (int i = 0; i < 8; i++)
		key_state[4 + i] = (uint32_t)c->key[4 * i] | (uint32_t)c->key[4 * i + 1] << 8 |
				   (uint32_t)c->key[4 * i + 2] << 16 |
				   (uint32_t)c->key[4 * i + 3] << 24;
	key_state[12] = key_state[13] = key_state[14] = key_state[15] = 0;
	used = 64;
	gen = c->key_gen;
}

long rt_getrandom(long buf, long len, long flags)
{
	if (flags & ~7L || len < 0)
		return -EINVAL;
	if (gen != RT_CTL->key_gen)
		rekey();
	uint8_t *p = (uint8_t *)buf;
	for (long i = 0; i < len; i++) {
		if (used == 64)
			next_block();
		p[i] = block[used++];
	}
	return len;
}
