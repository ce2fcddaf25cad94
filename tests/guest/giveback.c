/* giveback: pages of the snapshot changed in a request must be the snapshot's again in the next
 * one, however they changed: a page given back with madvise(MADV_DONTNEED) and then only read, a
 * page unmapped and mapped afresh, a page the host writes (clock_gettime in trap mode), a page
 * written and then made read-only. Prints "intact" when all held init's bytes, else what
 * changed. */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096

static char given[PAGE] __attribute__((aligned(PAGE)));
static char remapped[PAGE] __attribute__((aligned(PAGE)));
static char hostw[PAGE] __attribute__((aligned(PAGE)));
static char sealed[PAGE] __attribute__((aligned(PAGE)));

static int intact(const char *p)
{
	for (int i = 0; i < PAGE; i++)
		if (p[i] != 'K')
			return 0;
	return 1;
}

int main(void)
{
	memset(given, 'K', PAGE);
	memset(remapped, 'K', PAGE);
	memset(hostw, 'K', PAGE);
	memset(sealed, 'K', PAGE);
	char req[64];
	while (read(0, req, sizeof(req)) > 0)
		;
	int ok = 1;
	const char *names[] = {"given", "remapped", "host-written", "written-read-only"};
	const char *pages[] = {given, remapped, hostw, sealed};
	for (int i = 0; i < 4; i++)
		if (!intact(pages[i])) {
			printf("CHANGED %s: %#x\n", names[i], (unsigned char)pages[i][0]);
			ok = 0;
		}
	if (ok)
		puts("intact");
	fflush(stdout);
	/* now change them: the first two only read after their change */
	if (madvise(given, PAGE, MADV_DONTNEED))
		return 2;
	volatile char sink = given[0];
	if (munmap(remapped, PAGE) ||
	    mmap(remapped, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		 -1, 0) != (void *)remapped)
		return 3;
	sink = remapped[0];
	(void)sink;
	clock_gettime(CLOCK_REALTIME, (struct timespec *)hostw);
	sealed[100] = 'W';
	return mprotect(sealed, PAGE, PROT_READ) ? 4 : 0;
}
