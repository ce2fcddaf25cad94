/* System calls given buffers the program cannot use (unmapped, non-canonical, read-only, in an
 * iovec): each must fail with EFAULT and change nothing, as on Linux, in both syscall modes. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* unmapped here and natively (4 GiB: above a virtine's memory, below a native mmap base) */
#define UNMAPPED ((void *)0x100000000ULL)
/* not an address at all: a #GP, not a #PF */
#define NONCANON ((void *)0x8000000000000000ULL)

static const char rodata[16] = "read-only";

static void show(const char *what, long rc)
{
	printf("%s: %s\n", what, rc < 0 ? strerror(errno) : "no error");
}

int main(void)
{
	struct iovec bad_base = {UNMAPPED, 4}, odd_base = {NONCANON, 4};
	struct timespec *ts = UNMAPPED;
	show("read unmapped", read(0, UNMAPPED, 4));
	show("read non-canonical", read(0, NONCANON, 4));
	show("read into read-only", read(0, (void *)rodata, 4));
	show("readv bad base", readv(0, &bad_base, 1));
	show("readv bad iovec", readv(0, UNMAPPED, 1));
	show("write unmapped", write(1, UNMAPPED, 4));
	show("write non-canonical", write(2, NONCANON, 4));
	show("writev bad base", writev(1, &odd_base, 1));
	show("writev bad iovec", writev(1, UNMAPPED, 2));
	show("clock_gettime", syscall(SYS_clock_gettime, CLOCK_MONOTONIC, ts));
	show("gettimeofday", syscall(SYS_gettimeofday, UNMAPPED, NULL));
	show("getrandom", syscall(SYS_getrandom, UNMAPPED, 8, 0));
	show("rt_sigprocmask", syscall(SYS_rt_sigprocmask, 0, UNMAPPED, NULL, 8));
	fflush(stdout);
	/* none of them consumed the request or wrote anything: it is all still there */
	char buf[256];
	ssize_t n = read(0, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = 0;
	printf("request: '%s', read-only still '%s'\n", buf, rodata);
	return 0;
}
