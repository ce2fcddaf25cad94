/* crashy: reads the request; "crash" writes through NULL, "loop" spins, else prints fine 1. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int *volatile target;
static volatile unsigned long spins;
static unsigned long counter;

int main(void)
{
	char buf[256];
	size_t len = 0;
	ssize_t n;

	while (len < sizeof(buf) - 1 && (n = read(0, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	while (len > 0 && buf[len - 1] == '\n')
		len--;
	buf[len] = 0;
	counter++;
	if (strcmp(buf, "crash") == 0) {
		*target = 42;
	} else if (strcmp(buf, "loop") == 0) {
		for (;;)
			spins++;
	}
	printf("fine %lu\n", counter);
	return 0;
}
