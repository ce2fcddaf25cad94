/* rodontneed: madvise(MADV_DONTNEED) on read-only data after printing it; every invocation
 * restored from the snapshot must still see the data (prints ORIGINAL). */
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

static const char table[8192] __attribute__((aligned(4096))) = "ORIGINAL";

int main(void)
{
	char b[64];
	while (read(0, b, sizeof(b)) > 0)
		;
	printf("%s\n", table[0] ? table : "(zeroed)");
	fflush(stdout);
	madvise((void *)table, 4096, MADV_DONTNEED);
	return 0;
}
