/* Opening a function image: read the file once, validate it, find its syscall sites. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "image/img.h"

#define IMG_MAX_FILE (256ULL << 20)

int img_from_bytes(const void *buf, size_t len, struct img **out, char *err, size_t errlen)
{
	struct img *img = calloc(1, sizeof(*img));
	if (!img || !(img->buf = malloc(len ? len : 1))) {
		free(img);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	memcpy(img->buf, buf, len);
	img->len = len;
	img->digest = XXH64(buf, len, 0);
	if (img_elf_parse(img->buf, len, &img->elf, err, errlen) ||
	    img_find_sites(img->buf, len, &img->elf, &img->sites, err, errlen))
		goto fail;
	if (img->sites.int80 || img->sites.sysenter) {
		snprintf(err, errlen,
			 "uses %s at %#llx: only the 64-bit `syscall` instruction is supported",
			 img->sites.int80 ? "int $0x80" : "sysenter",
			 (unsigned long long)img->sites.bad_addr);
		goto fail;
	}
	*out = img;
	return 0;
fail:
	img_close(img);
	return -1;
}

int img_open(const char *path, struct img **out, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	struct stat sb;
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || (uint64_t)sb.st_size > IMG_MAX_FILE) {
		snprintf(err, errlen, "%s: not a regular file of at most 256 MiB", path);
		close(fd);
		return -1;
	}
	size_t len = (size_t)sb.st_size;
	uint8_t *buf = malloc(len ? len : 1);
	size_t got = 0;
	while (buf && got < len) {
		ssize_t r = read(fd, buf + got, len - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	if (!buf || got != len) {
		free(buf);
		snprintf(err, errlen, "%s: cannot read the file", path);
		return -1;
	}
	int rc = img_from_bytes(buf, len, out, err, errlen);
	free(buf);
	return rc;
}

void img_close(struct img *img)
{
	if (!img)
		return;
	img_sites_free(&img->sites);
	free(img->buf);
	free(img);
}
