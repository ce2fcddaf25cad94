/* Which int3 padding img_mark_callable gives a site (redzone.c, for EMBER_RT_ENTRY_REL): only
 * the run that ends its function before the next function's start, EMBER_RT_PAD_LEN bytes to
 * each site in order, none at a segment's end and none to a thread's exit. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ember/abi.h"
#include "image/img.h"

#define VA 0x401000ULL

/* callable[] of the sites at offsets site[0..n) of code (one executable segment at VA, the file
 * the code itself), the functions starting at offsets fn[0..nfn) */
static void mark(const uint8_t *code, size_t len, const uint64_t *fn, size_t nfn,
		 const uint64_t *site, size_t n, uint8_t *out)
{
	struct img_elf e;
	memset(&e, 0, sizeof(e));
	e.nsegs = 1;
	e.segs[0] = (struct img_seg){VA, len, len, 0, PROT_READ | PROT_EXEC};
	uint64_t starts[8], addr[8];
	for (size_t i = 0; i < nfn; i++)
		starts[i] = VA + fn[i];
	for (size_t i = 0; i < n; i++)
		addr[i] = VA + site[i];
	struct img_sites s = {.addr = addr, .n = n};
	assert_int_equal(img_mark_callable(code, &e, starts, nfn, &s), 0);
	memcpy(out, s.callable, n);
	free(s.callable);
}

/* a Go-like function, `mov $nr,%eax; syscall` twice and ret, 16 bytes of int3, then another */
static void fill(uint8_t *c, uint8_t nr)
{
	static const uint8_t body[] = {0xb8, 0, 0, 0, 0,    0x0f, 0x05, 0xb8,
				       0,    0, 0, 0, 0x0f, 0x05, 0xc3};
	memcpy(c, body, sizeof(body));
	c[1] = c[8] = nr;
	memset(c + sizeof(body), 0xcc, 16);
	c[31] = 0xc3; /* the next function: ret */
}

static void two_sites_share_the_padding(void **state)
{
	(void)state;
	uint8_t c[32], got[2];
	fill(c, 1);
	static const uint64_t fn[] = {0, 31}, site[] = {5, 12};
	mark(c, sizeof(c), fn, 2, site, 2, got);
	/* the padding starts at 15: 8 bytes after the first site's end, 1 after the second's,
	 * which has the next EMBER_RT_PAD_LEN bytes */
	assert_int_equal(img_pad_of(got[0]), 15 - 7);
	assert_int_equal(img_pad_of(got[1]), 15 + EMBER_RT_PAD_LEN - 14);
}

static void none_at_a_segments_end(void **state)
{
	(void)state;
	uint8_t c[32], got[2];
	fill(c, 1);
	static const uint64_t fn[] = {0}, site[] = {5, 12};
	/* the segment ends with the int3, no function after it: where the segment does not
	 * end with the code (rodata in the same segment), those bytes may be anything */
	mark(c, sizeof(c) - 1, fn, 1, site, 2, got);
	assert_int_equal(got[0], 1);
	assert_int_equal(got[1], 1);
}

static void none_for_a_threads_exit(void **state)
{
	(void)state;
	uint8_t c[32], got[2];
	fill(c, 60); /* SYS_exit: Go's exitThread, whose stack may be another's by then */
	static const uint64_t fn[] = {0, 31}, site[] = {5, 12};
	mark(c, sizeof(c), fn, 2, site, 2, got);
	assert_int_equal(got[0], 1);
	assert_int_equal(got[1], 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(two_sites_share_the_padding),
	    cmocka_unit_test(none_at_a_segments_end),
	    cmocka_unit_test(none_for_a_threads_exit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
