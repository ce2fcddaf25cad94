/* Little-endian integers of 1 to 8 bytes: the fields of Ember's files on disk, whatever the host.
 */
#include "base/base.h"

void base_put_le(uint8_t *p, uint64_t v, unsigned width)
{
	for (unsigned i = 0; i < width; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

uint64_t base_get_le(const uint8_t *p, unsigned width)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < width; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}
