/* nap: reads "MS REST", sleeps MS milliseconds (at most 60 s), prints "napped MS REST".
 * "forever" sleeps LONG_MAX seconds, as coreutils' `sleep infinity` does; "raw" sleeps 1 ms
 * on CLOCK_MONOTONIC_RAW, which Linux refuses, and prints "raw ERRNO". */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(void)
{
	char buf[256];
	size_t len = fread(buf, 1, sizeof(buf) - 1, stdin);
	buf[len] = 0;
	if (!strncmp(buf, "forever", 7)) {
		struct timespec d = {LONG_MAX, 0};
		int rc = nanosleep(&d, NULL);
		printf("woke from forever: %d %d\n", rc, rc ? errno : 0);
		return 1;
	}
	if (!strncmp(buf, "raw", 3)) {
		struct timespec d = {0, 1000000L};
		printf("raw %d\n", clock_nanosleep(CLOCK_MONOTONIC_RAW, 0, &d, NULL));
		return 0;
	}
	long ms = strtol(buf, NULL, 10);
	if (ms < 0 || ms > 60000)
		ms = 0;
	struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
	if (nanosleep(&d, NULL) != 0) {
		puts("nap failed");
		return 1;
	}
	printf("napped %s\n", buf);
	return 0;
}
