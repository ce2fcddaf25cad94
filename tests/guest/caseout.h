/* The report of a guest test program whose cases check themselves: bad() prints "NAME: what
 * differed" and marks the run failed (failed: its exit status). */
#ifndef EMBER_TESTS_GUEST_CASEOUT_H
#define EMBER_TESTS_GUEST_CASEOUT_H

#include <stdarg.h>
#include <stdio.h>

static int failed;

__attribute__((format(printf, 2, 3))) static void bad(const char *name, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("%s: ", name);
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	failed = 1;
}

#endif
