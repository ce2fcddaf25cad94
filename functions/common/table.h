/* The read-only table the model functions share: 8 MiB made at init from a fixed seed, the same
 * bytes in each, offered for merging. */
#ifndef FN_TABLE_H
#define FN_TABLE_H

#include <stdint.h>
#include <sys/mman.h>

#include "fnio.h"
#include "xmath.h"

#define TABLE_WORDS (1u << 20) /* 8 MiB of 64-bit weights */

/* the table, as a model's weights would be loaded: then madvise(MADV_MERGEABLE), as UPM asks a
 * function to name memory worth sharing (Ember merges it with every identical page) */
static inline const uint64_t *table_load(void)
{
	uint64_t *t = mmap(NULL, TABLE_WORDS * sizeof(*t), PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t == MAP_FAILED)
		fn_die("no memory for the table");
	uint64_t seed = 0x5eed;
	for (uint32_t i = 0; i < TABLE_WORDS; i++)
		t[i] = xrand(&seed);
	if (madvise(t, TABLE_WORDS * sizeof(*t), MADV_MERGEABLE))
		fn_die("madvise(MADV_MERGEABLE) failed");
	return t;
}

/* the request's "start=S rows=N" (defaults 0 and 1024), checked against the table */
static inline void table_rows(const char *req, long *start, long *rows)
{
	*start = fn_param(req, 0, "start", 0, 0, TABLE_WORDS - 1);
	*rows = fn_param(req, 0, "rows", 1024, 1, TABLE_WORDS);
	if (*start + *rows > TABLE_WORDS)
		fn_die("start + rows beyond the table's %u rows", TABLE_WORDS);
}

#endif
