/* Write-all loops over short writes and EINTR, at the file offset or at a given one. Libc only:
 * the guest programs (functions/, runtimes/, tests/guest/) build it in too. */
#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#include "base/base.h"

static int write_at(int fd, const void *buf, size_t len, off_t off)
{
	const uint8_t *p = buf;
	while (len) {
		ssize_t w = off < 0 ? write(fd, p, len) : pwrite(fd, p, len, off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		len -= (size_t)w;
		if (off >= 0)
			off += w;
	}
	return 0;
}

int base_write_all(int fd, const void *buf, size_t len)
{
	return write_at(fd, buf, len, -1);
}

int base_pwrite_all(int fd, const void *buf, size_t len, off_t off)
{
	return off < 0 ? -EINVAL : write_at(fd, buf, len, off);
}
