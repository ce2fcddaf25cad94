/* Unit tests for img_find_sites: hand-made code, symbol-guided resync, the real guests. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <elf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

#include "image/img.h"

/*
 * Hand-made images have two PT_LOADs: a read-only one over the headers, with syscall-like bytes
 * planted at PLANT_OFF that must be ignored, and an executable one holding the code at CODE_VA.
 */
#define BASE_VA	  0x400000ULL
#define CODE_OFF  0x100ULL
#define CODE_VA	  (BASE_VA + 0x1000 + CODE_OFF)
#define PLANT_OFF 0xf0

enum corrupt {
	C_NONE,
	C_SHOFF_PAST_END,
	C_SHENTSIZE,
	C_SHNUM_HUGE,
	C_SYMTAB_PAST_END,
	C_SYMTAB_SIZE_OVERFLOW,
	C_SYMTAB_ENTSIZE,
	C_NCORRUPT,
	C_SHNUM_EXTENDED, /* not a corruption: e_shnum 0, the count in section 0's sh_size */
};

/* Builds the image; funcs are function-start offsets into code (nfuncs 0: no section headers). */
static uint8_t *make_elf(const uint8_t *code, size_t ncode, const size_t *funcs, size_t nfuncs,
			 enum corrupt c, size_t *len)
{
	size_t symoff = (CODE_OFF + ncode + 7) & ~7ULL;
	size_t nsyms =
	    nfuncs ? nfuncs + 3 : 0; /* null, the functions, an object, an undefined one */
	size_t stroff = symoff + nsyms * sizeof(Elf64_Sym);
	size_t shoff = (stroff + 1 + 7) & ~7ULL;
	size_t total = nfuncs ? shoff + 4 * sizeof(Elf64_Shdr) : CODE_OFF + ncode;
	uint8_t *b = calloc(1, total);

	assert_non_null(b);
	Elf64_Ehdr eh = {.e_type = ET_EXEC,
			 .e_machine = EM_X86_64,
			 .e_version = EV_CURRENT,
			 .e_entry = CODE_VA,
			 .e_phoff = sizeof(Elf64_Ehdr),
			 .e_shoff = nfuncs ? shoff : 0,
			 .e_ehsize = sizeof(Elf64_Ehdr),
			 .e_phentsize = sizeof(Elf64_Phdr),
			 .e_phnum = 2,
			 .e_shentsize = sizeof(Elf64_Shdr),
			 .e_shnum = nfuncs ? 4 : 0};
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	Elf64_Phdr ph[2] = {
	    {.p_type = PT_LOAD,
	     .p_flags = PF_R,
	     .p_offset = 0,
	     .p_vaddr = BASE_VA,
	     .p_filesz = CODE_OFF,
	     .p_memsz = CODE_OFF,
	     .p_align = 0x1000},
	    {.p_type = PT_LOAD,
	     .p_flags = PF_R | PF_X,
	     .p_offset = CODE_OFF,
	     .p_vaddr = CODE_VA,
	     .p_filesz = ncode,
	     .p_memsz = ncode,
	     .p_align = 0x1000},
	};
	static const uint8_t plant[] = {0x0f, 0x05, 0xcd, 0x80, 0x0f, 0x34};
	memcpy(b + PLANT_OFF, plant, sizeof(plant));
	memcpy(b + CODE_OFF, code, ncode);

	if (nfuncs) {
		Elf64_Sym *syms = calloc(nsyms, sizeof(*syms));
		assert_non_null(syms);
		for (size_t i = 0; i < nfuncs; i++)
			syms[1 + i] = (Elf64_Sym){.st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
						  .st_shndx = 1,
						  .st_value = CODE_VA + funcs[i]};
		/* neither of these may restart the sweep: they point into f2's syscall */
		syms[nfuncs + 1] = (Elf64_Sym){.st_info = ELF64_ST_INFO(STB_LOCAL, STT_OBJECT),
					       .st_shndx = 1,
					       .st_value = CODE_VA + 3};
		syms[nfuncs + 2] = (Elf64_Sym){.st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
					       .st_shndx = SHN_UNDEF,
					       .st_value = CODE_VA + 3};
		memcpy(b + symoff, syms, nsyms * sizeof(*syms));
		free(syms);
		Elf64_Shdr sh[4] = {
		    {0},
		    {.sh_type = SHT_PROGBITS,
		     .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
		     .sh_addr = CODE_VA,
		     .sh_offset = CODE_OFF,
		     .sh_size = ncode},
		    {.sh_type = SHT_SYMTAB,
		     .sh_offset = symoff,
		     .sh_size = nsyms * sizeof(Elf64_Sym),
		     .sh_link = 3,
		     .sh_entsize = sizeof(Elf64_Sym)},
		    {.sh_type = SHT_STRTAB, .sh_offset = stroff, .sh_size = 1},
		};
		switch (c) {
		case C_SHOFF_PAST_END:
			eh.e_shoff = total - 16;
			break;
		case C_SHENTSIZE:
			eh.e_shentsize = 40;
			break;
		case C_SHNUM_HUGE:
			eh.e_shnum = 0xffff;
			break;
		case C_SYMTAB_PAST_END:
			sh[2].sh_offset = total + 24;
			break;
		case C_SYMTAB_SIZE_OVERFLOW:
			sh[2].sh_size = UINT64_MAX - 0x10;
			break;
		case C_SYMTAB_ENTSIZE:
			sh[2].sh_entsize = 16;
			break;
		case C_SHNUM_EXTENDED:
			eh.e_shnum = 0;
			sh[0].sh_size = 4;
			break;
		default:
			break;
		}
		memcpy(b + shoff, sh, sizeof(sh));
	}
	memcpy(b, &eh, sizeof(eh));
	memcpy(b + sizeof(eh), ph, sizeof(ph));
	*len = total;
	return b;
}

/* Parses the image (it must be valid) and finds its sites. */
static void sites_of(const uint8_t *buf, size_t len, struct img_elf *e, struct img_sites *s)
{
	char err[256];
	if (img_elf_parse(buf, len, e, err, sizeof(err)) != 0)
		fail_msg("hand-made image refused: %s", err);
	if (img_find_sites(buf, len, e, s, err, sizeof(err)) != 0)
		fail_msg("img_find_sites: %s", err);
}

static void test_mov_immediate(void **state)
{
	static const uint8_t code[] = {
	    0xb8, 0x0f, 0x05, 0x00, 0x00, /* mov $0x50f, %eax: no site inside */
	    0x0f, 0x05,			  /* syscall */
	    0xcd, 0x80,			  /* int $0x80 */
	    0x0f, 0x34,			  /* sysenter */
	    0xcd, 0x81,			  /* int $0x81: not counted */
	    0xc3,
	};
	struct img_elf e;
	struct img_sites s;
	size_t len;

	(void)state;
	uint8_t *b = make_elf(code, sizeof(code), NULL, 0, C_NONE, &len);
	sites_of(b, len, &e, &s);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.addr[0], CODE_VA + 5);
	assert_int_equal(s.int80, 1);
	assert_int_equal(s.sysenter, 1);
	assert_int_equal(s.bad_addr, CODE_VA + 7);
	img_sites_free(&s);
	assert_null(s.addr);
	assert_int_equal(s.n, 0);
	img_sites_free(&s); /* twice is harmless */
	free(b);
}

static void test_int80_sysenter_counts(void **state)
{
	static const uint8_t code[] = {0x0f, 0x34, 0x90, 0xcd, 0x80, 0xcd, 0x80, 0x66,
				       0xcd, 0x80, 0x0f, 0x34, 0x0f, 0x05, 0xc3};
	struct img_elf e;
	struct img_sites s;
	size_t len;

	(void)state;
	uint8_t *b = make_elf(code, sizeof(code), NULL, 0, C_NONE, &len);
	sites_of(b, len, &e, &s);
	assert_int_equal(s.int80, 3);
	assert_int_equal(s.sysenter, 2);
	assert_int_equal(s.bad_addr, CODE_VA); /* the first one, a sysenter */
	assert_int_equal(s.n, 1);
	assert_int_equal(s.addr[0], CODE_VA + 12);
	img_sites_free(&s);
	free(b);
}

/* An undecodable byte is skipped; a prefixed syscall reports where its 0f 05 is. */
static void test_undecodable_and_prefixed(void **state)
{
	static const uint8_t code[] = {
	    0x06,	      /* push %es: invalid in 64-bit mode */
	    0x0f, 0x05,	      /* syscall at +1 */
	    0x48, 0x0f, 0x05, /* rex.W syscall: its 0f 05 at +4 */
	    0xc3,
	};
	struct img_elf e;
	struct img_sites s;
	size_t len;

	(void)state;
	uint8_t *b = make_elf(code, sizeof(code), NULL, 0, C_NONE, &len);
	sites_of(b, len, &e, &s);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.addr[0], CODE_VA + 1);
	assert_int_equal(s.addr[1], CODE_VA + 4);
	img_sites_free(&s);
	free(b);
}

/*
 * A stray data byte between two functions swallows the second function's syscall in a plain
 * linear sweep; the symbol table restarts decoding where the second function begins.
 */
static const uint8_t desync_code[] = {
    0xc3,		    /* f1: ret */
    0xb8,		    /* data, the opcode of mov $imm32, %eax */
    0x0f, 0x05,		    /* f2: syscall */
    0xc3,		    /* ret */
    0x90, 0x90, 0x90, 0x90, /* nops */
};
static const size_t desync_funcs[] = {0, 2};

static void test_symbols_resync(void **state)
{
	struct img_elf e;
	struct img_sites s;
	size_t len;

	(void)state;
	uint8_t *b = make_elf(desync_code, sizeof(desync_code), NULL, 0, C_NONE, &len);
	sites_of(b, len, &e, &s);
	assert_int_equal(s.n, 0); /* mov $0x90c3050f, %eax */
	img_sites_free(&s);
	free(b);

	static const enum corrupt fine[] = {C_NONE, C_SHNUM_EXTENDED};
	for (size_t k = 0; k < sizeof(fine) / sizeof(fine[0]); k++) {
		b = make_elf(desync_code, sizeof(desync_code), desync_funcs, 2, fine[k], &len);
		sites_of(b, len, &e, &s);
		assert_int_equal(s.n, 1);
		assert_int_equal(s.addr[0], CODE_VA + 2);
		img_sites_free(&s);
		free(b);
	}
}

/* A malformed section header or symbol table means no symbols, never an error. */
static void test_bad_symtab_ignored(void **state)
{
	(void)state;
	for (int c = C_SHOFF_PAST_END; c < C_NCORRUPT; c++) {
		struct img_elf e;
		struct img_sites s;
		size_t len;
		uint8_t *b = make_elf(desync_code, sizeof(desync_code), desync_funcs, 2,
				      (enum corrupt)c, &len);
		sites_of(b, len, &e, &s);
		if (s.n != 0)
			fail_msg("corruption %d: symbols were used", c);
		img_sites_free(&s);
		free(b);
	}
}

static void test_internal_errors(void **state)
{
	static const uint8_t code[] = {0x0f, 0x05, 0xc3};
	struct img_elf e;
	struct img_sites s;
	char err[256];
	size_t len;

	(void)state;
	uint8_t *b = make_elf(code, sizeof(code), NULL, 0, C_NONE, &len);
	sites_of(b, len, &e, &s);
	img_sites_free(&s);
	/* a description that does not match the buffer */
	e.segs[1].filesz = len;
	assert_int_equal(img_find_sites(b, len, &e, &s, err, sizeof(err)), -1);
	assert_true(err[0] != '\0');
	assert_null(s.addr);
	assert_int_equal(s.n, 0);
	free(b);
}

/* --- the real guest binaries --------------------------------------------------------------- */

static uint8_t *load_guest(const char *name, size_t *len, char *path, size_t n)
{
	struct stat st;
	const char *dir = getenv("EMBER_GUEST_DIR");

	snprintf(path, n, "%s/%s", dir && *dir ? dir : "build/guest", name);
	FILE *f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open %s (build the guests, or set EMBER_GUEST_DIR)", path);
	assert_int_equal(fstat(fileno(f), &st), 0);
	uint8_t *buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)st.st_size, f), (size_t)st.st_size);
	fclose(f);
	*len = (size_t)st.st_size;
	return buf;
}

/* The addresses of the `syscall` instructions objdump finds, or -1 when objdump is missing. */
static long objdump_sites(const char *path, uint64_t **out)
{
	char cmd[4200], line[512];
	size_t n = 0, cap = 0;

	*out = NULL;
	if (system("command -v objdump >/dev/null 2>&1") != 0)
		return -1;
	snprintf(cmd, sizeof(cmd), "objdump -d --no-show-raw-insn '%s' 2>/dev/null", path);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		uint64_t addr;
		char mnem[32];
		/* "  401234:\tsyscall" */
		if (sscanf(line, " %" SCNx64 ":\t%31s", &addr, mnem) != 2 ||
		    strcmp(mnem, "syscall"))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			*out = realloc(*out, cap * sizeof(**out));
			assert_non_null(*out);
		}
		(*out)[n++] = addr;
	}
	assert_int_equal(pclose(p), 0);
	return (long)n;
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0->tv_sec) * 1e3 + (t1.tv_nsec - t0->tv_nsec) / 1e6;
}

static void check_guest(const char *name, int want_objdump)
{
	char path[4096], err[256];
	struct img_elf e;
	struct img_sites s;
	struct timespec t0;
	size_t len;

	uint8_t *buf = load_guest(name, &len, path, sizeof(path));
	if (img_elf_parse(buf, len, &e, err, sizeof(err)) != 0)
		fail_msg("%s refused: %s", path, err);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (img_find_sites(buf, len, &e, &s, err, sizeof(err)) != 0)
		fail_msg("%s: img_find_sites: %s", path, err);
	double ms = ms_since(&t0);

	assert_true(s.n > 0);
	assert_int_equal(s.int80, 0);
	assert_int_equal(s.sysenter, 0);
	for (size_t i = 0; i < s.n; i++) {
		int hit = 0;
		if (i > 0)
			assert_true(s.addr[i] > s.addr[i - 1]);
		for (int k = 0; k < e.nsegs; k++) {
			const struct img_seg *g = &e.segs[k];
			if (!(g->prot & PROT_EXEC) || s.addr[i] < g->vaddr ||
			    s.addr[i] + 2 > g->vaddr + g->filesz)
				continue;
			const uint8_t *p = buf + g->offset + (s.addr[i] - g->vaddr);
			if (p[0] != 0x0f || p[1] != 0x05)
				fail_msg("%s: site 0x%" PRIx64 " holds %02x %02x", name, s.addr[i],
					 p[0], p[1]);
			hit = 1;
		}
		if (!hit)
			fail_msg("%s: site 0x%" PRIx64 " is not in code", name, s.addr[i]);
	}
	/* generous: the budget is well under 100 ms, this also has to hold under ASan */
	assert_true(ms < 1000);

	uint64_t *od;
	long n = want_objdump ? objdump_sites(path, &od) : -1;
	print_message("%s: %zu sites in %.1f ms, objdump %ld\n", name, s.n, ms, n);
	if (n >= 0) {
		for (size_t i = 0, j = 0; i < s.n || j < (size_t)n;) {
			if (j >= (size_t)n || (i < s.n && s.addr[i] < od[j]))
				print_message("  only ember: 0x%" PRIx64 "\n", s.addr[i++]);
			else if (i >= s.n || od[j] < s.addr[i])
				print_message("  only objdump: 0x%" PRIx64 "\n", od[j++]);
			else
				i++, j++;
		}
		assert_int_equal(s.n, (size_t)n);
		assert_memory_equal(s.addr, od, s.n * sizeof(*od));
		free(od);
	}
	img_sites_free(&s);
	free(buf);
}

static void test_guest_musl(void **state)
{
	(void)state;
	check_guest("hello.musl", 1);
	check_guest("hello.musl-pie", 1);
}

static void test_guest_glibc(void **state)
{
	(void)state;
	check_guest("hello.glibc", 1);
	check_guest("hello.glibc-pie", 1);
}

/* The guests built to be refused: their int $0x80 / sysenter must be found and located. */
static void check_bad_guest(const char *name, const uint8_t insn[2], int is_int80)
{
	char path[4096], err[256];
	struct img_elf e;
	struct img_sites s;
	size_t len;

	uint8_t *buf = load_guest(name, &len, path, sizeof(path));
	if (img_elf_parse(buf, len, &e, err, sizeof(err)) != 0)
		fail_msg("%s refused: %s", path, err);
	assert_int_equal(img_find_sites(buf, len, &e, &s, err, sizeof(err)), 0);
	assert_true(is_int80 ? s.int80 > 0 : s.sysenter > 0);
	int hit = 0;
	for (int k = 0; k < e.nsegs; k++) {
		const struct img_seg *g = &e.segs[k];
		if ((g->prot & PROT_EXEC) && s.bad_addr >= g->vaddr &&
		    s.bad_addr + 2 <= g->vaddr + g->filesz) {
			assert_memory_equal(buf + g->offset + (s.bad_addr - g->vaddr), insn, 2);
			hit = 1;
		}
	}
	assert_true(hit);
	print_message("%s: %zu int80, %zu sysenter, first at 0x%" PRIx64 "\n", name, s.int80,
		      s.sysenter, s.bad_addr);
	img_sites_free(&s);
	free(buf);
}

static void test_guest_bad(void **state)
{
	static const uint8_t int80[2] = {0xcd, 0x80}, sysenter[2] = {0x0f, 0x34};
	(void)state;
	check_bad_guest("bad_int80.musl", int80, 1);
	check_bad_guest("bad_sysenter.musl", sysenter, 0);
}

static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	struct stat sb;
	if (!f || fstat(fileno(f), &sb) != 0)
		fail_msg("%s: cannot open", path);
	uint8_t *buf = malloc((size_t)sb.st_size);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)sb.st_size, f), (size_t)sb.st_size);
	fclose(f);
	*len = (size_t)sb.st_size;
	return buf;
}

/* The host's libc.so.6 as ld.so maps it at run time (hello.dyn's): its sites by file offset,
 * each on a `syscall` of the file; stripped, it gives its function starts through its .dynsym,
 * so most may take the call form. libm.so.6 (DT_NEEDED, no entry) is read as a library, never
 * as an executable. */
static void test_library_sites(void **state)
{
	(void)state;
	struct img_sites s;
	struct img_elf e;
	char err[256];
	size_t len;
	uint8_t *buf = read_file("/lib/x86_64-linux-gnu/libc.so.6", &len);
	assert_int_equal(img_file_sites(buf, len, &s), 0);
	assert_true(s.n > 100);
	assert_true(s.ncallable > s.n / 2);
	for (size_t i = 0; i < s.n; i++)
		if (s.addr[i] + 2 > len || buf[s.addr[i]] != 0x0f || buf[s.addr[i] + 1] != 0x05)
			fail_msg("libc.so.6: site at file offset 0x%" PRIx64 " is no syscall",
				 s.addr[i]);
	print_message("libc.so.6: %zu sites, %zu may take the call form\n", s.n, s.ncallable);
	img_sites_free(&s);
	free(buf);
	buf = read_file("/lib/x86_64-linux-gnu/libm.so.6", &len);
	assert_int_equal(img_elf_parse(buf, len, &e, err, sizeof(err)), -1);
	assert_int_equal(img_elf_parse_lib(buf, len, &e, err, sizeof(err)), 0);
	assert_int_equal(img_file_sites(buf, len, &s), 0);
	img_sites_free(&s);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_mov_immediate),
	    cmocka_unit_test(test_int80_sysenter_counts),
	    cmocka_unit_test(test_undecodable_and_prefixed),
	    cmocka_unit_test(test_symbols_resync),
	    cmocka_unit_test(test_bad_symtab_ignored),
	    cmocka_unit_test(test_internal_errors),
	    cmocka_unit_test(test_guest_musl),
	    cmocka_unit_test(test_guest_glibc),
	    cmocka_unit_test(test_library_sites),
	    cmocka_unit_test(test_guest_bad),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
