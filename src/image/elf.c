/* ELF validation: checks that a buffer holds a static x86-64 executable, describes its segments. */
#include <elf.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "ember/abi.h"
#include "image/img.h"

#define USER_TOP  (1ULL << 47) /* end of the canonical lower half */
#define IMAGE_MAX (1ULL << 40) /* largest span of PT_LOAD segments we accept */

__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t errlen, const char *fmt,
						      ...)
{
	va_list ap;

	if (!err || !errlen)
		return -1;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* true when [off, off + size) lies inside a len-byte buffer */
static bool in_file(uint64_t off, uint64_t size, size_t len)
{
	return off <= len && size <= len - off;
}

/* Checks e_ident and the fixed fields of the ELF header. */
static int check_ehdr(const uint8_t *buf, size_t len, Elf64_Ehdr *eh, char *err, size_t errlen)
{
	if (len == 0)
		return fail(err, errlen, "empty file");
	if (len < SELFMAG || memcmp(buf, ELFMAG, SELFMAG) != 0)
		return fail(err, errlen, "not an ELF file (bad magic)");
	if (len < EI_NIDENT)
		return fail(err, errlen,
			    "truncated: the ELF header needs %zu bytes, the file has %zu",
			    sizeof(Elf64_Ehdr), len);
	if (buf[EI_CLASS] == ELFCLASS32)
		return fail(err, errlen, "32-bit ELF is not supported");
	if (buf[EI_CLASS] != ELFCLASS64)
		return fail(err, errlen, "bad ELF class (EI_CLASS %u)", buf[EI_CLASS]);
	if (buf[EI_DATA] == ELFDATA2MSB)
		return fail(err, errlen, "big-endian ELF is not supported");
	if (buf[EI_DATA] != ELFDATA2LSB)
		return fail(err, errlen, "bad ELF data encoding (EI_DATA %u)", buf[EI_DATA]);
	if (buf[EI_VERSION] != EV_CURRENT)
		return fail(err, errlen, "bad ELF version (EI_VERSION %u)", buf[EI_VERSION]);
	if (len < sizeof(Elf64_Ehdr))
		return fail(err, errlen,
			    "truncated: the ELF header needs %zu bytes, the file has %zu",
			    sizeof(Elf64_Ehdr), len);

	memcpy(eh, buf, sizeof(*eh));
	if (eh->e_version != EV_CURRENT)
		return fail(err, errlen, "bad ELF version (e_version %" PRIu32 ")", eh->e_version);
	if (eh->e_machine != EM_X86_64)
		return fail(err, errlen, "not an x86-64 executable (e_machine %u)", eh->e_machine);
	if (eh->e_type == ET_REL)
		return fail(err, errlen, "not an executable (e_type 1: a relocatable object file)");
	if (eh->e_type == ET_CORE)
		return fail(err, errlen, "not an executable (e_type 4: a core dump)");
	if (eh->e_type != ET_EXEC && eh->e_type != ET_DYN)
		return fail(err, errlen, "not an executable (e_type %u)", eh->e_type);
	if (eh->e_ehsize != sizeof(Elf64_Ehdr))
		return fail(err, errlen, "bad ELF header size (e_ehsize %u, expected %zu)",
			    eh->e_ehsize, sizeof(Elf64_Ehdr));
	if (eh->e_phentsize != sizeof(Elf64_Phdr))
		return fail(err, errlen, "bad program header size (e_phentsize %u, expected %zu)",
			    eh->e_phentsize, sizeof(Elf64_Phdr));
	if (eh->e_phnum == 0)
		return fail(err, errlen, "no program headers (e_phnum 0)");
	if (eh->e_phnum > IMG_MAX_PHNUM)
		return fail(err, errlen, "too many program headers (%u)", eh->e_phnum);

	uint64_t phsize = (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr);
	if (eh->e_phoff > UINT64_MAX - phsize)
		return fail(err, errlen, "program header offset 0x%" PRIx64 " is out of range",
			    eh->e_phoff);
	if (!in_file(eh->e_phoff, phsize, len))
		return fail(err, errlen,
			    "truncated: program headers end at byte %" PRIu64 " of a %zu-byte file",
			    eh->e_phoff + phsize, len);
	return 0;
}

/* The PT_INTERP path into out: inside the file, an absolute path of printable characters that
 * ends in a NUL within the segment; 0, or -1 with the reason */
static int interp_path(const uint8_t *buf, size_t len, const Elf64_Phdr *p, char *out, char *err,
		       size_t errlen)
{
	if (!in_file(p->p_offset, p->p_filesz, len))
		return fail(err, errlen, "the PT_INTERP segment lies outside the file");
	size_t k = 0;
	for (; k < p->p_filesz && k < IMG_INTERP_MAX; k++) {
		uint8_t c = buf[p->p_offset + k];
		if (c == '\0')
			break;
		if (c < 0x20 || c >= 0x7f)
			return fail(err, errlen, "the PT_INTERP path holds byte %#x", c);
		out[k] = (char)c;
	}
	if (k == p->p_filesz || k == IMG_INTERP_MAX || k == 0 || out[0] != '/')
		return fail(err, errlen,
			    "the PT_INTERP path is not an absolute path of at most %d bytes ending "
			    "in a NUL",
			    IMG_INTERP_MAX - 1);
	out[k] = '\0';
	return 0;
}

/* Refuses a PT_DYNAMIC that is malformed; counts the shared libraries it names (DT_NEEDED). */
static int check_dynamic(const uint8_t *buf, size_t len, const Elf64_Phdr *p, int idx, int *needed,
			 char *err, size_t errlen)
{
	if (!in_file(p->p_offset, p->p_filesz, len))
		return fail(err, errlen,
			    "the PT_DYNAMIC segment (program header %d) lies outside the file",
			    idx);
	for (uint64_t off = 0; off + sizeof(Elf64_Dyn) <= p->p_filesz; off += sizeof(Elf64_Dyn)) {
		Elf64_Dyn d;
		memcpy(&d, buf + p->p_offset + off, sizeof(d));
		if (d.d_tag == DT_NULL)
			break;
		if (d.d_tag == DT_NEEDED)
			(*needed)++;
	}
	return 0;
}

static int prot_of(uint32_t flags)
{
	return ((flags & PF_R) ? PROT_READ : 0) | ((flags & PF_W) ? PROT_WRITE : 0) |
	       ((flags & PF_X) ? PROT_EXEC : 0);
}

/* 1 when the PT_NOTE segment p holds a note named "Go" (the Go toolchain's build id): a Go
 * program, whose runtime relies on faults at page 0 and reserves much address space. Notes
 * outside the file, or malformed, say nothing. */
static int go_note(const uint8_t *buf, size_t len, const Elf64_Phdr *p)
{
	if (p->p_offset > len || p->p_filesz > len - p->p_offset)
		return 0;
	const uint8_t *n = buf + p->p_offset, *end = n + p->p_filesz;
	while (end - n >= 12) {
		uint32_t namesz, descsz;
		memcpy(&namesz, n, 4);
		memcpy(&descsz, n + 4, 4);
		size_t name = ((size_t)namesz + 3) & ~(size_t)3,
		       desc = ((size_t)descsz + 3) & ~(size_t)3;
		if (name > (size_t)(end - n - 12) || desc > (size_t)(end - n - 12) - name)
			return 0;
		if ((namesz == 3 || namesz == 4) && !memcmp(n + 12, "Go", 3)) /* "Go\0", padded */
			return 1;
		n += 12 + name + desc;
	}
	return 0;
}

/* Validates one PT_LOAD (program header idx) and appends it to out->segs. */
static int add_load(size_t len, const Elf64_Phdr *p, int idx, struct img_elf *out, int *segidx,
		    char *err, size_t errlen)
{
	if (p->p_filesz > p->p_memsz)
		return fail(err, errlen,
			    "segment %d: p_filesz 0x%" PRIx64 " is larger than p_memsz 0x%" PRIx64,
			    idx, p->p_filesz, p->p_memsz);
	if (p->p_offset > UINT64_MAX - p->p_filesz)
		return fail(err, errlen, "segment %d: file offset 0x%" PRIx64 " is out of range",
			    idx, p->p_offset);
	if (!in_file(p->p_offset, p->p_filesz, len))
		return fail(err, errlen,
			    "truncated: segment %d ends at byte %" PRIu64 " of a %zu-byte file",
			    idx, p->p_offset + p->p_filesz, len);
	if (p->p_vaddr >= USER_TOP || p->p_memsz > USER_TOP - p->p_vaddr)
		return fail(err, errlen,
			    "segment %d: 0x%" PRIx64 " bytes at 0x%" PRIx64
			    " do not fit below the 47-bit address limit",
			    idx, p->p_memsz, p->p_vaddr);
	if (p->p_align & (p->p_align - 1))
		return fail(err, errlen, "segment %d: p_align 0x%" PRIx64 " is not a power of two",
			    idx, p->p_align);
	if ((p->p_vaddr - p->p_offset) % EMBER_PAGE_SIZE)
		return fail(err, errlen,
			    "segment %d: p_vaddr 0x%" PRIx64 " and p_offset 0x%" PRIx64
			    " are not congruent modulo the page size",
			    idx, p->p_vaddr, p->p_offset);
	if (out->nsegs == IMG_MAX_SEGS)
		return fail(err, errlen, "too many PT_LOAD segments (more than %d)", IMG_MAX_SEGS);
	if (out->nsegs > 0) {
		const struct img_seg *prev = &out->segs[out->nsegs - 1];
		int pidx = segidx[out->nsegs - 1];
		if (p->p_vaddr < prev->vaddr)
			return fail(err, errlen,
				    "segment %d is out of order (p_vaddr 0x%" PRIx64
				    " is below segment %d's 0x%" PRIx64 ")",
				    idx, p->p_vaddr, pidx, prev->vaddr);
		if (p->p_vaddr - prev->vaddr < prev->memsz)
			return fail(err, errlen, "segment %d overlaps segment %d", idx, pidx);
	}

	struct img_seg *s = &out->segs[out->nsegs];
	s->vaddr = p->p_vaddr;
	s->memsz = p->p_memsz;
	s->filesz = p->p_filesz;
	s->offset = p->p_offset;
	s->prot = prot_of(p->p_flags);
	segidx[out->nsegs++] = idx;
	return 0;
}

/* The segment whose file-backed bytes hold [addr, addr + size), or NULL. */
static const struct img_seg *seg_holding(const struct img_elf *e, uint64_t addr, uint64_t size)
{
	for (int i = 0; i < e->nsegs; i++) {
		const struct img_seg *s = &e->segs[i];
		if (addr >= s->vaddr && addr - s->vaddr <= s->filesz &&
		    size <= s->filesz - (addr - s->vaddr))
			return s;
	}
	return NULL;
}

/* Finds where the program headers are in memory (AT_PHDR). */
static int find_phdr(const Elf64_Ehdr *eh, const Elf64_Phdr *ph, struct img_elf *out, char *err,
		     size_t errlen)
{
	uint64_t phsize = (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr);

	for (int i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type != PT_PHDR)
			continue;
		if (!seg_holding(out, ph[i].p_vaddr, phsize))
			return fail(err, errlen,
				    "the PT_PHDR address 0x%" PRIx64
				    " is not inside a loaded segment",
				    ph[i].p_vaddr);
		out->phdr_vaddr = ph[i].p_vaddr;
		return 0;
	}
	for (int i = 0; i < out->nsegs; i++) {
		const struct img_seg *s = &out->segs[i];
		if (eh->e_phoff >= s->offset && eh->e_phoff - s->offset <= s->filesz &&
		    phsize <= s->filesz - (eh->e_phoff - s->offset)) {
			out->phdr_vaddr = s->vaddr + (eh->e_phoff - s->offset);
			return 0;
		}
	}
	return fail(err, errlen, "program headers are not inside any PT_LOAD segment (no AT_PHDR)");
}

/* lib: a shared library mapped at run time, described for its code only (no entry, no
 * interpreter needed, its program headers anywhere) */
static int parse(const uint8_t *buf, size_t len, struct img_elf *out, int lib, char *err,
		 size_t errlen)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph[IMG_MAX_PHNUM];
	int segidx[IMG_MAX_SEGS];

	if (!buf && len)
		return fail(err, errlen, "no buffer");
	if (check_ehdr(buf, len, &eh, err, errlen) < 0)
		return -1;
	memcpy(ph, buf + eh.e_phoff, (size_t)eh.e_phnum * sizeof(Elf64_Phdr));

	/* a dynamic program names its interpreter (ld.so), which loads the libraries it needs */
	int needed = 0;
	for (int i = 0; i < eh.e_phnum; i++) {
		if (ph[i].p_type == PT_INTERP && out->interp[0])
			return fail(err, errlen, "more than one PT_INTERP");
		if (ph[i].p_type == PT_INTERP &&
		    interp_path(buf, len, &ph[i], out->interp, err, errlen) < 0)
			return -1;
		if (ph[i].p_type == PT_DYNAMIC &&
		    check_dynamic(buf, len, &ph[i], i, &needed, err, errlen) < 0)
			return -1;
	}
	if (needed && !out->interp[0] && !lib)
		return fail(err, errlen,
			    "needs shared libraries (DT_NEEDED) but names no interpreter "
			    "(PT_INTERP) to load them");
	if (eh.e_type == ET_DYN && eh.e_entry == 0 && !lib)
		return fail(err, errlen,
			    "shared library, not an executable (ET_DYN with e_entry 0)");

	for (int i = 0; i < eh.e_phnum; i++) {
		const Elf64_Phdr *p = &ph[i];
		if (p->p_type == PT_GNU_STACK && !out->stack_size)
			out->stack_size = p->p_memsz;
		if (p->p_type == PT_NOTE && go_note(buf, len, p))
			out->go = 1;
		if (p->p_type != PT_LOAD || p->p_memsz == 0)
			continue;
		if (add_load(len, p, i, out, segidx, err, errlen) < 0)
			return -1;
	}
	if (out->nsegs == 0)
		return fail(err, errlen, "no PT_LOAD segments");

	const struct img_seg *last = &out->segs[out->nsegs - 1];
	out->lo = out->segs[0].vaddr & ~(EMBER_PAGE_SIZE - 1);
	out->hi = (last->vaddr + last->memsz + EMBER_PAGE_SIZE - 1) & ~(EMBER_PAGE_SIZE - 1);
	if (out->hi - out->lo >= IMAGE_MAX)
		return fail(err, errlen, "image too large (its segments span 0x%" PRIx64 " bytes)",
			    out->hi - out->lo);

	const struct img_seg *es = seg_holding(out, eh.e_entry, 1);
	if (!lib && (!es || !(es->prot & PROT_EXEC)))
		return fail(err, errlen,
			    "entry point 0x%" PRIx64 " is not inside an executable segment",
			    eh.e_entry);
	if (!lib && find_phdr(&eh, ph, out, err, errlen) < 0)
		return -1;

	out->pie = eh.e_type == ET_DYN;
	out->entry = eh.e_entry;
	out->phnum = eh.e_phnum;
	out->phentsize = eh.e_phentsize;
	return 0;
}

static int parse_as(const uint8_t *buf, size_t len, struct img_elf *out, int lib, char *err,
		    size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (err && errlen)
		err[0] = '\0';
	if (parse(buf, len, out, lib, err, errlen) == 0)
		return 0;
	memset(out, 0, sizeof(*out));
	return -1;
}

int img_elf_parse(const uint8_t *buf, size_t len, struct img_elf *out, char *err, size_t errlen)
{
	return parse_as(buf, len, out, 0, err, errlen);
}

int img_elf_parse_lib(const uint8_t *buf, size_t len, struct img_elf *out, char *err, size_t errlen)
{
	return parse_as(buf, len, out, 1, err, errlen);
}
