/* echoreq: writes the request it reads from stdin back to stdout, byte for byte. */
#include <unistd.h>

#include "base/base.h"

int main(void)
{
	char buf[4096];
	ssize_t n;

	while ((n = read(0, buf, sizeof(buf))) > 0)
		if (base_write_all(1, buf, (size_t)n))
			return 1;
	return n < 0;
}
