/* scan: a function with a large working set: at init it fills a 32 MiB table from a fixed seed;
 * each request reads all of it (or the rows it names) and answers their checksum. */
#include <stdint.h>
#include <sys/mman.h>

#include "fnio.h"
#include "xmath.h"

#define WORDS (4u << 20) /* 32 MiB of 64-bit words */

int main(void)
{
	uint64_t *t = mmap(NULL, WORDS * sizeof(*t), PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t == MAP_FAILED)
		fn_die("no memory for the table");
	uint64_t seed = 0x5ca4;
	for (uint32_t i = 0; i < WORDS; i++)
		t[i] = xrand(&seed);
	size_t n;
	char *req = (char *)fn_read_all(&n); /* the snapshot point: the table is in it */
	long start = fn_param(req, 0, "start", 0, 0, WORDS - 1);
	long rows = fn_param(req, 0, "rows", WORDS, 1, WORDS);
	if (start + rows > (long)WORDS)
		fn_die("start + rows beyond the table's %u rows", WORDS);
	uint64_t h = 0;
	for (long i = start; i < start + rows; i++)
		h = (h ^ t[i]) * 0x100000001b3ULL;
	struct fnbuf out = {0};
	fnbuf_printf(&out, "scan of %ld rows from %ld: %016llx\n", rows, start,
		     (unsigned long long)h);
	fnbuf_finish(&out);
}
