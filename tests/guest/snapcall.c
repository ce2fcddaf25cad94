/* snapcall: builds a table, calls ember_snapshot() and reports its result, then reads stdin. */
#include <stdio.h>
#include <unistd.h>

#include "ember/function.h"

static unsigned table[1024];
static unsigned after; /* bumped after the snapshot: 1 in every invocation */

int main(void)
{
	unsigned sum = 0;
	char buf[4096];
	long rc;
	ssize_t n;

	for (unsigned i = 0; i < 1024; i++)
		table[i] = i * i;
	rc = ember_snapshot();
	after++;
	printf("ember_snapshot: %ld\n", rc);
	printf("again: %ld\n", ember_snapshot()); /* later calls do nothing; same result */
	while ((n = read(0, buf, sizeof(buf))) > 0)
		;
	for (unsigned i = 0; i < 1024; i++)
		sum += table[i];
	printf("after %u, table %s\n", after, sum == 357389824u ? "ok" : "BAD");
	return 0;
}
