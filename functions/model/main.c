/* model: "inference" over an 8 MiB table loaded at init (model2 loads the same bytes): the sum of
 * the rows the request names. */
#include "table.h"

int main(void)
{
	const uint64_t *t = table_load(); /* before the request: part of the snapshot */
	size_t n;
	char *req = (char *)fn_read_all(&n);
	long start, rows;
	table_rows(req, &start, &rows);
	uint64_t sum = 0;
	for (long i = start; i < start + rows; i++)
		sum += t[i];
	struct fnbuf out = {0};
	fnbuf_printf(&out, "sum of %ld rows from %ld: %llu\n", rows, start,
		     (unsigned long long)sum);
	fnbuf_finish(&out);
}
