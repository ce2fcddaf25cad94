/* System calls given buffers the program cannot use (unmapped, non-canonical, read-only, page 0,
 * in an iovec, after a good one): each must fail with EFAULT and change nothing, as on Linux with
 * stdin and stdout pipes, in both syscall modes. */
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
/* unmapped natively; in a virtine the runtime's sled (page 0) and its area (1 MiB) */
#define PAGE0  ((void *)0x10)
#define RTAREA ((void *)0x100000ULL)

static const char rodata[16] = "read-only";

static void show(const char *what, long rc)
{
	printf("%s: %s\n", what, rc < 0 ? strerror(errno) : "no error");
}

int main(void)
{
	struct iovec bad_base = {UNMAPPED, 4}, odd_base = {NONCANON, 4};
	char two[2], abc[] = "abc";
	struct iovec good_bad[] = {{two, 2}, {UNMAPPED, 8}}, abc_bad[] = {{abc, 3}, {UNMAPPED, 4}};
	struct timespec *ts = UNMAPPED;
	show("read unmapped", read(0, UNMAPPED, 4));
	show("read non-canonical", read(0, NONCANON, 4));
	show("read into read-only", read(0, (void *)rodata, 4));
	show("readv bad base", readv(0, &bad_base, 1));
	show("readv bad iovec", readv(0, UNMAPPED, 1));
	show("write unmapped", write(1, UNMAPPED, 4));
	show("write non-canonical", write(2, NONCANON, 4));
	show("read into page 0", read(0, PAGE0, 4));
	show("write from page 0", write(1, PAGE0, 4));
	show("write from null", write(1, NULL, 8));
	show("read into the runtime's area", read(0, RTAREA, 4));
	show("write from the runtime's area", write(1, RTAREA, 4));
	show("readv good then bad", readv(0, good_bad, 2));
	show("writev good then bad", writev(1, abc_bad, 2));
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
