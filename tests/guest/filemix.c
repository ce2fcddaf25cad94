/* The position of a file read both by the in-guest runtime and by the host (a site left trapping:
 * a leaf function keeping data in its red zone), across the snapshot: the two must agree. Opened
 * and read at init; each request reads, seeks and reads again through both paths and prints
 * what it got and where it is (the same as natively, every invocation). */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* read(fd, buf, n) at a site the rewriter leaves trapping: the host serves it */
static long __attribute__((noinline)) host_read(long fd, char *buf, long n)
{
	long r;
	__asm__ volatile("movq %[fd], -8(%%rsp)\n\t"
			 "movq %[fd], %%rdi\n\t"
			 "movq %[buf], %%rsi\n\t"
			 "movq %[n], %%rdx\n\t"
			 "xorl %%eax, %%eax\n\t" /* read */
			 "syscall\n\t"
			 "movq %%rax, %[r]\n\t"
			 "movq -8(%%rsp), %%rdi\n\t"
			 : [r] "=r"(r)
			 : [fd] "r"(fd), [buf] "r"(buf), [n] "r"(n)
			 : "rax", "rcx", "rdx", "rsi", "rdi", "r11", "memory");
	return r;
}

static void show(const char *what, const char *buf, long n, int fd)
{
	printf("%s: %ld [%.*s] at %ld\n", what, n, n > 0 ? (int)n : 0, buf,
	       (long)lseek(fd, 0, SEEK_CUR));
}

int main(int argc, char **argv)
{
	if (argc > 1 && (chroot(argv[1]) < 0 || chdir("/") < 0)) {
		perror("chroot");
		return 1;
	}
	int fd = open("/data/a.txt", O_RDONLY);
	char buf[64], req[16];
	long n = read(fd, buf, 2); /* at init: the runtime (its window made at the open) */
	if (fd < 0 || n != 2 || read(0, req, sizeof(req)) < 0)
		return 1;
	n = read(fd, buf, 3);
	show("runtime read 3", buf, n, fd);
	n = host_read(fd, buf, 2);
	show("host read 2", buf, n, fd);
	n = read(fd, buf, 1);
	show("runtime read 1", buf, n, fd);
	lseek(fd, 1, SEEK_SET);
	n = host_read(fd, buf, 4);
	show("seek 1, host read 4", buf, n, fd);
	n = pread(fd, buf, 3, 0);
	show("pread 3 at 0", buf, n, fd);
	close(fd);
	fd = open("/data/a.txt", O_RDONLY);
	n = host_read(fd, buf, 3);
	show("reopened, host read 3", buf, n, fd);
	n = read(fd, buf, sizeof(buf));
	show("runtime read rest", buf, n, fd);
	return 0;
}
