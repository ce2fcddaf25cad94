/* counter: reads the request, then bumps a global counter and prints it (1 on a fresh start). */
#include <stdio.h>
#include <unistd.h>

static unsigned long counter;

int main(void)
{
	char buf[4096];
	ssize_t n;

	while ((n = read(0, buf, sizeof(buf))) > 0)
		;
	if (n < 0)
		return 1;
	counter++;
	printf("%lu\n", counter);
	return 0;
}
