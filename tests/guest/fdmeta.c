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

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "exec")) { /* the checks again in the program exec'd */
		char *args[] = {"fdmeta", "after", "an exec", NULL}, *env[] = {NULL};
		execve("/proc/self/exe", args, env);
		check("execve", 0, -1);
		return 1;
	}
	cmdline(argc, argv);
	return failed;
}
