/* A file read from a function, measured (bench/files.sh): /data/big.bin is opened during init;
 * each request is a count N of 4 KiB pread64 calls on it, and the bytes' sum is the answer. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc > 1 && (chroot(argv[1]) < 0 || chdir("/") < 0)) {
		perror("chroot");
		return 1;
	}
	int fd = open("/data/big.bin", O_RDONLY);
	char req[32] = {0};
	if (fd < 0 || read(0, req, sizeof(req) - 1) < 0)
		return 1;
	long n = atol(req);
	static unsigned char buf[4096];
	unsigned long sum = 0;
	for (long i = 0; i < n; i++) {
		if (pread(fd, buf, sizeof(buf), (i * 4096) % (1 << 20)) != sizeof(buf))
			return 2;
		sum += buf[i % sizeof(buf)];
	}
	printf("%ld reads, sum %lu\n", n, sum);
	return 0;
}
