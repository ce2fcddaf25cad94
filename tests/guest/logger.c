/* logger: writes to stderr. "flood:K" writes K KiB of numbered 128-byte lines; "long:N" one line
 * of N bytes, then "after"; any other request is written to stderr as it is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"

static char req[65536], chunk[65536];

/* K KiB of lines "flood 000001 xxx...\n", 128 bytes each, written 64 KiB at a time */
static int flood(unsigned long kib)
{
	unsigned long line = 0, total = kib * 8;
	while (line < total) {
		size_t n = 0;
		for (; n + 128 <= sizeof(chunk) && line < total; n += 128) {
			snprintf(chunk + n, 14, "flood %06lu ", ++line % 1000000);
			memset(chunk + n + 13, 'x', 114);
			chunk[n + 127] = '\n';
		}
		if (base_write_all(2, chunk, n))
			return 1;
	}
	printf("flooded %lu KiB\n", kib);
	return 0;
}

static int long_line(unsigned long n)
{
	memset(chunk, 'y', sizeof(chunk));
	for (unsigned long left = n; left > 0;) {
		size_t k = left < sizeof(chunk) ? left : sizeof(chunk);
		if (base_write_all(2, chunk, k))
			return 1;
		left -= k;
	}
	if (base_write_all(2, "\nafter\n", 7))
		return 1;
	printf("wrote a line of %lu bytes\n", n);
	return 0;
}

int main(void)
{
	size_t len = 0;
	ssize_t n;
	while (len < sizeof(req) - 1 && (n = read(0, req + len, sizeof(req) - 1 - len)) > 0)
		len += (size_t)n;
	req[len] = 0;
	if (!strncmp(req, "flood:", 6))
		return flood(strtoul(req + 6, NULL, 10));
	if (!strncmp(req, "long:", 5))
		return long_line(strtoul(req + 5, NULL, 10));
	if (base_write_all(2, req, len))
		return 1;
	printf("logged %zu bytes\n", len);
	return 0;
}
