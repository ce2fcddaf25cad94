/* Go's own function table (.gopclntab, the layout of Go 1.18 on): the function starts of a Go
 * program shipped without its symbol table (go build -ldflags='-s -w'). */
#include <elf.h>
#include <stdbool.h>
#include <string.h>

#include "image/img.h"

/* the header: magic, two zero pads, the instruction quantum, the pointer size, then eight
 * words: functions, files, runtime.text, and five offsets from the header, the last one of the
 * function table (nfunc pairs of 32-bit words, entry and data, then the end's entry) */
#define PCLN_HDR     (8 + 8 * 8)
#define PCLN_NFUNC   8
#define PCLN_TEXT    24
#define PCLN_FTAB    64
#define PCLN_ENT     8 /* bytes of one function's pair */
#define PCLN_QUANTUM 1 /* x86's instructions are byte-aligned */

/* the magics of the layout read here (Go 1.18 and 1.19; 1.20 on, whose header is the same) */
static const uint32_t magics[] = {0xfffffff0u, 0xfffffff1u};

/* a position-independent program's table is in its relro data, under another name */
static const char *const names[] = {".gopclntab", ".data.rel.ro.gopclntab"};

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static bool in_file(uint64_t off, uint64_t size, size_t len)
{
	return off <= len && size <= len - off;
}

/* section i's header, when it lies in buf */
static bool shdr(const uint8_t *buf, size_t len, uint64_t shoff, uint64_t nsh, uint64_t i,
		 Elf64_Shdr *sh)
{
	if (i >= nsh || nsh > (len - shoff) / sizeof(*sh))
		return false;
	memcpy(sh, buf + shoff + i * sizeof(*sh), sizeof(*sh));
	return true;
}

/* sh is named one of names[] in the string table strs (its bytes in buf) */
static bool named(const uint8_t *buf, const Elf64_Shdr *strs, const Elf64_Shdr *sh)
{
	if (sh->sh_name >= strs->sh_size)
		return false;
	const char *s = (const char *)buf + strs->sh_offset + sh->sh_name;
	uint64_t room = strs->sh_size - sh->sh_name;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i]) < room && !memcmp(s, names[i], strlen(names[i]) + 1))
			return true;
	return false;
}

/* the table's header holds together: a known magic, x86-64's quantum and pointer size, nfunc
 * pairs and the end's entry inside the section, the entries ascending */
static int parse(const uint8_t *tab, uint64_t size, struct img_functab *out)
{
	uint32_t magic = rd32(tab);
	bool known = false;
	for (size_t i = 0; i < sizeof(magics) / sizeof(magics[0]); i++)
		known |= magic == magics[i];
	if (!known || tab[4] || tab[5] || tab[6] != PCLN_QUANTUM || tab[7] != 8)
		return 0;
	uint64_t nfunc = rd64(tab + PCLN_NFUNC), ftab = rd64(tab + PCLN_FTAB);
	if (ftab < PCLN_HDR || ftab > size || size - ftab < 4 ||
	    nfunc > (size - ftab - 4) / PCLN_ENT)
		return 0;
	out->ent = tab + ftab;
	out->nfunc = nfunc;
	out->text = rd64(tab + PCLN_TEXT);
	for (uint64_t i = 0; i < nfunc; i++) /* the runtime's binary search needs them sorted */
		if (rd32(out->ent + i * PCLN_ENT) > rd32(out->ent + (i + 1) * PCLN_ENT))
			return 0;
	return 1;
}

int img_go_functab(const uint8_t *buf, size_t len, uint64_t shoff, uint64_t nsh, uint64_t shstrndx,
		   struct img_functab *out)
{
	Elf64_Shdr strs, sh;

	memset(out, 0, sizeof(*out));
	if (shoff > len || !shdr(buf, len, shoff, nsh, shstrndx, &strs) ||
	    strs.sh_type != SHT_STRTAB || !in_file(strs.sh_offset, strs.sh_size, len))
		return 0;
	for (uint64_t i = 1; i < nsh; i++) {
		if (!shdr(buf, len, shoff, nsh, i, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !named(buf, &strs, &sh))
			continue;
		if (!in_file(sh.sh_offset, sh.sh_size, len) || sh.sh_size < PCLN_HDR)
			return 0;
		return parse(buf + sh.sh_offset, sh.sh_size, out);
	}
	return 0;
}

uint64_t img_go_func(const struct img_functab *t, uint64_t i)
{
	return t->text + rd32(t->ent + i * PCLN_ENT);
}
