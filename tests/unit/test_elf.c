/* Unit tests for img_elf_parse: the real guest binaries, a malformed corpus and a fuzzer. */
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

#include "image/img.h"
/* the mutation code shared with tests/tools/mkbadelf (tests.mk compiles a single source) */
#include "../tools/badelf.c"

static const char *const guests[] = {"hello.musl", "hello.glibc", "hello.musl-pie",
				     "hello.glibc-pie"};
#define NGUESTS (sizeof(guests) / sizeof(guests[0]))

static void guest_path(const char *name, char *path, size_t n)
{
	const char *dir = getenv("EMBER_GUEST_DIR");
	snprintf(path, n, "%s/%s", dir && *dir ? dir : "build/guest", name);
}

/* Reads a whole file into an exactly-sized buffer, so ASan catches any read past its end. */
static uint8_t *load(const char *path, size_t *len)
{
	struct stat st;
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

static uint8_t *load_guest(const char *name, size_t *len)
{
	char path[4096];
	guest_path(name, path, sizeof(path));
	return load(path, len);
}

/* A refusal must come with a specific one-line, lowercase message. */
static void assert_refusal(const char *what, int rc, const char *err, const char *expect)
{
	if (rc != -1)
		fail_msg("%s: accepted, expected a refusal", what);
	if (err[0] == '\0' || strchr(err, '\n') || (err[0] >= 'A' && err[0] <= 'Z'))
		fail_msg("%s: bad error message \"%s\"", what, err);
	if (expect && !strstr(err, expect))
		fail_msg("%s: error \"%s\" does not mention \"%s\"", what, err, expect);
}

/* --- what readelf says ---------------------------------------------------------------------- */

struct rseg {
	uint64_t off, vaddr, filesz, memsz;
	int prot;
};

struct readelf {
	int is_dyn;
	uint64_t entry, phoff;
	unsigned phnum;
	int nload;
	struct rseg load[IMG_MAX_SEGS];
	int has_phdr;
	uint64_t phdr_vaddr;
	uint64_t stack;
};

/* Runs `readelf -hlW`; returns 0 when readelf is not installed. */
static int run_readelf(const char *path, struct readelf *r)
{
	char cmd[4200], line[512];

	memset(r, 0, sizeof(*r));
	if (system("command -v readelf >/dev/null 2>&1") != 0)
		return 0;
	snprintf(cmd, sizeof(cmd), "readelf -hlW '%s' 2>/dev/null", path);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		char type[32];
		uint64_t off, va, pa, fs, ms;
		int used = 0;
		if (strstr(line, "  Type:"))
			r->is_dyn = strstr(line, "DYN") != NULL;
		else if (sscanf(line, " Entry point address: %" SCNx64, &r->entry) == 1)
			continue;
		else if (sscanf(line, " Start of program headers: %" SCNu64, &r->phoff) == 1)
			continue;
		else if (sscanf(line, " Number of program headers: %u", &r->phnum) == 1)
			continue;
		else if (sscanf(line,
				" %31s %" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64
				"%n",
				type, &off, &va, &pa, &fs, &ms, &used) == 6) {
			if (!strcmp(type, "PHDR")) {
				r->has_phdr = 1;
				r->phdr_vaddr = va;
			} else if (!strcmp(type, "GNU_STACK")) {
				r->stack = ms;
			} else if (!strcmp(type, "LOAD") && ms > 0) {
				assert_true(r->nload < IMG_MAX_SEGS);
				/* the flags column is "R E", "RW " and so on; the alignment follows
				 */
				char *flags = line + used, *align = strstr(flags, "0x");
				if (align)
					*align = '\0';
				r->load[r->nload++] =
				    (struct rseg){off, va, fs, ms,
						  (strchr(flags, 'R') ? PROT_READ : 0) |
						      (strchr(flags, 'W') ? PROT_WRITE : 0) |
						      (strchr(flags, 'E') ? PROT_EXEC : 0)};
			}
		}
	}
	pclose(p);
	return r->phnum > 0;
}

static void check_guest(const char *name)
{
	char path[4096], err[256];
	struct img_elf e;
	struct readelf r;
	size_t len;

	guest_path(name, path, sizeof(path));
	uint8_t *buf = load(path, &len);
	int rc = img_elf_parse(buf, len, &e, err, sizeof(err));
	if (rc != 0)
		fail_msg("%s refused: %s", path, err);

	/* what we know without readelf */
	int want_pie = strstr(name, "-pie") != NULL;
	assert_int_equal(e.pie, want_pie);
	assert_int_equal(e.phentsize, sizeof(Elf64_Phdr));
	assert_true(e.nsegs >= 1 && e.nsegs <= IMG_MAX_SEGS);
	assert_true(e.lo % 4096 == 0 && e.hi % 4096 == 0 && e.lo < e.hi);
	assert_true(e.entry >= e.lo && e.entry < e.hi);
	assert_true(e.phdr_vaddr >= e.lo && e.phdr_vaddr < e.hi);
	for (int i = 0; i < e.nsegs; i++) {
		assert_true(e.segs[i].offset + e.segs[i].filesz <= len);
		if (i > 0)
			assert_true(e.segs[i].vaddr >= e.segs[i - 1].vaddr + e.segs[i - 1].memsz);
	}

	if (!run_readelf(path, &r)) {
		print_message("readelf unavailable: checked %s without it\n", name);
		free(buf);
		return;
	}
	assert_int_equal(e.pie, r.is_dyn);
	assert_int_equal(e.entry, r.entry);
	assert_int_equal(e.phnum, r.phnum);
	assert_int_equal(e.stack_size, r.stack);
	assert_int_equal(e.nsegs, r.nload);
	for (int i = 0; i < e.nsegs; i++) {
		assert_int_equal(e.segs[i].vaddr, r.load[i].vaddr);
		assert_int_equal(e.segs[i].offset, r.load[i].off);
		assert_int_equal(e.segs[i].filesz, r.load[i].filesz);
		assert_int_equal(e.segs[i].memsz, r.load[i].memsz);
		assert_int_equal(e.segs[i].prot, r.load[i].prot);
	}
	assert_int_equal(e.lo, r.load[0].vaddr & ~4095ULL);
	const struct rseg *last = &r.load[r.nload - 1];
	assert_int_equal(e.hi, (last->vaddr + last->memsz + 4095) & ~4095ULL);
	if (r.has_phdr) {
		assert_int_equal(e.phdr_vaddr, r.phdr_vaddr);
	} else {
		int found = 0;
		for (int i = 0; i < r.nload; i++)
			if (r.phoff >= r.load[i].off &&
			    r.phoff < r.load[i].off + r.load[i].filesz) {
				assert_int_equal(e.phdr_vaddr,
						 r.load[i].vaddr + r.phoff - r.load[i].off);
				found = 1;
				break;
			}
		assert_true(found);
	}
	free(buf);
}

static void test_guests_parse(void **state)
{
	(void)state;
	for (size_t i = 0; i < NGUESTS; i++)
		check_guest(guests[i]);
}

/* --- hand-made refusals and the error buffer -------------------------------------------------- */

static void test_error_buffer(void **state)
{
	static const uint8_t junk[] = "#!/bin/sh\necho hi\n";
	struct img_elf e;
	char err[16];

	(void)state;
	memset(&e, 0xa5, sizeof(e));
	assert_int_equal(img_elf_parse(junk, sizeof(junk) - 1, &e, err, sizeof(err)), -1);
	assert_int_equal(strlen(err), sizeof(err) - 1); /* truncated, still terminated */
	assert_int_equal(e.nsegs, 0);			/* out is zeroed on failure */
	assert_int_equal(e.entry, 0);
	assert_int_equal(img_elf_parse(junk, sizeof(junk) - 1, &e, NULL, 0), -1);
	assert_int_equal(img_elf_parse(NULL, 0, &e, err, sizeof(err)), -1);
}

/* Debian's jq (setup.sh installs it), a dynamic PIE: accepted, its interpreter and the
 * libraries it names read as ld.so would, every name a plain file name */
static void test_dynamic_host_binary(void **state)
{
	char err[256];
	struct img_elf e;
	size_t len;
	(void)state;
	uint8_t *buf = load("/usr/bin/jq", &len);
	int rc = img_elf_parse(buf, len, &e, err, sizeof(err));
	if (rc)
		fail_msg("/usr/bin/jq refused: %s", err);
	assert_string_equal(e.interp, "/lib64/ld-linux-x86-64.so.2");
	assert_int_equal(e.pie, 1);
	char names[8][IMG_NEEDED_NAME];
	int n = 0, libc = 0, libjq = 0;
	assert_int_equal(img_needed(buf, len, names, 8, &n, err, sizeof(err)), 0);
	for (int i = 0; i < n; i++) {
		libc |= !strcmp(names[i], "libc.so.6");
		libjq |= !strcmp(names[i], "libjq.so.1");
		assert_null(strchr(names[i], '/'));
	}
	assert_true(libc && libjq);
	/* too small a list is an error, never a write past it */
	assert_int_equal(img_needed(buf, len, names, 1, &n, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "more than 1"));
	/* a static program names none */
	free(buf);
	char path[4096];
	guest_path("hello.musl", path, sizeof(path));
	buf = load(path, &len);
	assert_int_equal(img_elf_parse(buf, len, &e, err, sizeof(err)), 0);
	assert_string_equal(e.interp, "");
	assert_int_equal(img_needed(buf, len, names, 8, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 0);
	free(buf);
}

/* --- the malformed corpus --------------------------------------------------------------------- */

static void test_corpus(void **state)
{
	(void)state;
	for (size_t g = 0; g < NGUESTS; g++) {
		size_t len, skipped = 0;
		uint8_t *good = load_guest(guests[g], &len);
		for (size_t i = 0; i < badelf_count(); i++) {
			const struct badelf_case *c = badelf_case(i);
			char what[128], err[256];
			struct img_elf e;
			uint8_t *bad;
			size_t blen;
			int rc = badelf_make(i, good, len, &bad, &blen);
			assert_true(rc >= 0);
			if (rc > 0) {
				skipped++;
				continue;
			}
			snprintf(what, sizeof(what), "%s/%s", guests[g], c->name);
			rc = img_elf_parse(bad, blen, &e, err, sizeof(err));
			assert_refusal(what, rc, err, c->expect);
			free(bad);
		}
		/* the glibc binaries have every kind of program header the cases need */
		if (strstr(guests[g], "glibc"))
			assert_int_equal(skipped, 0);
		free(good);
	}
}

/* --- the fuzzer ---------------------------------------------------------------------------- */

/* When a mutant is accepted, what the parser says about it must still be coherent and safe. */
static void check_accepted(const uint8_t *buf, size_t len, const struct img_elf *e, int sites)
{
	assert_true(e->nsegs >= 1 && e->nsegs <= IMG_MAX_SEGS);
	for (int i = 0; i < e->nsegs; i++) {
		const struct img_seg *s = &e->segs[i];
		assert_true(s->filesz <= s->memsz);
		assert_true(s->offset <= len && s->filesz <= len - s->offset);
		assert_true(s->vaddr + s->memsz <= (1ULL << 47));
		if (i > 0)
			assert_true(s->vaddr >= e->segs[i - 1].vaddr + e->segs[i - 1].memsz);
	}
	assert_true(e->lo <= e->entry && e->entry < e->hi);
	if (!sites)
		return;

	struct img_sites s;
	char err[256];
	assert_int_equal(img_find_sites(buf, len, e, &s, err, sizeof(err)), 0);
	for (size_t i = 0; i < s.n; i++) {
		int hit = 0;
		for (int k = 0; k < e->nsegs; k++) {
			const struct img_seg *g = &e->segs[k];
			if (s.addr[i] >= g->vaddr && s.addr[i] + 2 <= g->vaddr + g->filesz) {
				const uint8_t *p = buf + g->offset + (s.addr[i] - g->vaddr);
				assert_true(p[0] == 0x0f && p[1] == 0x05);
				hit = 1;
			}
		}
		assert_true(hit);
		if (i > 0)
			assert_true(s.addr[i] > s.addr[i - 1]);
	}
	img_sites_free(&s);
}

/* Parses a mutant; every sites_every-th accepted one also goes through img_find_sites. */
static void parse_mutant(const uint8_t *buf, size_t len, size_t *accepted, int sites_every)
{
	struct img_elf e;
	char err[256];

	if (img_elf_parse(buf, len, &e, err, sizeof(err)) == 0) {
		check_accepted(buf, len, &e, *accepted % sites_every == 0);
		(*accepted)++;
		return;
	}
	assert_refusal("mutant", -1, err, NULL);
}

/* A byte offset biased towards the headers and the section header / symbol tables. */
static size_t pick_offset(uint64_t *rs, size_t len, size_t tail)
{
	uint64_t r = badelf_rand(rs);
	switch (r % 4) {
	case 0:
	case 1:
		return (r >> 8) % (len < 1024 ? len : 1024);
	case 2:
		return tail + (r >> 8) % (len - tail);
	default:
		return (r >> 8) % len;
	}
}

static void fuzz_one(const char *name, int rounds, int sites_every)
{
	size_t len, accepted = 0;
	uint8_t *good = load_guest(name, &len);
	uint8_t *buf = malloc(len);
	uint64_t rs = 0x9e3779b97f4a7c15ULL;
	const char *seed = getenv("EMBER_FUZZ_SEED");

	assert_non_null(buf);
	if (seed && *seed)
		rs = strtoull(seed, NULL, 0) | 1;
	memcpy(buf, good, len);

	/* the section header table and what follows it: where .symtab usually lives */
	Elf64_Ehdr eh;
	memcpy(&eh, good, sizeof(eh));
	size_t tail = eh.e_shoff && eh.e_shoff < len ? (size_t)eh.e_shoff : len / 2;
	for (int i = 0; i < eh.e_shnum && eh.e_shoff + (i + 1) * sizeof(Elf64_Shdr) <= len; i++) {
		Elf64_Shdr sh;
		memcpy(&sh, good + eh.e_shoff + i * sizeof(sh), sizeof(sh));
		if (sh.sh_type == SHT_SYMTAB && sh.sh_offset < tail)
			tail = sh.sh_offset;
	}

	/* single-byte mutations */
	for (int i = 0; i < rounds; i++) {
		size_t off = pick_offset(&rs, len, tail);
		uint64_t r = badelf_rand(&rs);
		static const uint8_t special[] = {0x00, 0xff, 0x7f, 0x80, 0x01, 0x40};
		uint8_t v = (r & 3) == 0   ? special[(r >> 8) % sizeof(special)]
			    : (r & 3) == 1 ? (uint8_t)(good[off] ^ (1u << ((r >> 8) & 7)))
					   : (uint8_t)(r >> 16);
		buf[off] = v;
		parse_mutant(buf, len, &accepted, sites_every);
		buf[off] = good[off];
	}
	/* extreme 64-bit values in header fields */
	static const uint64_t extreme[] = {0,
					   1,
					   UINT64_MAX,
					   UINT64_MAX - 0xfff,
					   1ULL << 63,
					   1ULL << 47,
					   (1ULL << 47) - 0x1000,
					   0x7fffffff,
					   0x100000000ULL};
	for (int i = 0; i < rounds / 4; i++) {
		uint64_t r = badelf_rand(&rs);
		size_t off = (pick_offset(&rs, len, tail) & ~(size_t)7);
		size_t n = off + 8 <= len ? 8 : len - off;
		memcpy(buf + off, &extreme[r % (sizeof(extreme) / sizeof(extreme[0]))], n);
		parse_mutant(buf, len, &accepted, sites_every);
		memcpy(buf + off, good + off, n);
	}
	/* truncations, each into an exactly-sized buffer */
	for (int i = 0; i < rounds / 4; i++) {
		uint64_t r = badelf_rand(&rs);
		size_t n = (r & 1) ? (size_t)((r >> 1) % (len < 4096 ? len : 4096))
				   : (size_t)((r >> 1) % len);
		uint8_t *t = malloc(n ? n : 1);
		assert_non_null(t);
		memcpy(t, good, n);
		parse_mutant(t, n, &accepted, sites_every);
		free(t);
	}
	print_message("fuzz %s: %d mutants, %zu accepted\n", name, rounds + rounds / 2, accepted);
	free(buf);
	free(good);
}

static void test_fuzz(void **state)
{
	(void)state;
	fuzz_one("hello.musl", 2000, 1);
	fuzz_one("hello.musl-pie", 2000, 1);
	fuzz_one("hello.glibc", 2000, 10); /* its sweep is slower: sample it */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_guests_parse),
	    cmocka_unit_test(test_error_buffer),
	    cmocka_unit_test(test_dynamic_host_binary),
	    cmocka_unit_test(test_corpus),
	    cmocka_unit_test(test_fuzz),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
