/* A bundle's file opened in a request and asked what an import asks of it (tests/integration/
 * test_files.sh): fstat (musl's fstat: the fstat call) and newfstatat of the descriptor (glibc's),
 * each against stat of its path, which the host serves; a terminal's ioctl; the read; then
 * its close, after which the descriptor is gone and the next open gets it again. With a path,
 * that file is opened, read and closed during the initialisation alone. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char req[16], buf[64];
	/* with a path: that file opened, read and closed before the snapshot point (the runtime's
	 * close, left for the host to make), and nothing else */
	int early = argc > 1 ? open(argv[1], O_RDONLY) : -1;
	if (early >= 0 && (read(early, buf, 1) != 1 || close(early)))
		return 3;
	if (read(0, req, sizeof(req)) < 0 || argc > 1)
		return argc > 1 ? 0 : 1;
	int fd = open("/data/a.txt", O_RDONLY);
	struct stat by_path, by_fd, at_fd;
	struct termios t;
	memset(&by_fd, 0xaa, sizeof(by_fd));
	memset(&at_fd, 0x55, sizeof(at_fd));
	if (fd < 0 || stat("/data/a.txt", &by_path) < 0 || syscall(SYS_fstat, fd, &by_fd) < 0 ||
	    syscall(SYS_newfstatat, fd, "", &at_fd, AT_EMPTY_PATH) < 0)
		return 2;
	int tty = ioctl(fd, TCGETS, &t) < 0 ? errno : 0;
	long n = read(fd, buf, sizeof(buf));
	printf("fstat %s, newfstatat %s, size %lld, TCGETS errno %d, read %ld, bad buffer %s\n",
	       memcmp(&by_path, &by_fd, sizeof(by_fd)) ? "differs" : "same",
	       memcmp(&by_path, &at_fd, sizeof(at_fd)) ? "differs" : "same",
	       (long long)by_fd.st_size, tty, n,
	       syscall(SYS_fstat, fd, (void *)8) < 0 && errno == EFAULT ? "EFAULT" : "no error");
	/* closed (by the runtime, the host's close made at the next call): gone for every call */
	int closed = close(fd);
	errno = 0;
	n = read(fd, buf, 1);
	int read_errno = errno;
	errno = 0;
	int st = fstat(fd, &by_fd), fstat_errno = errno;
	int again = open("/data/a.txt", O_RDONLY);
	printf("close %d, then read %ld errno %d, fstat %d errno %d, reopened on the same fd %s\n",
	       closed, n, read_errno, st, fstat_errno, again == fd ? "yes" : "no");
	return close(again);
}
