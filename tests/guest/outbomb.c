/* outbomb: writes 64 KiB chunks to stdout forever (output limits); exits 3 when write fails. */
#include <unistd.h>

static char chunk[64 * 1024];

int main(void)
{
	for (size_t i = 0; i < sizeof(chunk); i++)
		chunk[i] = (i % 64 == 63) ? '\n' : (char)('a' + i % 26);
	for (;;)
		if (write(1, chunk, sizeof(chunk)) < 0)
			return 3;
}
