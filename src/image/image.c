/* Function images from bytes: validated, their syscall sites found; and given back. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "ember/ember.h"
#include "image/img.h"
#include "vm/vm.h"

int img_from_bytes(const void *buf, size_t len, struct img **out, char *err, size_t errlen)
{
	struct img *img = calloc(1, sizeof(*img));
	if (!img || !(img->buf = malloc(len ? len : 1))) {
		free(img);
		snprintf(err, errlen, "out of memory");
		return EMBER_ERR_NOMEM;
	}
	memcpy(img->buf, buf, len);
	img->own = IMG_OWN_HEAP;
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
	return img_open_kept(path, NULL, out, NULL, err, errlen);
}

void img_free(struct img *img)
{
	img_sites_free(&img->sites);
	free(img->later_dir);
	if (img->own == IMG_OWN_HEAP)
		free(img->buf);
	else if (img->own == IMG_OWN_MAP)
		munmap(img->buf, img->len ? img->len : 1);
	free(img);
}

void img_let_go(struct img *img)
{
	if (img && img->own == IMG_OWN_MAP && img->len)
		madvise(img->buf, img->len, MADV_DONTNEED);
}

void img_close(struct img *img)
{
	if (img && !img_unshare(img))
		img_free(img);
}
