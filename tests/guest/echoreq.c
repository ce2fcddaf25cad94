/* echoreq: writes the request it reads from stdin back to stdout, byte for byte. */
#include <unistd.h>

static int write_all(const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(1, p, n);

		if (w < 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int main(void)
{
	char buf[4096];
	ssize_t n;

	while ((n = read(0, buf, sizeof(buf))) > 0)
		if (write_all(buf, (size_t)n))
			return 1;
	return n < 0;
}
