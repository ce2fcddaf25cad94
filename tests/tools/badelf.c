/* Malformed ELF variants: each case copies a good static executable and breaks one thing in it. */
#include <elf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "badelf.h"

#define PAGE 0x1000ULL

/* The variant being built: a malloc'd copy of the good image that mutators edit in place. */
struct var {
	uint8_t *p;
	size_t len;
	Elf64_Ehdr eh; /* a copy of the good image's header; put_eh writes it back */
};

uint64_t badelf_rand(uint64_t *state)
{
	uint64_t x = *state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1DULL;
}

static void put_eh(struct var *v)
{
	memcpy(v->p, &v->eh, sizeof(v->eh));
}

static Elf64_Phdr get_ph(const struct var *v, int i)
{
	Elf64_Phdr ph;
	memcpy(&ph, v->p + v->eh.e_phoff + (size_t)i * sizeof(ph), sizeof(ph));
	return ph;
}

static void put_ph(struct var *v, int i, const Elf64_Phdr *ph)
{
	memcpy(v->p + v->eh.e_phoff + (size_t)i * sizeof(*ph), ph, sizeof(*ph));
}

/* The program header index of the k-th PT_LOAD (k < 0: the last one), or -1. */
static int load_index(const struct var *v, int k)
{
	int last = -1;
	for (int i = 0, n = 0; i < v->eh.e_phnum; i++) {
		if (get_ph(v, i).p_type != PT_LOAD)
			continue;
		if (n++ == k)
			return i;
		last = i;
	}
	return k < 0 ? last : -1;
}

/* The index of a program header that can be repurposed without touching a PT_LOAD, or -1. */
static int spare_index(const struct var *v)
{
	static const uint32_t prefer[] = {PT_GNU_STACK,	   PT_NOTE,	 PT_GNU_PROPERTY,
					  PT_GNU_EH_FRAME, PT_GNU_RELRO, PT_TLS};
	for (size_t k = 0; k < sizeof(prefer) / sizeof(prefer[0]); k++)
		for (int i = 0; i < v->eh.e_phnum; i++)
			if (get_ph(v, i).p_type == prefer[k])
				return i;
	return -1;
}

/* The end of the highest PT_LOAD in memory. */
static uint64_t image_end(const struct var *v)
{
	uint64_t hi = 0;
	for (int i = 0; i < v->eh.e_phnum; i++) {
		Elf64_Phdr ph = get_ph(v, i);
		if (ph.p_type == PT_LOAD && ph.p_vaddr + ph.p_memsz > hi)
			hi = ph.p_vaddr + ph.p_memsz;
	}
	return hi;
}

/* Appends n bytes at an 8-aligned offset; returns that offset, or 0 when out of memory. */
static uint64_t append(struct var *v, const void *data, size_t n)
{
	size_t off = (v->len + 7) & ~(size_t)7;
	uint8_t *np = realloc(v->p, off + n);
	if (!np)
		return 0;
	memset(np + v->len, 0, off - v->len);
	memcpy(np + off, data, n);
	v->p = np;
	v->len = off + n;
	return off;
}

static int truncate_to(struct var *v, size_t n)
{
	if (n > v->len)
		return 1;
	v->len = n;
	return 0;
}

/* --- the cases ----------------------------------------------------------------------------- */

static int m_empty(struct var *v)
{
	v->len = 0;
	return 0;
}

static int m_bad_magic(struct var *v)
{
	v->p[1] = 'X';
	return 0;
}

static int m_class32(struct var *v)
{
	v->p[EI_CLASS] = ELFCLASS32;
	return 0;
}

static int m_class_none(struct var *v)
{
	v->p[EI_CLASS] = ELFCLASSNONE;
	return 0;
}

static int m_bigendian(struct var *v)
{
	v->p[EI_DATA] = ELFDATA2MSB;
	return 0;
}

static int m_data_none(struct var *v)
{
	v->p[EI_DATA] = ELFDATANONE;
	return 0;
}

static int m_ident_version(struct var *v)
{
	v->p[EI_VERSION] = EV_NONE;
	return 0;
}

static int m_version(struct var *v)
{
	v->eh.e_version = 2;
	put_eh(v);
	return 0;
}

static int m_machine_arm(struct var *v)
{
	v->eh.e_machine = EM_AARCH64;
	put_eh(v);
	return 0;
}

static int m_type_rel(struct var *v)
{
	v->eh.e_type = ET_REL;
	put_eh(v);
	return 0;
}

static int m_type_core(struct var *v)
{
	v->eh.e_type = ET_CORE;
	put_eh(v);
	return 0;
}

static int m_type_unknown(struct var *v)
{
	v->eh.e_type = ET_LOOS;
	put_eh(v);
	return 0;
}

static int m_ehsize_wrong(struct var *v)
{
	v->eh.e_ehsize = 52;
	put_eh(v);
	return 0;
}

static int m_truncated_ident(struct var *v)
{
	return truncate_to(v, 10);
}

static int m_truncated_header(struct var *v)
{
	return truncate_to(v, 20);
}

static int m_truncated_phdrs(struct var *v)
{
	return truncate_to(v, v->eh.e_phoff + (size_t)v->eh.e_phnum * sizeof(Elf64_Phdr) - 1);
}

static int m_truncated_segment(struct var *v)
{
	uint64_t end = 0;
	for (int i = 0; i < v->eh.e_phnum; i++) {
		Elf64_Phdr ph = get_ph(v, i);
		if (ph.p_type == PT_LOAD && ph.p_filesz && ph.p_offset + ph.p_filesz > end)
			end = ph.p_offset + ph.p_filesz;
	}
	if (end == 0)
		return 1;
	return truncate_to(v, end - 1);
}

static int m_phnum_huge(struct var *v)
{
	v->eh.e_phnum = 65535;
	put_eh(v);
	return 0;
}

static int m_phnum_toomany(struct var *v)
{
	v->eh.e_phnum = 65;
	put_eh(v);
	return 0;
}

static int m_phnum_zero(struct var *v)
{
	v->eh.e_phnum = 0;
	put_eh(v);
	return 0;
}

static int m_phentsize_wrong(struct var *v)
{
	v->eh.e_phentsize = 32;
	put_eh(v);
	return 0;
}

static int m_phoff_past_end(struct var *v)
{
	v->eh.e_phoff = v->len + 64;
	put_eh(v);
	return 0;
}

static int m_phoff_overflow(struct var *v)
{
	v->eh.e_phoff = UINT64_MAX - 8;
	put_eh(v);
	return 0;
}

static int m_seg_filesz_gt_memsz(struct var *v)
{
	int i = load_index(v, -1);
	Elf64_Phdr ph = get_ph(v, i);
	if (ph.p_filesz == 0)
		return 1;
	ph.p_memsz = ph.p_filesz - 1;
	put_ph(v, i, &ph);
	return 0;
}

static int m_seg_offset_past_end(struct var *v)
{
	int i = load_index(v, -1);
	Elf64_Phdr ph = get_ph(v, i);
	ph.p_offset += (v->len + PAGE) & ~(PAGE - 1); /* keeps p_offset congruent to p_vaddr */
	put_ph(v, i, &ph);
	return 0;
}

static int m_seg_offset_overflow(struct var *v)
{
	int i = load_index(v, -1);
	Elf64_Phdr ph = get_ph(v, i);
	ph.p_offset = 0xfffffffffffff000ULL | (ph.p_vaddr & (PAGE - 1));
	if (ph.p_filesz < 2 * PAGE)
		ph.p_filesz = 2 * PAGE;
	if (ph.p_memsz < ph.p_filesz)
		ph.p_memsz = ph.p_filesz;
	put_ph(v, i, &ph);
	return 0;
}

static int m_seg_overlap(struct var *v)
{
	int a = load_index(v, 0), b = load_index(v, 1);
	if (b < 0)
		return 1;
	Elf64_Phdr pa = get_ph(v, a), pb = get_ph(v, b);
	/* start b inside a's bytes, keeping b's vaddr congruent to its offset */
	pb.p_vaddr = (pa.p_vaddr & ~(PAGE - 1)) + (pb.p_offset & (PAGE - 1));
	if (pb.p_vaddr < pa.p_vaddr)
		pb.p_vaddr += PAGE;
	if (pb.p_vaddr >= pa.p_vaddr + pa.p_memsz)
		return 1;
	put_ph(v, b, &pb);
	return 0;
}

static int m_seg_order(struct var *v)
{
	int a = load_index(v, 0), b = load_index(v, 1);
	if (b < 0)
		return 1;
	Elf64_Phdr pa = get_ph(v, a), pb = get_ph(v, b);
	put_ph(v, a, &pb);
	put_ph(v, b, &pa);
	return 0;
}

static int m_seg_vaddr_overflow(struct var *v)
{
	int i = load_index(v, -1);
	Elf64_Phdr ph = get_ph(v, i);
	ph.p_vaddr = 0xfffffffffffff000ULL | (ph.p_offset & (PAGE - 1));
	put_ph(v, i, &ph);
	return 0;
}

static int m_seg_noncanonical(struct var *v)
{
	int i = load_index(v, -1);
	Elf64_Phdr ph = get_ph(v, i);
	ph.p_vaddr = 0x800000000000ULL | (ph.p_offset & (PAGE - 1));
	put_ph(v, i, &ph);
	return 0;
}

static int m_seg_huge(struct var *v)
{
	int i = load_index(v, -1);
	Elf64_Phdr ph = get_ph(v, i);
	ph.p_memsz = 1ULL << 45;
	put_ph(v, i, &ph);
	return 0;
}

static int m_seg_align(struct var *v)
{
	int i = load_index(v, 0);
	Elf64_Phdr ph = get_ph(v, i);
	ph.p_align = 0x1800;
	put_ph(v, i, &ph);
	return 0;
}

static int m_seg_misaligned(struct var *v)
{
	int i = load_index(v, 0);
	Elf64_Phdr ph = get_ph(v, i);
	ph.p_vaddr += 1;
	put_ph(v, i, &ph);
	return 0;
}

/* A fresh program header table of 20 small PT_LOADs, appended to the file. */
static int m_seg_too_many(struct var *v)
{
	enum { N = 20 };
	Elf64_Phdr tab[N];
	uint64_t base = load_index(v, 0) >= 0 ? get_ph(v, load_index(v, 0)).p_vaddr : 0x400000;
	for (int i = 0; i < N; i++)
		tab[i] = (Elf64_Phdr){.p_type = PT_LOAD,
				      .p_flags = PF_R | PF_X,
				      .p_offset = 0,
				      .p_vaddr = (base & ~(PAGE - 1)) + (uint64_t)i * PAGE,
				      .p_filesz = 0x40,
				      .p_memsz = 0x40,
				      .p_align = PAGE};
	uint64_t off = append(v, tab, sizeof(tab));
	if (!off)
		return -1;
	v->eh.e_phoff = off;
	v->eh.e_phnum = N;
	put_eh(v);
	return 0;
}

static int m_no_load(struct var *v)
{
	for (int i = 0; i < v->eh.e_phnum; i++) {
		Elf64_Phdr ph = get_ph(v, i);
		if (ph.p_type != PT_LOAD)
			continue;
		ph.p_type = PT_NULL;
		put_ph(v, i, &ph);
	}
	return 0;
}

static int m_entry_outside(struct var *v)
{
	v->eh.e_entry = image_end(v) + 0x1000;
	put_eh(v);
	return 0;
}

static int m_entry_in_data(struct var *v)
{
	for (int i = 0; i < v->eh.e_phnum; i++) {
		Elf64_Phdr ph = get_ph(v, i);
		if (ph.p_type != PT_LOAD || (ph.p_flags & PF_X) || ph.p_filesz <= 0x10)
			continue;
		v->eh.e_entry = ph.p_vaddr + 0x10;
		put_eh(v);
		return 0;
	}
	return 1;
}

static int m_entry_zero_dyn(struct var *v)
{
	v->eh.e_type = ET_DYN;
	v->eh.e_entry = 0;
	put_eh(v);
	return 0;
}

/* Turns a spare program header into a PT_INTERP naming a relative path appended to the file
 * (a dynamic program's absolute one is loaded: tests/integration/test_dynamic.sh) */
static int m_interp_relative(struct var *v)
{
	static const char interp[] = "lib64/ld-linux-x86-64.so.2";
	int i = spare_index(v);
	if (i < 0)
		return 1;
	uint64_t off = append(v, interp, sizeof(interp));
	if (!off)
		return -1;
	Elf64_Phdr ph = {.p_type = PT_INTERP,
			 .p_flags = PF_R,
			 .p_offset = off,
			 .p_filesz = sizeof(interp),
			 .p_memsz = sizeof(interp),
			 .p_align = 1};
	put_ph(v, i, &ph);
	return 0;
}

static int m_interp_outside(struct var *v)
{
	int i = spare_index(v);
	if (i < 0)
		return 1;
	Elf64_Phdr ph = {.p_type = PT_INTERP,
			 .p_flags = PF_R,
			 .p_offset = v->len + 0x100,
			 .p_filesz = 28,
			 .p_memsz = 28,
			 .p_align = 1};
	put_ph(v, i, &ph);
	return 0;
}

/* Makes the image an ET_DYN whose PT_DYNAMIC (appended) asks for libc.so.6. */
static int m_dynamic_needed(struct var *v)
{
	Elf64_Dyn dyn[2] = {{.d_tag = DT_NEEDED, .d_un.d_val = 1}, {.d_tag = DT_NULL}};
	int i = spare_index(v);
	if (i < 0)
		return 1;
	uint64_t off = append(v, dyn, sizeof(dyn));
	if (!off)
		return -1;
	Elf64_Phdr ph = {.p_type = PT_DYNAMIC,
			 .p_flags = PF_R | PF_W,
			 .p_offset = off,
			 .p_filesz = sizeof(dyn),
			 .p_memsz = sizeof(dyn),
			 .p_align = 8};
	put_ph(v, i, &ph);
	v->eh.e_type = ET_DYN;
	put_eh(v);
	return 0;
}

static int m_dynamic_outside(struct var *v)
{
	int i = spare_index(v);
	if (i < 0)
		return 1;
	Elf64_Phdr ph = {.p_type = PT_DYNAMIC,
			 .p_flags = PF_R | PF_W,
			 .p_offset = UINT64_MAX - 0x10,
			 .p_filesz = 0x20,
			 .p_memsz = 0x20,
			 .p_align = 8};
	put_ph(v, i, &ph);
	return 0;
}

/* Moves the program headers to the end of the file, where no PT_LOAD maps them. */
static int m_phdrs_unmapped(struct var *v)
{
	size_t n = (size_t)v->eh.e_phnum * sizeof(Elf64_Phdr);
	for (int i = 0; i < v->eh.e_phnum; i++) {
		Elf64_Phdr ph = get_ph(v, i);
		if (ph.p_type != PT_PHDR)
			continue;
		ph.p_type = PT_NULL;
		put_ph(v, i, &ph);
	}
	uint8_t *tab = malloc(n);
	if (!tab)
		return -1;
	memcpy(tab, v->p + v->eh.e_phoff, n);
	uint64_t off = append(v, tab, n);
	free(tab);
	if (!off)
		return -1;
	v->eh.e_phoff = off;
	put_eh(v);
	return 0;
}

/* Points PT_PHDR (an existing one, else a new one in a spare slot) outside the image. */
static int m_phdr_bad_vaddr(struct var *v)
{
	int i = -1;
	for (int k = 0; k < v->eh.e_phnum && i < 0; k++)
		if (get_ph(v, k).p_type == PT_PHDR)
			i = k;
	if (i < 0)
		i = spare_index(v);
	if (i < 0)
		return 1;
	uint64_t n = (uint64_t)v->eh.e_phnum * sizeof(Elf64_Phdr);
	Elf64_Phdr ph = {.p_type = PT_PHDR,
			 .p_flags = PF_R,
			 .p_offset = v->eh.e_phoff,
			 .p_vaddr = image_end(v) + 0x10000,
			 .p_filesz = n,
			 .p_memsz = n,
			 .p_align = 8};
	put_ph(v, i, &ph);
	return 0;
}

static int m_random_garbage(struct var *v)
{
	uint64_t s = 0x454d424552ULL; /* "EMBER" */
	v->len = 4096;
	uint8_t *np = realloc(v->p, v->len);
	if (!np)
		return -1;
	v->p = np;
	for (size_t i = 0; i < v->len; i++)
		v->p[i] = (uint8_t)badelf_rand(&s);
	return 0;
}

static int m_garbage_after_ident(struct var *v)
{
	uint64_t s = 0x6761726261676521ULL;
	if (m_random_garbage(v) < 0)
		return -1;
	memcpy(v->p, &v->eh, EI_NIDENT);
	for (size_t i = EI_NIDENT; i < v->len; i++)
		v->p[i] = (uint8_t)badelf_rand(&s);
	return 0;
}

struct entry {
	struct badelf_case c;
	int (*make)(struct var *v);
};

static const struct entry cases[] = {
    {{"empty", "empty file"}, m_empty},
    {{"bad_magic", "bad magic"}, m_bad_magic},
    {{"class32", "32-bit"}, m_class32},
    {{"class_none", "bad ELF class"}, m_class_none},
    {{"bigendian", "big-endian"}, m_bigendian},
    {{"data_none", "data encoding"}, m_data_none},
    {{"ident_version", "bad ELF version"}, m_ident_version},
    {{"version", "bad ELF version"}, m_version},
    {{"machine_arm", "e_machine 183"}, m_machine_arm},
    {{"type_rel", "e_type 1"}, m_type_rel},
    {{"type_core", "e_type 4"}, m_type_core},
    {{"type_unknown", "e_type"}, m_type_unknown},
    {{"ehsize_wrong", "e_ehsize"}, m_ehsize_wrong},
    {{"truncated_ident", "truncated"}, m_truncated_ident},
    {{"truncated_header", "truncated"}, m_truncated_header},
    {{"truncated_phdrs", "truncated: program headers"}, m_truncated_phdrs},
    {{"truncated_segment", "truncated: segment"}, m_truncated_segment},
    {{"phnum_huge", "too many program headers (65535)"}, m_phnum_huge},
    {{"phnum_toomany", "too many program headers (65)"}, m_phnum_toomany},
    {{"phnum_zero", "no program headers"}, m_phnum_zero},
    {{"phentsize_wrong", "e_phentsize"}, m_phentsize_wrong},
    {{"phoff_past_end", "truncated: program headers"}, m_phoff_past_end},
    {{"phoff_overflow", "out of range"}, m_phoff_overflow},
    {{"seg_filesz_gt_memsz", "p_filesz"}, m_seg_filesz_gt_memsz},
    {{"seg_offset_past_end", "truncated: segment"}, m_seg_offset_past_end},
    {{"seg_offset_overflow", "out of range"}, m_seg_offset_overflow},
    {{"seg_overlap", "overlaps"}, m_seg_overlap},
    {{"seg_order", "out of order"}, m_seg_order},
    {{"seg_vaddr_overflow", "47-bit"}, m_seg_vaddr_overflow},
    {{"seg_noncanonical", "47-bit"}, m_seg_noncanonical},
    {{"seg_huge", "too large"}, m_seg_huge},
    {{"seg_align", "power of two"}, m_seg_align},
    {{"seg_misaligned", "congruent"}, m_seg_misaligned},
    {{"seg_too_many", "too many PT_LOAD"}, m_seg_too_many},
    {{"no_load", "no PT_LOAD"}, m_no_load},
    {{"entry_outside", "entry point"}, m_entry_outside},
    {{"entry_in_data", "entry point"}, m_entry_in_data},
    {{"entry_zero_dyn", "shared library"}, m_entry_zero_dyn},
    {{"interp_relative", "PT_INTERP path is not an absolute path"}, m_interp_relative},
    {{"interp_outside", "PT_INTERP"}, m_interp_outside},
    {{"dynamic_needed", "DT_NEEDED"}, m_dynamic_needed},
    {{"dynamic_outside", "PT_DYNAMIC"}, m_dynamic_outside},
    {{"phdrs_unmapped", "AT_PHDR"}, m_phdrs_unmapped},
    {{"phdr_bad_vaddr", "PT_PHDR"}, m_phdr_bad_vaddr},
    {{"random_garbage", "bad magic"}, m_random_garbage},
    {{"garbage_after_ident", NULL}, m_garbage_after_ident},
};

size_t badelf_count(void)
{
	return sizeof(cases) / sizeof(cases[0]);
}

const struct badelf_case *badelf_case(size_t i)
{
	return i < badelf_count() ? &cases[i].c : NULL;
}

/* true when good has a 64-bit header and a program header table with a PT_LOAD inside it */
static bool usable(const uint8_t *good, size_t len, const Elf64_Ehdr *eh)
{
	if (len < sizeof(*eh) || memcmp(good, ELFMAG, SELFMAG) != 0 || good[EI_CLASS] != ELFCLASS64)
		return false;
	if (eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phnum == 0 || eh->e_phoff > len ||
	    (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) > len - eh->e_phoff)
		return false;
	for (int i = 0; i < eh->e_phnum; i++) {
		Elf64_Phdr ph;
		memcpy(&ph, good + eh->e_phoff + (size_t)i * sizeof(ph), sizeof(ph));
		if (ph.p_type == PT_LOAD)
			return true;
	}
	return false;
}

int badelf_make(size_t i, const uint8_t *good, size_t len, uint8_t **out, size_t *outlen)
{
	struct var v = {0};

	*out = NULL;
	*outlen = 0;
	if (i >= badelf_count())
		return -1;
	if (len >= sizeof(v.eh))
		memcpy(&v.eh, good, sizeof(v.eh));
	if (!usable(good, len, &v.eh))
		return -1;
	v.p = malloc(len);
	if (!v.p)
		return -1;
	memcpy(v.p, good, len);
	v.len = len;

	int rc = cases[i].make(&v);
	if (rc != 0) {
		free(v.p);
		return rc;
	}
	*out = v.p;
	*outlen = v.len;
	return 0;
}
