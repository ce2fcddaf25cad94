/* Makes a read-only page writable, writes it and makes it read-only again within one request:
 * every request must still see the value from init (prints 1). */
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

int main(void)
{
	int *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 2;
	*p = 0;
	mprotect(p, 4096, PROT_READ);
	char buf[64];
	while (read(0, buf, sizeof(buf)) > 0)
		;
	mprotect(p, 4096, PROT_READ | PROT_WRITE);
	(*p)++;
	mprotect(p, 4096, PROT_READ);
	printf("%d\n", *p);
	return 0;
}
