/* membomb: allocates and touches 1 MiB blocks until malloc fails or 8 GiB are reached. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK	(1024 * 1024)
#define MAX_MIB 8192

int main(void)
{
	long mib;

	for (mib = 0; mib < MAX_MIB; mib++) {
		char *p = malloc(BLOCK);

		if (!p)
			break;
		memset(p, 0xa5, BLOCK); /* touch every page; the block is never freed */
	}
	if (mib == MAX_MIB)
		puts("no limit hit");
	else
		printf("out of memory after %ld MiB\n", mib);
	return 0;
}
