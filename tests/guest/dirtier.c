/* dirtier: 16 MiB written at init (in the snapshot); each request "K" counts the pages a former
 * run left written (0 after a good reset), then writes one byte in each of the first K. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define PAGES 4096

static volatile unsigned char *buf;

int main(void)
{
	buf = malloc(PAGES * 4096);
	if (!buf)
		return 1;
	for (long i = 0; i < PAGES * 4096L; i += 4096)
		buf[i] = 1;
	char req[32];
	ssize_t n = read(0, req, sizeof(req) - 1);
	if (n < 0)
		return 1;
	req[n] = 0;
	long k = atol(req);
	if (k < 0 || k > PAGES)
		return 2;
	long left = 0;
	for (long i = 0; i < PAGES; i++)
		left += buf[i * 4096 + 8] != 0;
	for (long i = 0; i < k; i++)
		buf[i * 4096 + 8] = (unsigned char)(i + 2);
	printf("%ld written, %ld left\n", k, left);
	return 0;
}
