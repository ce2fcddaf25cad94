/* libsites: the syscall sites of a library mapped at run time (dynamic, with glibc, whose
 * libc.so.6 ld.so maps): 1000 clock_gettime calls through libc's own `syscall`, which the test
 * counts served inside the guest (ember run --stats); with argument "table" (guest mode), the
 * runtime's table of sites as the program maps a file of its own executable, moves and unmaps it */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ember/abi.h"

static uint64_t nsites(void)
{
	return ((volatile struct ember_rt_ctl *)EMBER_RT_CTL)->nsites;
}

/* the `syscall` instructions of the file that read as `call *%rax` where it is mapped at m */
static size_t rewritten(const uint8_t *file, const uint8_t *m, size_t len)
{
	size_t n = 0;
	for (size_t i = 0; i + 1 < len; i++)
		n += file[i] == 0x0f && file[i + 1] == 0x05 && m[i] == 0xff && m[i + 1] == 0xd0;
	return n;
}

static int table(const char *path)
{
	int fd = open(path, O_RDONLY);
	struct stat s;
	if (fd < 0 || fstat(fd, &s) < 0)
		return printf("cannot open %s\n", path), 1;
	size_t len = (size_t)s.st_size;
	/* the file's bytes as they are, to compare with */
	uint8_t *file = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	uint64_t n0 = nsites();
	uint8_t *m = mmap(NULL, len, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (file == MAP_FAILED || m == MAP_FAILED)
		return printf("cannot map %s\n", path), 1;
	uint64_t n1 = nsites();
	size_t calls = rewritten(file, m, len);
	printf("mapped executable: %s\n",
	       n1 > n0 && calls == n1 - n0 ? "sites in the table" : "NOT");
	printf("read-only copy: %s\n", rewritten(file, file, len) ? "REWRITTEN" : "as the file");
	/* moved: the table follows (old entries out, new ones in) */
	uint8_t *moved = mremap(m, len, len + (1 << 20), MREMAP_MAYMOVE);
	uint64_t n2 = nsites();
	printf("moved: %s\n",
	       moved != MAP_FAILED && moved != m && n2 == n1 && rewritten(file, moved, len) == calls
		   ? "the table follows"
		   : "NOT");
	munmap(moved, len + (1 << 20));
	printf("unmapped: %s\n", nsites() == n0 ? "its sites gone" : "STALE");
	/* a mapping over it: the sites there go */
	m = mmap(NULL, len, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	uint64_t n3 = nsites();
	mmap(m, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	printf("mapped over: %s\n", n3 == n1 && nsites() == n0 ? "its sites gone" : "STALE");
	munmap(m, len);
	munmap(file, len);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < 1000; i++)
		clock_gettime(CLOCK_MONOTONIC, &b);
	printf("monotonic: %s\n",
	       b.tv_sec > a.tv_sec || (b.tv_sec == a.tv_sec && b.tv_nsec >= a.tv_nsec)
		   ? "never back"
		   : "BACK");
	if (argc > 2 && !strcmp(argv[1], "table"))
		return table(argv[2]);
	return 0;
}
