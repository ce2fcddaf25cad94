/* The snapshot state file (src/snap/snap_file.c): the input as a snapshot folder's `state`,
 * read by snap_load with or without its pages; an accepted one must describe a snapshot the rest
 * of Ember can restore. The file's checksum guards against damage, not malice, so the harness
 * makes it match (as a writer would) unless the input asks not to; otherwise nearly every input
 * would stop at the checksum.
 *   input: FLAGS STATE...
 *   FLAGS bit 0: keep the checksum as it is; bit 1: keep body_len; bit 2: a configuration that
 *   does not match the header's; bit 3: read the pages too (from a sparse, all-zero `mem`) */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "common.h"
#include "snap/snap_file.h"
#include "snap/snap_fmt.h"

#define PAGE EMBER_PAGE_SIZE
/* where the header (snap_fmt.c, little-endian) keeps what the harness fixes up, and its size */
#define HDR_MEM_SIZE  40
#define HDR_IMAGE     32
#define HDR_CONFIG    48
#define HDR_BODY_LEN  96
#define HDR_BODY_HASH 104
#define HDR_SIZE      SNAP_HDR_LEN

static uint64_t get64(const uint8_t *p)
{
	return base_get_le(p, 8);
}

static void put64(uint8_t *p, uint64_t v)
{
	base_put_le(p, v, 8);
}

/* what the writer promises and what a restore relies on */
FZ_UNTRACED static void check(const struct snap *s, uint64_t mem, int pages)
{
	const struct sys_saved *y = &s->sys;
	for (size_t i = 0; i < s->npages; i++)
		FZ_CHECK(s->pages[i] % PAGE == 0 && s->pages[i] < mem &&
			     (i == 0 || s->pages[i - 1] < s->pages[i]),
			 "page %zu at %#lx", i, s->pages[i]);
	for (size_t i = 0; i < y->nvma; i++)
		FZ_CHECK(y->vmas[i].start < y->vmas[i].end && y->vmas[i].end <= mem,
			 "mapping %zu: %#lx-%#lx", i, y->vmas[i].start, y->vmas[i].end);
	FZ_CHECK(s->fpu_len <= VM_FPU_MAX, "fpu_len %zu", s->fpu_len);
	FZ_CHECK(!pages || s->data, "loaded with its pages, without their data");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[1 << 20];
	const char *dir = fz_tmpdir();
	static int made;
	if (!made) { /* the memory file: all zero, the size of every test snapshot's machine */
		fz_write(dir, "mem", "", 0);
		made = 1;
	}
	if (size < 1 || size - 1 > sizeof(buf))
		return 0;
	uint8_t flags = data[0];
	size_t len = size - 1;
	memcpy(buf, data + 1, len);
	struct snap_meta m = {0};
	if (len >= HDR_SIZE) {
		m = (struct snap_meta){get64(buf + HDR_IMAGE), get64(buf + HDR_MEM_SIZE),
				       get64(buf + HDR_CONFIG)};
		if (!(flags & 2))
			put64(buf + HDR_BODY_LEN, len - HDR_SIZE);
		if (!(flags & 1)) {
			put64(buf + HDR_BODY_HASH, 0);
			put64(buf + HDR_BODY_HASH, XXH64(buf, len, 0));
		}
		if (flags & 4)
			m.config_hash ^= 1;
	}
	fz_write(dir, "state", buf, len);
	struct snap s;
	char err[256] = "";
	int pages = (flags & 8) && m.mem_size <= (1ULL << 30), rc;
	if (pages) {
		char path[8200];
		snprintf(path, sizeof(path), "%s/mem", dir);
		FZ_CHECK(truncate(path, (off_t)m.mem_size) == 0, "truncate %s", path);
	}
	rc = snap_load(&s, &m, dir, pages, err, sizeof(err));
	if (rc) {
		FZ_CHECK(err[0], "refused without a reason");
		return 0;
	}
	FZ_CHECK(!(flags & 4), "accepted with another configuration");
	check(&s, m.mem_size, pages);
	snap_free(&s);
	return 0;
}
