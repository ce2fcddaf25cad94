/* Syscall-site discovery: a capstone sweep of the executable segments, restarted at functions
 * (their starts from the symbols, or Go's own table: pclntab.c). */
#include <capstone/capstone.h>
#include <elf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "image/img.h"

struct u64vec {
	uint64_t *v;
	size_t n;
	size_t cap;
};

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

static bool in_file(uint64_t off, uint64_t size, size_t len)
{
	return off <= len && size <= len - off;
}

static int push(uint64_t **v, size_t *n, size_t *cap, uint64_t x)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		uint64_t *nv = realloc(*v, ncap * sizeof(**v));
		if (!nv)
			return -1;
		*v = nv;
		*cap = ncap;
	}
	(*v)[(*n)++] = x;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* Sorts v and drops duplicates. */
static void sort_unique(uint64_t *v, size_t *n)
{
	size_t k = 0;

	if (*n == 0)
		return;
	qsort(v, *n, sizeof(*v), cmp_u64);
	for (size_t i = 1; i < *n; i++)
		if (v[i] != v[k])
			v[++k] = v[i];
	*n = k + 1;
}

/* true when addr is in the file-backed part of an executable segment */
static bool in_code(const struct img_elf *elf, uint64_t addr)
{
	for (int i = 0; i < elf->nsegs; i++) {
		const struct img_seg *s = &elf->segs[i];
		if ((s->prot & PROT_EXEC) && addr >= s->vaddr && addr - s->vaddr < s->filesz)
			return true;
	}
	return false;
}

/* Adds the function symbols of one symbol table section; a malformed section is skipped. */
static int symtab_starts(const uint8_t *buf, size_t len, const Elf64_Shdr *sh,
			 const struct img_elf *elf, struct u64vec *out)
{
	if (sh->sh_entsize != sizeof(Elf64_Sym) || !in_file(sh->sh_offset, sh->sh_size, len))
		return 0;
	for (uint64_t off = 0; off + sizeof(Elf64_Sym) <= sh->sh_size; off += sizeof(Elf64_Sym)) {
		Elf64_Sym sym;
		memcpy(&sym, buf + sh->sh_offset + off, sizeof(sym));
		int type = ELF64_ST_TYPE(sym.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		if (sym.st_shndx == SHN_UNDEF || !in_code(elf, sym.st_value))
			continue;
		if (push(&out->v, &out->n, &out->cap, sym.st_value) < 0)
			return -1;
	}
	return 0;
}

/* The starts of the first section of type (the gABI allows one SHT_SYMTAB: many aliases of one
 * table cost nothing): 1, 0 when there is none, -1 when out of memory. */
static int first_table(const uint8_t *buf, size_t len, const Elf64_Ehdr *eh, uint64_t shnum,
		       uint32_t type, const struct img_elf *elf, struct u64vec *out)
{
	for (uint64_t i = 0; i < shnum; i++) {
		Elf64_Shdr sh;
		memcpy(&sh, buf + eh->e_shoff + i * sizeof(sh), sizeof(sh));
		if (sh.sh_type == type)
			return symtab_starts(buf, len, &sh, elf, out) < 0 ? -1 : 1;
	}
	return 0;
}

/* Adds the entries of a Go program's own function table (pclntab.c) that lie in code. */
static int go_starts(const uint8_t *buf, size_t len, const Elf64_Ehdr *eh, uint64_t shnum,
		     const struct img_elf *elf, struct u64vec *out)
{
	struct img_functab t;
	uint64_t strndx = eh->e_shstrndx;

	if (strndx == SHN_XINDEX) { /* extended numbering: the index is in section 0's sh_link */
		Elf64_Shdr sh0;
		memcpy(&sh0, buf + eh->e_shoff, sizeof(sh0));
		strndx = sh0.sh_link;
	}
	if (!elf->go || !img_go_functab(buf, len, eh->e_shoff, shnum, strndx, &t))
		return 0;
	for (uint64_t i = 0; i < t.nfunc; i++) {
		uint64_t fn = img_go_func(&t, i);
		if (in_code(elf, fn) && push(&out->v, &out->n, &out->cap, fn) < 0)
			return -1;
	}
	return 0;
}

/*
 * Collects the start addresses of the functions named in the .symtab (else the .dynsym) that lie
 * in code, and for a Go program without a .symtab (go build -ldflags='-s -w') those of Go's own
 * function table, which are the .symtab's functions exactly (test_gostarts). Any malformation in
 * the section headers means no starts. Returns -1 only when out of memory.
 */
static int func_starts(const uint8_t *buf, size_t len, const struct img_elf *elf, int from,
		       struct u64vec *out)
{
	Elf64_Ehdr eh;

	if (len < sizeof(eh))
		return 0;
	memcpy(&eh, buf, sizeof(eh));
	if (eh.e_shoff == 0 || eh.e_shentsize != sizeof(Elf64_Shdr) ||
	    !in_file(eh.e_shoff, sizeof(Elf64_Shdr), len))
		return 0;
	uint64_t shnum = eh.e_shnum;
	if (shnum == 0) { /* extended numbering: the count is in section 0's sh_size */
		Elf64_Shdr sh0;
		memcpy(&sh0, buf + eh.e_shoff, sizeof(sh0));
		shnum = sh0.sh_size;
	}
	if (shnum > (len - eh.e_shoff) / sizeof(Elf64_Shdr))
		return 0;
	/* a stripped file (Debian's libc.so.6) has only its SHT_DYNSYM, whose exported functions
	 * are starts too: fewer, so a site's enclosing range may span static functions before it,
	 * all of which redzone.c's analysis reads as one (a use below rsp anywhere refuses it) */
	int symtab = 0, rc = 0;
	if (from & IMG_STARTS_SYMBOLS) {
		symtab = first_table(buf, len, &eh, shnum, SHT_SYMTAB, elf, out);
		if (symtab == 0)
			rc = first_table(buf, len, &eh, shnum, SHT_DYNSYM, elf, out);
	}
	if (symtab == 0 && rc >= 0 && (from & IMG_STARTS_GO))
		rc = go_starts(buf, len, &eh, shnum, elf, out);
	if (symtab < 0 || rc < 0)
		return -1;
	sort_unique(out->v, &out->n);
	return 0;
}

int img_func_starts(const uint8_t *buf, size_t len, const struct img_elf *elf, int from,
		    uint64_t **v, size_t *n)
{
	struct u64vec starts = {0};

	*v = NULL;
	*n = 0;
	if (func_starts(buf, len, elf, from, &starts) < 0) {
		free(starts.v);
		return -1;
	}
	*v = starts.v;
	*n = starts.n;
	return 0;
}

/* Records one decoded instruction if it is a syscall, int $0x80 or sysenter. */
static int classify(const cs_insn *in, struct img_sites *out)
{
	const uint8_t *b = in->bytes;
	uint16_t n = in->size;

	if (n < 2)
		return 0;
	switch (in->id) {
	case X86_INS_SYSCALL:
		/* a prefixed syscall still ends in 0f 05, and those two bytes are what is rewritten
		 */
		if (b[n - 2] != 0x0f || b[n - 1] != 0x05)
			return 0;
		return push(&out->addr, &out->n, &out->cap, in->address + n - 2);
	case X86_INS_INT:
		if (b[n - 2] != 0xcd || b[n - 1] != 0x80)
			return 0;
		if (!out->int80 && !out->sysenter)
			out->bad_addr = in->address;
		out->int80++;
		return 0;
	case X86_INS_SYSENTER:
		if (!out->int80 && !out->sysenter)
			out->bad_addr = in->address;
		out->sysenter++;
		return 0;
	default:
		return 0;
	}
}

/*
 * The offset of the second byte of the last pair in code that could end a syscall (0f 05),
 * int $0x80 (cd 80) or sysenter (0f 34), or 0 when there is none: no instruction that starts
 * at or beyond that offset can be one of them, so the sweep may stop there.
 */
static size_t interesting_end(const uint8_t *code, size_t size)
{
	for (size_t i = size; i >= 2; i--) {
		uint8_t a = code[i - 2], b = code[i - 1];
		if ((a == 0x0f && (b == 0x05 || b == 0x34)) || (a == 0xcd && b == 0x80))
			return i - 1;
	}
	return 0;
}

/*
 * Linear sweep of [code, code + size) at addr; an undecodable byte is skipped. The sweep stops
 * early once no syscall-like byte pair is left ahead, which skips most functions entirely.
 */
static int sweep(csh h, cs_insn *in, const uint8_t *code, size_t size, uint64_t addr,
		 struct img_sites *out)
{
	const uint8_t *stop = code + interesting_end(code, size);

	while (size > 0 && code < stop) {
		if (!cs_disasm_iter(h, &code, &size, &addr, in)) {
			code++;
			size--;
			addr++;
			continue;
		}
		if (classify(in, out) < 0)
			return -1;
	}
	return 0;
}

/* Sweeps one segment's file bytes, restarting at every function start inside it. */
static int sweep_seg(csh h, cs_insn *in, const uint8_t *buf, const struct img_seg *s,
		     const struct u64vec *starts, struct img_sites *out)
{
	uint64_t lo = s->vaddr, end = s->vaddr + s->filesz;
	size_t i = 0;

	while (i < starts->n && starts->v[i] <= lo)
		i++;
	while (lo < end) {
		uint64_t next = end;
		if (i < starts->n && starts->v[i] < end)
			next = starts->v[i++];
		if (sweep(h, in, buf + s->offset + (lo - s->vaddr), next - lo, lo, out) < 0)
			return -1;
		lo = next;
	}
	return 0;
}

int img_find_sites(const uint8_t *buf, size_t len, const struct img_elf *elf, struct img_sites *out,
		   char *err, size_t errlen)
{
	struct u64vec starts = {0};
	csh h;
	cs_insn *in = NULL;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if (err && errlen)
		err[0] = '\0';
	for (int i = 0; i < elf->nsegs; i++)
		if (!in_file(elf->segs[i].offset, elf->segs[i].filesz, len))
			return fail(err, errlen, "segment %d lies outside the %zu-byte image", i,
				    len);
	if (func_starts(buf, len, elf, IMG_STARTS_SYMBOLS | IMG_STARTS_GO, &starts) < 0) {
		free(starts.v);
		fail(err, errlen, "out of memory reading the symbol table");
		return -ENOMEM;
	}

	/* from here on, a failure is the host's (memory) or capstone's, never the image's */
	rc = -ENOMEM;
	cs_err ce = cs_open(CS_ARCH_X86, CS_MODE_64, &h);
	if (ce != CS_ERR_OK) {
		free(starts.v);
		fail(err, errlen, "capstone: %s", cs_strerror(ce));
		return ce == CS_ERR_MEM ? -ENOMEM : -EINVAL;
	}
	cs_option(h, CS_OPT_DETAIL, CS_OPT_OFF);
	in = cs_malloc(h);
	if (!in) {
		fail(err, errlen, "capstone: %s", cs_strerror(cs_errno(h)));
		goto out;
	}
	for (int i = 0; i < elf->nsegs; i++) {
		const struct img_seg *s = &elf->segs[i];
		if (!(s->prot & PROT_EXEC) || s->filesz == 0)
			continue;
		if (sweep_seg(h, in, buf, s, &starts, out) < 0) {
			fail(err, errlen, "out of memory recording syscall sites");
			goto out;
		}
	}
	sort_unique(out->addr, &out->n);
	if (img_mark_callable(buf, elf, starts.v, starts.n, out) < 0) {
		fail(err, errlen, "out of memory analysing syscall sites");
		goto out;
	}
	for (size_t i = 0; i < out->n; i++)
		out->ncallable += out->callable[i] != 0;
	rc = 0;
out:
	if (in)
		cs_free(in, 1);
	cs_close(&h);
	free(starts.v);
	if (rc < 0)
		img_sites_free(out);
	return rc;
}

void img_sites_free(struct img_sites *s)
{
	if (!s)
		return;
	free(s->addr);
	free(s->callable);
	memset(s, 0, sizeof(*s));
}
