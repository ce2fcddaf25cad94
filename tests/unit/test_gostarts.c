/* The function starts of a Go program from Go's own function table (pclntab.c, sites.c's
 * img_func_starts): the .symtab's exactly on the corpus's go_hello, the same for it stripped,
 * and nothing from a table that does not hold together. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <elf.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/base.h"
#include "image/img.h"

/* build/corpus/NAME, beside the guest programs the suites are given (EMBER_GUEST_DIR) */
static uint8_t *corpus(const char *name, size_t *len, struct img_elf *e)
{
	char dir[4096], path[4200];
	const char *g = getenv("EMBER_GUEST_DIR");
	snprintf(dir, sizeof(dir), "%s", g && *g ? g : "build/guest");
	snprintf(path, sizeof(path), "%s/corpus/%s", dirname(dir), name);
	uint8_t *buf = NULL;
	if (base_read_file(path, 1ULL << 30, &buf, len))
		fail_msg("%s: cannot read it (make corpus)", path);
	char err[256];
	if (img_elf_parse(buf, *len, e, err, sizeof(err)))
		fail_msg("%s: %s", path, err);
	assert_true(e->go);
	return buf;
}

static size_t starts(const uint8_t *buf, size_t len, const struct img_elf *e, int from,
		     uint64_t **v)
{
	size_t n = 0;
	assert_int_equal(img_func_starts(buf, len, e, from, v, &n), 0);
	return n;
}

/* go_hello with its .symtab: Go's table names the same functions, address for address */
static void the_symtabs_on_go_hello(void **state)
{
	(void)state;
	struct img_elf e;
	size_t len;
	uint8_t *buf = corpus("go_hello", &len, &e);
	uint64_t *sym, *go;
	size_t nsym = starts(buf, len, &e, IMG_STARTS_SYMBOLS, &sym);
	size_t ngo = starts(buf, len, &e, IMG_STARTS_GO, &go);
	assert_true(nsym > 1000); /* 1444 with Go 1.19 */
	assert_int_equal(ngo, nsym);
	assert_memory_equal(go, sym, nsym * sizeof(*sym));
	free(sym);
	free(go);
	free(buf);
}

/* go_hello_stripped (-ldflags='-s -w'): no symbols, and as many starts from Go's table as
 * go_hello's .symtab names, through the default that img_find_sites uses */
static void go_hello_stripped_has_them_all(void **state)
{
	(void)state;
	struct img_elf e, es;
	size_t len, slen;
	uint8_t *buf = corpus("go_hello", &len, &e);
	uint8_t *sbuf = corpus("go_hello_stripped", &slen, &es);
	uint64_t *sym, *none, *all;
	size_t nsym = starts(buf, len, &e, IMG_STARTS_SYMBOLS, &sym);
	assert_int_equal(starts(sbuf, slen, &es, IMG_STARTS_SYMBOLS, &none), 0);
	size_t nall = starts(sbuf, slen, &es, IMG_STARTS_SYMBOLS | IMG_STARTS_GO, &all);
	assert_int_equal(nall, nsym);
	struct img_sites s, ss;
	char err[256];
	assert_int_equal(img_find_sites(buf, len, &e, &s, err, sizeof(err)), 0);
	assert_int_equal(img_find_sites(sbuf, slen, &es, &ss, err, sizeof(err)), 0);
	assert_int_equal(ss.n, s.n);
	assert_int_equal(ss.ncallable, s.ncallable);
	assert_true(ss.ncallable > 0);
	/* the same sites, each with the same choice: trap, call, or the same bytes of padding */
	assert_memory_equal(ss.addr, s.addr, s.n * sizeof(*s.addr));
	assert_memory_equal(ss.callable, s.callable, s.n);
	img_sites_free(&s);
	img_sites_free(&ss);
	free(sym);
	free(none);
	free(all);
	free(buf);
	free(sbuf);
}

/* A small file: its section headers (none, .shstrtab, .gopclntab), their names, and last Go's
 * table of three functions at 0x401000, 0x401020 and 0x401040, which end at 0x401060, the
 * code's end. */
#define VA    0x401000ULL
#define SHOFF 0x40
#define STR   0x100
#define TAB   0x120
#define FTAB  72
#define FLEN  (TAB + FTAB + 3 * 8 + 4)

struct file {
	uint8_t b[FLEN];
	struct img_elf e;
};

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static Elf64_Shdr *shdr(struct file *f, int i)
{
	return (Elf64_Shdr *)(f->b + SHOFF + i * sizeof(Elf64_Shdr));
}

static void make(struct file *f)
{
	memset(f, 0, sizeof(*f));
	Elf64_Ehdr *eh = (Elf64_Ehdr *)f->b;
	eh->e_shoff = SHOFF;
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_shnum = 3;
	eh->e_shstrndx = 1;
	static const char names[] = "\0.shstrtab\0.gopclntab";
	memcpy(f->b + STR, names, sizeof(names));
	*shdr(f, 1) = (Elf64_Shdr){
	    .sh_name = 1, .sh_type = SHT_STRTAB, .sh_offset = STR, .sh_size = sizeof(names)};
	*shdr(f, 2) = (Elf64_Shdr){
	    .sh_name = 11, .sh_type = SHT_PROGBITS, .sh_offset = TAB, .sh_size = FTAB + 3 * 8 + 4};
	uint8_t *t = f->b + TAB;
	put32(t, 0xfffffff0u); /* Go 1.18, 1.19 */
	t[6] = 1;
	t[7] = 8;
	put64(t + 8, 3);   /* functions */
	put64(t + 24, VA); /* runtime.text */
	put64(t + 64, FTAB);
	for (uint32_t i = 0; i <= 3; i++)
		put32(t + FTAB + i * 8, i * 0x20);
	f->e.go = 1;
	f->e.nsegs = 1;
	f->e.segs[0] = (struct img_seg){VA, 0x60, 0x60, 0x1000, PROT_READ | PROT_EXEC};
}

static size_t count(struct file *f, size_t len)
{
	uint64_t *v;
	size_t n = starts(f->b, len, &f->e, IMG_STARTS_SYMBOLS | IMG_STARTS_GO, &v);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(v[i], VA + i * 0x20);
	free(v);
	return n;
}

static void a_small_table(void **state)
{
	(void)state;
	struct file f;
	make(&f);
	assert_int_equal(count(&f, FLEN), 3);
	put32(f.b + TAB, 0xfffffff1u); /* Go 1.20 on: the same header */
	assert_int_equal(count(&f, FLEN), 3);
	f.e.go = 0; /* no Go note: no Go table read */
	assert_int_equal(count(&f, FLEN), 0);
}

/* every byte of the file cut off: the section no longer in it gives nothing, never a read
 * beyond it (the sanitizer build and fuzz_elf watch the reads) */
static void cut_anywhere(void **state)
{
	(void)state;
	struct file f;
	make(&f);
	for (size_t len = 0; len < FLEN; len++)
		assert_int_equal(count(&f, len), 0);
}

/* one field of the table or the headers set to v, at b + off, 8 bytes (or 4, or 1) */
struct bad {
	const char *what;
	size_t off, size;
	uint64_t v;
};

static void what_does_not_hold_together(void **state)
{
	(void)state;
	static const struct bad bad[] = {
	    {"Go 1.16's magic", TAB, 4, 0xfffffffau},
	    {"Go 1.2's magic", TAB, 4, 0xfffffffbu},
	    {"a pad", TAB + 4, 1, 1},
	    {"another quantum", TAB + 6, 1, 4},
	    {"4-byte pointers", TAB + 7, 1, 4},
	    {"a function more than there is room for", TAB + 8, 8, 4},
	    {"a huge count", TAB + 8, 8, UINT64_MAX / 8 + 1},
	    {"the functions inside the header", TAB + 64, 8, 8},
	    {"the functions past the end", TAB + 64, 8, FTAB + 8},
	    {"the functions far away", TAB + 64, 8, UINT64_MAX - 2},
	    {"entries not in order", TAB + FTAB + 8, 4, 0x50},
	    {"the end before the last", TAB + FTAB + 24, 4, 0x30},
	    {"a section past the file", SHOFF + 2 * 64 + 24, 8, FLEN - 50},
	    {"a section at a huge offset", SHOFF + 2 * 64 + 24, 8, UINT64_MAX - 8},
	    {"a section too short for a header", SHOFF + 2 * 64 + 32, 8, FTAB - 1},
	    {"a name past its table", SHOFF + 2 * 64, 4, 22},
	    {"another name", SHOFF + 2 * 64, 4, 1},
	    {"names in no table", SHOFF + 64 + 4, 4, SHT_PROGBITS},
	    {"names past the file", SHOFF + 64 + 24, 8, FLEN},
	    {"names of a section that is not there", offsetof(Elf64_Ehdr, e_shstrndx), 2, 3},
	    {"a huge section count", offsetof(Elf64_Ehdr, e_shnum), 2, 0xfff0},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct file f;
		make(&f);
		memcpy(f.b + bad[i].off, &bad[i].v, bad[i].size);
		size_t n = count(&f, FLEN);
		if (n)
			fail_msg("%s: %zu starts", bad[i].what, n);
	}
}

/* entries outside the code are no starts; the rest are */
static void only_those_in_code(void **state)
{
	(void)state;
	struct file f;
	make(&f);
	f.e.segs[0].filesz = 0x30;
	assert_int_equal(count(&f, FLEN), 2);
	put64(f.b + TAB + 24, UINT64_MAX - 0x10); /* runtime.text: entries wrap around */
	assert_int_equal(count(&f, FLEN), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(the_symtabs_on_go_hello),
	    cmocka_unit_test(go_hello_stripped_has_them_all),
	    cmocka_unit_test(a_small_table),
	    cmocka_unit_test(cut_anywhere),
	    cmocka_unit_test(what_does_not_hold_together),
	    cmocka_unit_test(only_those_in_code),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
