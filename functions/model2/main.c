/* model2: a second "model" on the same 8 MiB table as model: the largest of the rows the request
 * names. */
#include "table.h"

int main(void)
{
	const uint64_t *t =
	    table_load(); /* the same bytes as model's: merged across the functions */
	size_t n;
	char *req = (char *)fn_read_all(&n);
	long start, rows;
	table_rows(req, &start, &rows);
	uint64_t max = 0;
	for (long i = start; i < start + rows; i++)
		max = t[i] > max ? t[i] : max;
	struct fnbuf out = {0};
	fnbuf_printf(&out, "max of %ld rows from %ld: %llu\n", rows, start,
		     (unsigned long long)max);
	fnbuf_finish(&out);
}
