/* The working-set file: its little-endian format, checked chunk by chunk, written atomically. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "cold/cold_read.h"
#include "cold/cold_ws.h"
#include "snap/snap_file.h"

#define PAGE EMBER_PAGE_SIZE

static uint64_t get64(const uint8_t *p)
{
	return base_get_le(p, 8);
}

static void put64(uint8_t *p, uint64_t v)
{
	base_put_le(p, v, 8);
}

static uint64_t nchunks_of(uint64_t npages, uint64_t chunk_pages)
{
	return (npages + chunk_pages - 1) / chunk_pages;
}

uint64_t cold_ws_data_off(uint64_t npages, uint64_t chunk_pages, uint64_t nextra,
			  uint64_t state_len)
{
	uint64_t meta =
	    SNAP_WS_HDR + 8 * (npages + nchunks_of(npages, chunk_pages) + nextra) + state_len;
	return (meta + PAGE - 1) & ~(uint64_t)(PAGE - 1);
}

long cold_ws_parse(struct cold_ws *w, const uint8_t *buf, size_t have, uint64_t size)
{
	if (have < SNAP_WS_HDR)
		return size < SNAP_WS_HDR ? -1 : SNAP_WS_HDR;
	uint64_t n = get64(buf + 8), cp = get64(buf + 16), sl = get64(buf + 32);
	uint64_t ne = get64(buf + 80);
	/* bounds first: nothing below overflows for a file that passes them */
	if (memcmp(buf, SNAP_WS_MAGIC, 8) || cp == 0 || cp > (1 << 20) || n > size / PAGE ||
	    ne > size / PAGE || sl > size ||
	    cold_ws_data_off(n, cp, ne, sl) + (n + ne) * PAGE != size)
		return -1;
	uint64_t nc = nchunks_of(n, cp), meta = SNAP_WS_HDR + 8 * (n + nc + ne);
	if (have < meta)
		return (long)meta;
	if (XXH3_64bits(buf + 32, meta - 32) != get64(buf + 24))
		return -1;
	*w = (struct cold_ws){.npages = n,
			      .chunk_pages = cp,
			      .nchunks = nc,
			      .nextra = ne,
			      .data_off = cold_ws_data_off(n, cp, ne, sl),
			      .size = size,
			      .trace = buf + SNAP_WS_HDR,
			      .hashes = buf + SNAP_WS_HDR + 8 * n,
			      .extras = buf + SNAP_WS_HDR + 8 * (n + nc),
			      .state = sl && have >= meta + sl ? buf + meta : NULL,
			      .state_len = sl,
			      .state_hash = get64(buf + 40)};
	for (int i = 0; i < SNAP_WS_ID; i++)
		w->state_id[i] = get64(buf + 48 + 8 * i);
	return 0;
}

/* what says the state file at fd is the one copied: device, inode, mtime and ctime in ns (a
 * write, a rename over it or a restored mtime all change one of them) */
static void id_of(const struct stat *sb, uint64_t id[SNAP_WS_ID])
{
	id[0] = (uint64_t)sb->st_dev;
	id[1] = (uint64_t)sb->st_ino;
	id[2] = (uint64_t)sb->st_mtim.tv_sec * 1000000000u + (uint64_t)sb->st_mtim.tv_nsec;
	id[3] = (uint64_t)sb->st_ctim.tv_sec * 1000000000u + (uint64_t)sb->st_ctim.tv_nsec;
}

static void state_path(char *path, size_t len, const char *dir)
{
	snprintf(path, len, "%.4096s/" SNAP_STATE, dir);
}

const uint8_t *cold_ws_state(const struct cold_ws *w, const char *dir, const char **why)
{
	uint64_t id[SNAP_WS_ID];
	*why = "the working set holds no copy of the state file";
	if (!w->state)
		return NULL;
	*why = "the working set's copy of the state file is damaged";
	if (XXH3_64bits(w->state, w->state_len) != w->state_hash)
		return NULL;
	/* its inode only: a stat, not even an open */
	char path[4200];
	struct stat sb;
	state_path(path, sizeof(path), dir);
	*why = "the state file changed since the working set copied it";
	if (stat(path, &sb))
		return NULL;
	id_of(&sb, id);
	return memcmp(id, w->state_id, sizeof(id)) ? NULL : w->state;
}

uint64_t cold_ws_addr(const struct cold_ws *w, uint64_t i)
{
	return i < w->npages ? get64(w->trace + 8 * i) : get64(w->extras + 8 * (i - w->npages));
}

static uint64_t chunk_len(uint64_t npages, uint64_t chunk_pages, uint64_t k)
{
	uint64_t left = npages - k * chunk_pages;
	return (left < chunk_pages ? left : chunk_pages) * PAGE;
}

int cold_ws_chunk_ok(const struct cold_ws *w, const uint8_t *data, uint64_t k)
{
	uint64_t off = k * w->chunk_pages * PAGE;
	return XXH3_64bits(data + off, chunk_len(w->npages, w->chunk_pages, k)) ==
	       get64(w->hashes + 8 * k);
}

int cold_ws_chunk_at_ok(const struct cold_ws *w, const uint8_t *base, const uint64_t *pos,
			uint64_t k)
{
	XXH3_state_t *x = XXH3_createState();
	if (!x)
		return 0;
	XXH3_64bits_reset(x);
	uint64_t first = k * w->chunk_pages, n = chunk_len(w->npages, w->chunk_pages, k) / PAGE;
	for (uint64_t i = first; i < first + n; i++)
		XXH3_64bits_update(x, base + pos[i], PAGE);
	int ok = XXH3_64bits_digest(x) == get64(w->hashes + 8 * k);
	XXH3_freeState(x);
	return ok;
}

int cold_ws_path(char *out, size_t len, const char *dir)
{
	return snprintf(out, len, "%.4090s/" SNAP_WS, dir) >= (int)len ? -1 : 0;
}

/* dir's state file read whole with its identity (its length 0 when it cannot be: no copy) */
static uint8_t *read_state(const char *dir, uint64_t *len, uint64_t id[SNAP_WS_ID])
{
	char path[4200];
	state_path(path, sizeof(path), dir);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat sb;
	uint8_t *buf = NULL;
	*len = 0;
	if (fd < 0)
		return NULL;
	if (!fstat(fd, &sb) && sb.st_size > 0 && (buf = malloc((size_t)sb.st_size)) &&
	    pread(fd, buf, (size_t)sb.st_size, 0) == sb.st_size) {
		id_of(&sb, id);
		*len = (uint64_t)sb.st_size;
	}
	close(fd);
	return buf;
}

static int ascending(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The snapshot's pages the trace lacks (into *extra, ascending; their count), when a start
 * would read the snapshot whole (cold_read_pays): the file then brings every page, and the
 * trace is sorted (into *sorted) so that the file's pages are in the snapshot's order, each
 * run of the snapshot a run of the file: the load reads it straight into the snapshot's memfd,
 * which maps into the machine in a few runs. Else no extras, the trace as recorded. */
static uint64_t extras_of(const struct snap *s, const uint64_t *trace, uint64_t n, int whole,
			  uint64_t **extra, uint64_t **sorted)
{
	uint8_t *in = calloc(s->npages ? s->npages : 1, 1);
	uint64_t ne = 0;
	*extra = malloc((s->npages ? s->npages : 1) * sizeof(uint64_t));
	*sorted = NULL;
	if (in && *extra && whole && cold_read_pays_n(s->npages, (n + 1) * PAGE) &&
	    (*sorted = malloc((n ? n : 1) * sizeof(uint64_t)))) {
		memcpy(*sorted, trace, n * sizeof(uint64_t));
		qsort(*sorted, n, sizeof(uint64_t), ascending);
		for (uint64_t i = 0; i < n; i++) {
			size_t k = snap_page_index(s, trace[i]);
			if (k < s->npages && s->pages[k] == trace[i])
				in[k] = 1;
		}
		for (size_t k = 0; k < s->npages; k++)
			if (!in[k])
				(*extra)[ne++] = s->pages[k];
	}
	free(in);
	return ne;
}

/* the n pages at addrs, their content the snapshot's (the run may have written them since), to
 * dst one after the other; a page the snapshot does not hold stays zero. 0, or -1 with errno. */
static int put_pages(const struct snap *s, int memfd, const uint64_t *addrs, uint64_t n,
		     uint8_t *dst)
{
	for (uint64_t i = 0; i < n; i++) {
		size_t k = snap_page_index(s, addrs[i]);
		if (k >= s->npages || s->pages[k] != addrs[i])
			continue;
		ssize_t r = pread(memfd, dst + i * PAGE, PAGE, (off_t)addrs[i]);
		if (r != (ssize_t)PAGE) /* a short read sets no errno: the file ends early */
			return errno = r < 0 ? errno : EIO, -1;
	}
	return 0;
}

/* the whole file in memory: header, trace, chunk hashes, extras, the state file's copy, the
 * snapshot's bytes for each page */
static uint8_t *build(const char *dir, const struct snap *s, int memfd, const uint64_t *trace,
		      uint64_t n, int whole, uint64_t *len)
{
	uint64_t cp = SNAP_WS_CHUNK_PAGES, nc = nchunks_of(n, cp), sl, id[SNAP_WS_ID] = {0};
	uint64_t *extra = NULL, *sorted = NULL, ne = extras_of(s, trace, n, whole, &extra, &sorted);
	if (sorted)
		trace = sorted;
	uint8_t *st = read_state(dir, &sl, id);
	uint64_t off = cold_ws_data_off(n, cp, ne, sl), meta = SNAP_WS_HDR + 8 * (n + nc + ne);
	uint8_t *buf = extra ? calloc(1, off + (n + ne) * PAGE) : NULL;
	if (!buf || put_pages(s, memfd, trace, n, buf + off) ||
	    put_pages(s, memfd, extra, ne, buf + off + n * PAGE)) {
		int e = errno ? errno : ENOMEM;
		free(buf);
		free(st);
		free(extra);
		free(sorted);
		errno = e;
		return NULL;
	}
	memcpy(buf, SNAP_WS_MAGIC, 8);
	put64(buf + 8, n);
	put64(buf + 16, cp);
	put64(buf + 32, sl);
	if (sl) {
		memcpy(buf + meta, st, sl);
		put64(buf + 40, XXH3_64bits(st, sl));
	}
	for (int i = 0; i < SNAP_WS_ID; i++)
		put64(buf + 48 + 8 * i, id[i]);
	put64(buf + 80, ne);
	for (uint64_t i = 0; i < n; i++)
		put64(buf + SNAP_WS_HDR + 8 * i, trace[i]);
	for (uint64_t k = 0; k < nc; k++)
		put64(buf + SNAP_WS_HDR + 8 * (n + k),
		      XXH3_64bits(buf + off + k * cp * PAGE, chunk_len(n, cp, k)));
	for (uint64_t i = 0; i < ne; i++)
		put64(buf + SNAP_WS_HDR + 8 * (n + nc + i), extra[i]);
	put64(buf + 24, XXH3_64bits(buf + 32, meta - 32));
	*len = off + (n + ne) * PAGE;
	free(st);
	free(extra);
	free(sorted);
	return buf;
}

int cold_ws_write(const char *dir, const struct snap *s, int memfd, const uint64_t *trace,
		  uint64_t n, int whole, char *err, size_t errlen)
{
	char path[4200];
	cold_ws_path(path, sizeof(path), dir);
	uint64_t len = 0;
	uint8_t *buf = build(dir, s, memfd, trace, n, whole, &len);
	if (!buf)
		return snprintf(err, errlen, "reading the memory file: %s",
				strerror(errno ? errno : ENOMEM)),
		       -1;
	/* a temporary name of its own (PATH.tmp-PID-XXXXXX, as snap_sweep knows it): two
	 * functions of one configuration may record at once */
	int e = -base_replace(path, buf, len, 0600);
	free(buf);
	if (!e)
		return 0;
	return snprintf(err, errlen, "writing %s: %s", path, strerror(e)), -1;
}

int cold_ws_pages(const char *dir, uint64_t **pages, size_t *n)
{
	char path[4200];
	cold_ws_path(path, sizeof(path), dir);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat sb;
	uint8_t *buf = NULL;
	struct cold_ws w;
	int rc = -1;
	if (fd < 0 || fstat(fd, &sb) || sb.st_size < SNAP_WS_HDR)
		goto out;
	buf = malloc((size_t)sb.st_size);
	if (!buf || pread(fd, buf, (size_t)sb.st_size, 0) != sb.st_size ||
	    cold_ws_parse(&w, buf, (size_t)sb.st_size, (uint64_t)sb.st_size))
		goto out;
	*n = w.npages;
	*pages = malloc((w.npages ? w.npages : 1) * sizeof(uint64_t));
	if (!*pages)
		goto out;
	for (uint64_t i = 0; i < w.npages; i++)
		(*pages)[i] = cold_ws_addr(&w, i);
	rc = 0;
out:
	free(buf);
	if (fd >= 0)
		close(fd);
	return rc;
}
