/* The working-set file (src/cold/cold_ws.c): written from a snapshot's memory file, its
 * little-endian layout byte for byte, read back, a damaged chunk found in that chunk alone, and
 * a damaged header, a short file or a partial read told apart; the load's plan of it and the
 * whole read that puts each page at its place in the snapshot's order (cold_ws_read.c), or
 * reads the file as it is when the plan is out of date; the state file's copy (version 3), taken
 * only while intact and while the state file is the one copied, and the load's one read. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "cold/cold_land.h"
#include "cold/cold_read.h"
#include "cold/cold_ws.h"

#define PAGE   EMBER_PAGE_SIZE
#define NPAGES 40				    /* two chunks: 32 pages and 8 */
#define META   (SNAP_WS_HDR + 8 * 42)		    /* the header, the trace, two chunk hashes */
#define STATE  "a state file's bytes, copied whole" /* 34 bytes */

static char dir[64];
static uint8_t *file;
static size_t file_len;
static uint64_t pages[NPAGES];

static uint64_t le(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* a snapshot of NPAGES pages at 1 MiB + 2 pages apart, each filled with its index; the trace in
 * reverse order; the file written and read whole into file */
static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/ember-test-ws-XXXXXX");
	assert_non_null(mkdtemp(dir));
	char mem[128];
	snprintf(mem, sizeof(mem), "%s/mem", dir);
	FILE *f = fopen(mem, "w+");
	assert_non_null(f);
	static uint64_t trace[NPAGES];
	static uint8_t buf[PAGE];
	for (int i = 0; i < NPAGES; i++)
		pages[i] = (1 << 20) + (uint64_t)i * 2 * PAGE;
	for (int i = 0; i < NPAGES; i++) {
		trace[i] = pages[NPAGES - 1 - i];
		memset(buf, i + 1, PAGE);
		assert_int_equal(pwrite(fileno(f), buf, PAGE, (off_t)pages[i]), PAGE);
	}
	struct snap s = {.pages = pages, .npages = NPAGES};
	char err[256] = "", st[128];
	snprintf(st, sizeof(st), "%s/state", dir);
	FILE *sf = fopen(st, "w");
	assert_non_null(sf);
	assert_true(fputs(STATE, sf) >= 0);
	fclose(sf);
	assert_int_equal(cold_ws_write(dir, &s, fileno(f), trace, NPAGES, 1, err, sizeof(err)), 0);
	fclose(f);
	char path[128];
	snprintf(path, sizeof(path), "%s/ws", dir);
	f = fopen(path, "r");
	assert_non_null(f);
	struct stat sb;
	assert_int_equal(fstat(fileno(f), &sb), 0);
	file_len = (size_t)sb.st_size;
	file = malloc(file_len);
	assert_int_equal(fread(file, 1, file_len, f), file_len);
	fclose(f);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	free(file);
	return system(cmd);
}

static void layout(void **state)
{
	(void)state;
	uint64_t off = cold_ws_data_off(NPAGES, SNAP_WS_CHUNK_PAGES, 0, strlen(STATE));
	assert_int_equal(off, PAGE); /* 88 + 8 * (40 + 2) + 34 bytes, padded */
	assert_int_equal(file_len, off + NPAGES * PAGE);
	assert_memory_equal(file, "EMBERWS3", 8);
	assert_int_equal(le(file + 8), NPAGES);
	assert_int_equal(le(file + 16), SNAP_WS_CHUNK_PAGES);
	assert_int_equal(le(file + 32), strlen(STATE));
	assert_int_equal(le(file + 40), XXH3_64bits(STATE, strlen(STATE)));
	assert_int_equal(le(file + 80), 0); /* the trace holds every page: no extras */
	assert_memory_equal(file + META, STATE, strlen(STATE));
	for (int i = 0; i < NPAGES; i++) {
		/* a start reads these 40 pages whole: the trace sorted, the pages in the
		 * snapshot's order, each its snapshot content */
		assert_int_equal(le(file + SNAP_WS_HDR + 8 * i), pages[i]);
		assert_int_equal(file[off + (uint64_t)i * PAGE + 7], i + 1);
	}
	struct cold_ws w;
	assert_int_equal(cold_ws_parse(&w, file, file_len, file_len), 0);
	assert_int_equal(w.npages, NPAGES);
	assert_int_equal(w.nchunks, 2);
	assert_int_equal(w.data_off, PAGE);
	assert_int_equal(cold_ws_addr(&w, 0), 1 << 20);
	assert_true(cold_ws_chunk_ok(&w, file + off, 0));
	assert_true(cold_ws_chunk_ok(&w, file + off, 1));
	uint64_t *pages;
	size_t n;
	assert_int_equal(cold_ws_pages(dir, &pages, &n), 0);
	assert_int_equal(n, NPAGES);
	assert_int_equal(pages[0], 1 << 20);
	free(pages);
}

static void damage(void **state)
{
	(void)state;
	struct cold_ws w;
	uint64_t off = PAGE;
	file[off + 33 * PAGE + 5] ^= 1; /* a page of chunk 1 */
	assert_int_equal(cold_ws_parse(&w, file, file_len, file_len), 0);
	assert_true(cold_ws_chunk_ok(&w, file + off, 0));
	assert_false(cold_ws_chunk_ok(&w, file + off, 1));
	file[off + 33 * PAGE + 5] ^= 1;
	file[SNAP_WS_HDR + 8 * 3] ^= 1; /* the trace: the header's checksum */
	assert_int_equal(cold_ws_parse(&w, file, file_len, file_len), -1);
	file[SNAP_WS_HDR + 8 * 3] ^= 1;
	file[48] ^= 1; /* the state file's identity: the header's checksum too */
	assert_int_equal(cold_ws_parse(&w, file, file_len, file_len), -1);
	file[48] ^= 1;
	/* a partial read: what it still needs; the state copy only when it is in */
	assert_int_equal(cold_ws_parse(&w, file, 16, file_len), SNAP_WS_HDR);
	assert_int_equal(cold_ws_parse(&w, file, 100, file_len), META);
	assert_int_equal(cold_ws_parse(&w, file, META, file_len), 0);
	assert_null(w.state);
	/* a file of another length, another magic */
	assert_int_equal(cold_ws_parse(&w, file, file_len, file_len - PAGE), -1);
	file[7] = '2'; /* the version before the state copy */
	assert_int_equal(cold_ws_parse(&w, file, file_len, file_len), -1);
	file[7] = '3';
}

/* the plan read as at a load; the file read whole with it (or with stale, a plan of another
 * file of the same size) into a memfd: where its pages went, each checked */
static void read_with(struct cold_read_plan *plan, int sorted)
{
	struct snap s = {.pages = pages, .npages = NPAGES};
	struct cold_read r = {0};
	char path[128];
	snprintf(path, sizeof(path), "%s/ws", dir);
	r.fd = memfd_create("test-ws", MFD_CLOEXEC);
	assert_true(r.fd >= 0);
	assert_int_equal(cold_read_ws(&s, path, plan, &r), 0);
	assert_int_equal(r.sorted, sorted);
	assert_int_equal(r.ws_bytes, file_len);
	assert_memory_equal(r.map + r.meta_off, file, META);
	struct cold_ws w;
	assert_int_equal(cold_ws_parse(&w, r.map + r.meta_off, r.ws_bytes, r.ws_bytes), 0);
	for (int i = 0; sorted && i < NPAGES; i++) {
		/* trace page i is snapshot page i, filled with i + 1: at its place */
		assert_int_equal(r.pos[i], (uint64_t)i * PAGE);
		assert_int_equal(r.map[r.pos[i] + 7], i + 1);
	}
	assert_int_equal(r.meta_off, sorted ? NPAGES * PAGE : 0);
	if (sorted) {
		assert_true(cold_ws_chunk_at_ok(&w, r.map, r.pos, 0));
		assert_true(cold_ws_chunk_at_ok(&w, r.map, r.pos, 1));
		r.map[r.pos[33] + 5] ^= 1; /* a page of chunk 1, at its place */
		assert_true(cold_ws_chunk_at_ok(&w, r.map, r.pos, 0));
		assert_false(cold_ws_chunk_at_ok(&w, r.map, r.pos, 1));
	} else {
		assert_null(r.pos); /* the file as it is: its pages after its header */
		assert_int_equal(r.map[PAGE + 7], 1);
	}
	munmap(r.map, r.map_len);
	close(r.fd);
	cold_read_free(&r);
}

static void plan(void **state)
{
	(void)state;
	struct cold_read_plan p;
	cold_read_plan(&p, dir);
	assert_non_null(p.meta);
	assert_int_equal(p.size, file_len);
	assert_int_equal(p.meta_len, META);
	assert_memory_equal(p.meta, file, p.meta_len);
	read_with(&p, 1);
	read_with(NULL, 0);
	/* the file written again since the load (same size, its first two pages the other way
	 * round, checksummed): read as it is */
	uint8_t a[8];
	memcpy(a, p.meta + SNAP_WS_HDR, 8);
	memmove(p.meta + SNAP_WS_HDR, p.meta + SNAP_WS_HDR + 8, 8);
	memcpy(p.meta + SNAP_WS_HDR + 8, a, 8);
	uint64_t h = XXH3_64bits(p.meta + 32, p.meta_len - 32);
	for (int i = 0; i < 8; i++)
		p.meta[24 + i] = (uint8_t)(h >> (8 * i));
	read_with(&p, 0);
	cold_read_plan_free(&p);
	/* no working set: an empty plan */
	char other[96];
	snprintf(other, sizeof(other), "%s/none", dir);
	cold_read_plan(&p, other);
	assert_null(p.meta);
}

/* the file on disk with byte at of it xor'ed with x */
static void flip(const char *name, long at, int x)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "r+");
	assert_non_null(f);
	assert_int_equal(fseek(f, at, SEEK_SET), 0);
	int c = fgetc(f);
	assert_int_equal(fseek(f, at, SEEK_SET), 0);
	fputc(c ^ x, f);
	fclose(f);
}

/* the load's one read: the whole file, the state taken from its copy while it is intact and the
 * state file is the one copied; a file of the version before read as no plan at all */
static void whole(void **state)
{
	(void)state;
	struct cold_read_plan p;
	size_t len = 0;
	const char *why = NULL;
	const uint8_t *st = cold_read_plan_whole(&p, dir, &len, &why);
	assert_non_null(st);
	assert_int_equal(len, strlen(STATE));
	assert_memory_equal(st, STATE, len);
	assert_true(p.whole);
	assert_int_equal(p.size, file_len);
	assert_memory_equal(p.meta, file, file_len);
	read_with(&p, 0); /* the load's memfd taken as it is: nothing read again */
	assert_null(p.meta);
	cold_read_plan_free(&p);
	/* the copy damaged: not taken, though the file is still read (its pages checked later) */
	flip("ws", META + 3, 1);
	assert_null(cold_read_plan_whole(&p, dir, &len, &why));
	assert_string_equal(why, "the working set's copy of the state file is damaged");
	assert_true(p.whole);
	cold_read_plan_free(&p);
	flip("ws", META + 3, 1);
	assert_non_null(cold_read_plan_whole(&p, dir, &len, &why));
	cold_read_plan_free(&p);
	/* the state file written since, even to the same bytes: not trusted through the copy (once
	 * the clock that stamps files has moved past the copy's time) */
	char path[128];
	struct stat sb;
	struct timespec now;
	snprintf(path, sizeof(path), "%s/state", dir);
	assert_int_equal(stat(path, &sb), 0);
	do
		clock_gettime(CLOCK_REALTIME_COARSE, &now);
	while (now.tv_sec == sb.st_ctim.tv_sec && now.tv_nsec == sb.st_ctim.tv_nsec);
	flip("state", 3, 0);
	assert_null(cold_read_plan_whole(&p, dir, &len, &why));
	assert_string_equal(why, "the state file changed since the working set copied it");
	cold_read_plan_free(&p);
	/* the version before: no plan, the state file read as ever */
	flip("ws", 7, '3' ^ '2');
	assert_null(cold_read_plan_whole(&p, dir, &len, &why));
	assert_null(p.meta);
	flip("ws", 7, '3' ^ '2');
	/* the read lands in the memfd made ahead for it (cold_land.c): it is taken, and holds
	 * the file exactly */
	int fd = -1;
	uint8_t *m = cold_land_take(&fd, file_len); /* asked: the landing is made for it */
	munmap(m, file_len);
	close(fd);
	cold_land_make();
	cold_read_plan_whole(&p, dir, &len, &why); /* the state file changed above: no copy */
	assert_true(p.whole);
	assert_int_equal(fstat(p.fd, &sb), 0);
	assert_int_equal(sb.st_size, file_len);
	assert_memory_equal(p.meta, file, file_len);
	m = cold_land_take(&fd, PAGE); /* none left: the plan's was the landing */
	assert_int_equal(fstat(fd, &sb), 0);
	assert_int_equal(sb.st_blocks, 0);
	munmap(m, PAGE);
	close(fd);
	cold_read_plan_free(&p);
}

/* a trace of 8 pages of the 40: the other 32 carried after them (the whole read pays), in the
 * snapshot's order, each its content; the whole read puts them at their places too */
static void extras(void **state)
{
	(void)state;
	char path[128], err[256] = "";
	snprintf(path, sizeof(path), "%s/mem", dir);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	uint64_t trace[8];
	for (int i = 0; i < 8; i++)
		trace[i] = pages[NPAGES - 1 - i];
	struct snap s = {.pages = pages, .npages = NPAGES};
	assert_int_equal(cold_ws_write(dir, &s, fileno(f), trace, 8, 1, err, sizeof(err)), 0);
	fclose(f);
	struct cold_read_plan p;
	size_t len = 0;
	const char *why = NULL;
	assert_non_null(cold_read_plan_whole(&p, dir, &len, &why));
	struct cold_ws w;
	assert_int_equal(cold_ws_parse(&w, p.meta, p.size, p.size), 0);
	assert_int_equal(w.npages, 8);
	assert_int_equal(w.nextra, NPAGES - 8);
	assert_int_equal(p.size, w.data_off + NPAGES * PAGE);
	for (int i = 0; i < 8; i++) /* the trace sorted: snapshot pages 32 to 39 */
		assert_int_equal(cold_ws_addr(&w, i), pages[NPAGES - 8 + i]);
	for (int i = 0; i < NPAGES - 8; i++) { /* snapshot page i, filled with i + 1 */
		assert_int_equal(cold_ws_addr(&w, 8 + i), pages[i]);
		assert_int_equal(p.meta[w.data_off + (8 + i) * PAGE + 9], i + 1);
	}
	uint64_t size = p.size;
	struct cold_read r = {0};
	r.fd = memfd_create("test-ws", MFD_CLOEXEC);
	assert_int_equal(cold_read_ws(&s, path, &p, &r), 0);
	/* the load's memfd taken as it is: the working set's pages, then the others */
	assert_false(r.sorted);
	assert_null(p.meta);
	assert_int_equal(r.map_len, size);
	for (int k = 0; k < NPAGES; k++)
		assert_int_equal(r.map[w.data_off + k * PAGE + 9],
				 k < 8 ? NPAGES - 8 + k + 1 : k - 7);
	munmap(r.map, r.map_len);
	close(r.fd);
	cold_read_free(&r);
	cold_read_plan_free(&p);
	/* for a backend that reads it beside the run (ptrace): no extras, the trace as recorded */
	f = fopen(path, "r");
	assert_non_null(f);
	assert_int_equal(cold_ws_write(dir, &s, fileno(f), trace, 8, 0, err, sizeof(err)), 0);
	fclose(f);
	assert_non_null(cold_read_plan_whole(&p, dir, &len, &why));
	assert_int_equal(cold_ws_parse(&w, p.meta, p.size, p.size), 0);
	assert_int_equal(w.nextra, 0);
	for (int i = 0; i < 8; i++)
		assert_int_equal(cold_ws_addr(&w, i), trace[i]);
	cold_read_plan_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(layout), cmocka_unit_test(damage), cmocka_unit_test(plan),
	    cmocka_unit_test(whole),  cmocka_unit_test(extras),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
