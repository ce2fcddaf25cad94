/* Opening a function image: read the file once, validate it, find its syscall sites. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "ember/ember.h"
#include "image/img.h"
#include "vm/vm.h"

#define IMG_MAX_FILE (256ULL << 20)

int img_from_bytes(const void *buf, size_t len, struct img **out, char *err, size_t errlen)
{
	struct img *img = calloc(1, sizeof(*img));
	if (!img || !(img->buf = malloc(len ? len : 1))) {
		free(img);
		snprintf(err, errlen, "out of memory");
		return EMBER_ERR_NOMEM;
	}
	memcpy(img->buf, buf, len);
	img->len = len;
	img->digest = XXH64(buf, len, 0);
	int rc = EMBER_ERR_IMAGE;
	if (img_elf_parse(img->buf, len, &img->elf, err, errlen))
		goto fail;
	int src = img_find_sites(img->buf, len, &img->elf, &img->sites, err, errlen);
	if (src) {
		rc = src == -1 ? EMBER_ERR_IMAGE : src == -ENOMEM ? EMBER_ERR_NOMEM : EMBER_ERR;
		goto fail;
	}
	/* int $0x80 and sysenter are refused when executed (vm_fault.c), not here: a program
	 * may hold one it never runs (gpgv-static, sash) */
	*out = img;
	return 0;
fail:
	img_close(img);
	return rc;
}

int img_open(const char *path, struct img **out, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) { /* missing or not readable: the image; no memory, no file slot: the host */
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return vm_errno_kind(errno, EMBER_ERR_IMAGE);
	}
	struct stat sb;
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || (uint64_t)sb.st_size > IMG_MAX_FILE) {
		snprintf(err, errlen, "%s: not a regular file of at most 256 MiB", path);
		close(fd);
		return EMBER_ERR_IMAGE;
	}
	size_t len = (size_t)sb.st_size, got = 0;
	uint8_t *buf = NULL;
	int e = -base_read_fd(fd, IMG_MAX_FILE, &buf, &got);
	/* a read error is the disk's; a file that changed size, the image's */
	int rc = e ? vm_errno_kind(e, EMBER_ERR_IO) : got != len ? EMBER_ERR_IMAGE : 0;
	close(fd);
	if (rc) {
		free(buf);
		snprintf(err, errlen, "%s: cannot read the file: %s", path,
			 rc == EMBER_ERR_IMAGE ? "it shrank while being read" : strerror(e));
		return rc;
	}
	rc = img_from_bytes(buf, len, out, err, errlen);
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
