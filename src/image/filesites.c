/* The syscall sites of an ELF file by file offset, for the emulation to rewrite them where the
 * program maps the file executable at run time (the libraries ld.so maps). */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "image/img.h"

/* the file offset of the executable segment's byte at vaddr, or UINT64_MAX when none holds it */
static uint64_t file_off(const struct img_elf *elf, uint64_t vaddr)
{
	for (int i = 0; i < elf->nsegs; i++) {
		const struct img_seg *s = &elf->segs[i];
		if ((s->prot & PROT_EXEC) && vaddr >= s->vaddr && vaddr - s->vaddr < s->filesz)
			return s->offset + (vaddr - s->vaddr);
	}
	return UINT64_MAX;
}

int img_file_sites(const uint8_t *buf, size_t len, struct img_sites *out)
{
	struct img_elf elf;
	int rc;
	if (img_elf_parse_lib(buf, len, &elf, NULL, 0))
		return -1;
	if ((rc = img_find_sites(buf, len, &elf, out, NULL, 0)))
		return rc == -ENOMEM ? -ENOMEM : -1;
	size_t k = 0;
	for (size_t i = 0; i < out->n; i++) {
		uint64_t off = file_off(&elf, out->addr[i]);
		/* both bytes in the segment's file part (a site the sweep found there always is) */
		if (off == UINT64_MAX || file_off(&elf, out->addr[i] + 1) != off + 1)
			continue;
		out->addr[k] = off;
		out->callable[k++] = out->callable[i];
	}
	out->n = k;
	out->ncallable = 0;
	for (size_t i = 0; i < k; i++)
		out->ncallable += out->callable[i] != 0;
	return 0;
}
