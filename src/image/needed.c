/* The shared libraries a dynamic ELF file names (DT_NEEDED), read from its dynamic string table. */
#include <elf.h>
#include <stdio.h>
#include <string.h>

#include "image/img.h"

static int in_file(uint64_t off, uint64_t n, size_t len)
{
	return off <= len && n <= len - off;
}

/* the file offset of the virtual address v, from the PT_LOAD header holding it, or -1 */
static int64_t offset_of(const Elf64_Phdr *ph, int phnum, uint64_t v)
{
	for (int i = 0; i < phnum; i++)
		if (ph[i].p_type == PT_LOAD && v >= ph[i].p_vaddr &&
		    v - ph[i].p_vaddr < ph[i].p_filesz)
			return (int64_t)(ph[i].p_offset + (v - ph[i].p_vaddr));
	return -1;
}

int img_needed(const uint8_t *buf, size_t len, char (*names)[IMG_NEEDED_NAME], int max, int *n,
	       char *err, size_t errlen)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph[IMG_MAX_PHNUM];
	*n = 0;
	if (len < sizeof(eh))
		return snprintf(err, errlen, "not an ELF file"), -1;
	memcpy(&eh, buf, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > IMG_MAX_PHNUM ||
	    !in_file(eh.e_phoff, (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr), len))
		return snprintf(err, errlen, "not a 64-bit ELF file"), -1;
	memcpy(ph, buf + eh.e_phoff, (size_t)eh.e_phnum * sizeof(Elf64_Phdr));
	const Elf64_Phdr *dyn = NULL;
	for (int i = 0; i < eh.e_phnum; i++)
		if (ph[i].p_type == PT_DYNAMIC)
			dyn = &ph[i];
	if (!dyn)
		return 0;
	if (!in_file(dyn->p_offset, dyn->p_filesz, len))
		return snprintf(err, errlen, "PT_DYNAMIC lies outside the file"), -1;
	uint64_t strtab = 0, strsz = 0;
	size_t nd = dyn->p_filesz / sizeof(Elf64_Dyn);
	const uint8_t *d0 = buf + dyn->p_offset;
	for (size_t i = 0; i < nd; i++) {
		Elf64_Dyn d;
		memcpy(&d, d0 + i * sizeof(d), sizeof(d));
		if (d.d_tag == DT_NULL)
			break;
		if (d.d_tag == DT_STRTAB)
			strtab = d.d_un.d_ptr;
		if (d.d_tag == DT_STRSZ)
			strsz = d.d_un.d_val;
	}
	int64_t str = offset_of(ph, eh.e_phnum, strtab);
	if (str < 0 || !in_file((uint64_t)str, strsz, len))
		return snprintf(err, errlen, "its dynamic string table lies outside the file"), -1;
	for (size_t i = 0; i < nd; i++) {
		Elf64_Dyn d;
		memcpy(&d, d0 + i * sizeof(d), sizeof(d));
		if (d.d_tag == DT_NULL)
			break;
		if (d.d_tag != DT_NEEDED)
			continue;
		const char *s = (const char *)buf + str + d.d_un.d_val;
		size_t room = d.d_un.d_val < strsz ? strsz - d.d_un.d_val : 0;
		size_t k = strnlen(s, room);
		int printable = 1;
		for (size_t j = 0; j < k; j++)
			printable &= s[j] > 0x20 && s[j] < 0x7f;
		if (!room || k == room || k == 0 || k >= IMG_NEEDED_NAME || memchr(s, '/', k) ||
		    !printable)
			return snprintf(err, errlen, "a DT_NEEDED name is not a file name"), -1;
		if (*n == max)
			return snprintf(err, errlen, "more than %d DT_NEEDED", max), -1;
		memcpy(names[*n], s, k + 1);
		(*n)++;
	}
	return 0;
}
