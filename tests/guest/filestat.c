/* A bundle's file opened in a request and asked what an import asks of it (tests/integration/
 * test_files.sh): fstat (musl's fstat: the fstat call) and newfstatat of the descriptor (glibc's),
 * each against stat of its path, which the host serves; a terminal's ioctl; the read. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

int main(void)
{
	char req[16], buf[64];
	if (read(0, req, sizeof(req)) < 0)
		return 1;
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
	return close(fd);
}
