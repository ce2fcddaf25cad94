/* nap: reads "MS REST", sleeps MS milliseconds (at most 60 s), prints "napped MS REST". */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(void)
{
	char buf[256];
	size_t len = fread(buf, 1, sizeof(buf) - 1, stdin);
	buf[len] = 0;
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
