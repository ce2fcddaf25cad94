/* The working-set file (src/cold/cold_ws.c): the input as a snapshot folder's `ws`, read by
 * the REAP prefetch of a real cold start (cold_start on one machine, its userfaultfd and
 * fault server), which installs its pages; then the host's structures and page tables must be
 * as they were, and nothing installed outside the program's memory.
 *   input: FLAGS ...
 *   FLAGS bit 0 clear: a file built from N (u8, at most 16), N page numbers (u32; bit 1: N raw
 *   addresses, u64) and page content (the rest, repeated), in chunks of 1 + (FLAGS >> 3) % 8
 *   pages, its checksums right unless bit 2 damages one; bit 0 set: the rest is the file as it is,
 * its checksums made right when its layout allows unless bit 2 */
#include <endian.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <xxhash.h>

#include "common.h"
#include "cold/cold.h"
#include "cold/cold_ws.h"

#define PAGE	  EMBER_PAGE_SIZE
#define MEM	  (64ULL << 20)
#define MAX_PAGES 16

/* cold_ws.h's layout (format 3): magic, npages, chunk_pages, meta_hash, state_len, state_hash,
 * the state file's identity, nextra (little-endian u64s), the trace, one checksum per chunk, the
 * extras' addresses, the state file's copy, zeros to a page, then the pages; meta_hash covers
 * everything from state_len to the copy. The generated files carry no extras and no copy. */
#define WS_HDR SNAP_WS_HDR

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return le64toh(v);
}

static void put64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

/* the chunk checksums and the header's, right unless damage flips one */
static void set_hashes(uint8_t *f, uint64_t n, uint64_t cp, uint64_t ne, uint64_t sl, int damage)
{
	uint64_t nc = (n + cp - 1) / cp, off = cold_ws_data_off(n, cp, ne, sl);
	for (uint64_t k = 0; k < nc; k++) {
		uint64_t len = (n - k * cp < cp ? n - k * cp : cp) * PAGE;
		put64(f + WS_HDR + 8 * (n + k), XXH3_64bits(f + off + k * cp * PAGE, len));
	}
	if (damage && nc)
		f[WS_HDR + 8 * n] ^= 1;
	put64(f + 24, XXH3_64bits(f + 32, WS_HDR - 32 + 8 * (n + nc + ne)));
	if (damage && !nc)
		f[24] ^= 1;
}

/* the file the input describes into f (room for MAX_PAGES); its length */
static size_t build(uint8_t *f, size_t room, const uint8_t *data, size_t size)
{
	struct fz in = {data, size};
	uint8_t flags = fz_u8(&in);
	if (flags & 1) { /* as it is */
		size_t len = in.n < room ? in.n : room;
		memcpy(f, in.p, len);
		uint64_t n = len >= WS_HDR ? get64(f + 8) : 0,
			 cp = len >= WS_HDR ? get64(f + 16) : 0,
			 sl = len >= WS_HDR ? get64(f + 32) : 0,
			 ne = len >= WS_HDR ? get64(f + 80) : 0;
		if (len >= WS_HDR && n <= MAX_PAGES && cp && cp <= MAX_PAGES && ne <= MAX_PAGES &&
		    sl <= room && cold_ws_data_off(n, cp, ne, sl) + (n + ne) * PAGE == len)
			set_hashes(f, n, cp, ne, sl, flags & 4);
		return len;
	}
	uint64_t n = fz_u8(&in) % (MAX_PAGES + 1), cp = 1 + (flags >> 3) % 8;
	uint64_t off = cold_ws_data_off(n, cp, 0, 0);
	memset(f, 0, off + n * PAGE);
	memcpy(f, SNAP_WS_MAGIC, 8);
	put64(f + 8, n);
	put64(f + 16, cp);
	for (uint64_t i = 0; i < n; i++)
		put64(f + WS_HDR + i * 8, flags & 2 ? fz_u64(&in) : (uint64_t)fz_u32(&in) * PAGE);
	for (size_t i = 0; in.n && i < n * PAGE; i++)
		f[off + i] = in.p[i % in.n];
	set_hashes(f, n, cp, 0, 0, flags & 4);
	return off + n * PAGE;
}

/* what the program never owns, as it reads: the host's structures below the runtime's vCPU areas
 * (EMBER_RT_CPUS, program pages a working set may hold) and
 * the page tables above its memory (a hole counts as the zeros it reads as, and is not read:
 * that would fill it) */
FZ_UNTRACED static uint64_t host_hash(struct vm *vm)
{
	static const uint8_t zero[PAGE];
	static uint8_t vec[EMBER_RT_BASE / PAGE];
	const uint64_t top = vm_user_top(vm), ranges[][2] = {{PAGE, EMBER_RT_CPUS}, {top, MEM}};
	XXH64_state_t *x = XXH64_createState();
	XXH64_reset(x, 0);
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
		uint64_t n = (ranges[i][1] - ranges[i][0]) / PAGE;
		FZ_CHECK(n <= sizeof(vec) && vm_resident(vm, ranges[i][0], n * PAGE, vec) == 0,
			 "mincore");
		for (uint64_t k = 0; k < n; k++)
			XXH64_update(
			    x, vec[k] & 1 ? vm_guest(vm, ranges[i][0] + k * PAGE, PAGE) : zero,
			    PAGE);
	}
	uint64_t h = XXH64_digest(x);
	XXH64_freeState(x);
	return h;
}

/* the pages the program may have, given back for the next input */
static void clear(struct vm *vm)
{
	const uint64_t ranges[][2] = {
	    {0, PAGE}, {EMBER_RT_CPUS, EMBER_SYS_END}, {EMBER_SYS_END, vm_user_top(vm)}};
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++)
		FZ_CHECK(vm_discard(vm, ranges[i][0], ranges[i][1] - ranges[i][0]) == 0,
			 "clearing %#lx-%#lx", ranges[i][0], ranges[i][1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t file[(MAX_PAGES + 2) * PAGE];
	static struct sys_vma map = {EMBER_IMAGE_BASE, EMBER_IMAGE_BASE + 16 * PAGE,
				     PROT_READ | PROT_WRITE};
	static uint64_t host;
	struct vm *vm = fz_vm(MEM);
	const char *dir = fz_tmpdir();
	if (!host) { /* with the snapshot's map in the page tables, as every cold start sets it */
		fz_write(dir, "mem", "", 0);
		FZ_CHECK(vm_protect(vm, map.start, map.end - map.start, map.prot) == 0, "protect");
		host = host_hash(vm);
	}
	fz_write(dir, "ws", file, build(file, sizeof(file), data, size));
	/* a snapshot of one mapping and no pages: every page the prefetch does not install
	 * reads as zero */
	struct snap s;
	memset(&s, 0, sizeof(s));
	s.sys.vmas = &map;
	s.sys.nvma = 1;
	s.proc = (struct sys_process){.brk_start = map.end, .mmap_hi = vm_user_top(vm) / 2};
	struct sys_state st;
	sys_init(&st, vm, &s.proc);
	struct cold c;
	char err[256] = "";
	int rc = cold_start(&c, &s, vm, &st, dir, SNAP_REAP, 0, err, sizeof(err));
	FZ_CHECK(rc == 0 || err[0], "refused without a reason");
	if (rc == 0) {
		cold_finish(&c, NULL, err, sizeof(err)); /* the prefetch is over: its count */
		FZ_CHECK(c.prefetched <= MAX_PAGES + (size / PAGE), "%lu pages prefetched",
			 c.prefetched);
	}
	/* read only now: while the fault server ran, reading a hole would have faulted it in */
	FZ_CHECK(host_hash(vm) == host, "the prefetch wrote into the host's structures");
	fz_check_ptes(vm, &map, 1);
	sys_free(&st);
	clear(vm);
	return 0;
}
