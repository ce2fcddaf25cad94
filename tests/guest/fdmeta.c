/* Descriptors, pipes and /proc as Linux has them (tests/integration/test_fdmeta.sh): each check
 * prints "NAME: ok" or "NAME: FAIL" with what it saw, the same in a virtine as natively. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

static int failed;

static void check(const char *name, int ok, long got)
{
	if (ok)
		printf("%s: ok\n", name);
	else
		printf("%s: FAIL (got %ld, errno %d)\n", name, got, errno);
	failed |= !ok;
}

/* rc is -1 with errno e */
static void fails(const char *name, long rc, int e)
{
	check(name, rc == -1 && errno == e, rc);
}

static void cmdline(int argc, char **argv)
{
	char want[4096], got[4096];
	size_t n = 0;
	for (int i = 0; i < argc; i++) {
		size_t k = strlen(argv[i]) + 1;
		memcpy(want + n, argv[i], k);
		n += k;
	}
	int fd = open("/proc/self/cmdline", O_RDONLY);
	check("cmdline open", fd >= 0, fd);
	ssize_t r = read(fd, got, sizeof(got));
	check("cmdline: argv, NUL-separated", r == (ssize_t)n && !memcmp(got, want, n), r);
	close(fd);
	fd = open("/proc/sys/fs/pipe-max-size", O_RDONLY);
	r = fd < 0 ? -1 : read(fd, got, sizeof(got));
	check("pipe-max-size", r == 8 && !memcmp(got, "1048576\n", 8), r);
	close(fd);
}

/* Linux's struct linux_dirent (the old getdents) */
struct dent {
	unsigned long ino, off;
	unsigned short reclen;
	char name[];
};

static void getdents_old(void)
{
	char a[32768], b[32768];
	int fd = open("/tmp", O_RDONLY | O_DIRECTORY);
	long n64 = syscall(SYS_getdents64, fd, a, sizeof(a));
	lseek(fd, 0, SEEK_SET);
	long n = syscall(SYS_getdents, fd, b, sizeof(b));
	check("getdents", n > 0, n);
	/* the same names as getdents64's, each with its type in its record's last byte */
	int same = n > 0 && n64 > 0, dirs = 0;
	long i = 0, j = 0;
	for (; same && i < n && j < n64; i += ((struct dent *)(b + i))->reclen) {
		struct dent *d = (struct dent *)(b + i);
		struct dirent64 *e = (struct dirent64 *)(a + j);
		same = !strcmp(d->name, e->d_name) && b[i + d->reclen - 1] == e->d_type;
		dirs += !strcmp(d->name, ".") && b[i + d->reclen - 1] == DT_DIR;
		j += e->d_reclen;
	}
	check("getdents: getdents64's names and types", same && i == n && j == n64 && dirs == 1,
	      i);
	lseek(fd, 0, SEEK_SET);
	fails("getdents with a count past INT_MAX", syscall(SYS_getdents, fd, b, 0x80000000UL),
	      EINVAL);
	close(fd);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "exec")) { /* the checks again in the program exec'd */
		char *args[] = {"fdmeta", "after", "an exec", NULL}, *env[] = {NULL};
		execve("/proc/self/exe", args, env);
		check("execve", 0, -1);
		return 1;
	}
	cmdline(argc, argv);
	getdents_old();
	return failed;
}
