/* vdsoclock: the vDSO a virtine gives its program (AT_SYSINFO_EHDR): an ELF image there, and
 * 1000 clock_gettime calls through it (glibc, dynamic, takes the vDSO's when there is one): the
 * test counts them served inside the guest (ember run --stats) */
#include <elf.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>

int main(void)
{
	const unsigned char *v = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
	printf("vdso: %s\n", v && !memcmp(v, ELFMAG, SELFMAG) ? "an ELF image" : "none");
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < 1000; i++)
		clock_gettime(CLOCK_MONOTONIC, &b);
	printf("monotonic: %s\n",
	       b.tv_sec > a.tv_sec || (b.tv_sec == a.tv_sec && b.tv_nsec >= a.tv_nsec)
		   ? "never back"
		   : "BACK");
	return 0;
}
