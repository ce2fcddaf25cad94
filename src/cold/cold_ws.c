/* The working-set file: its little-endian format, checked chunk by chunk, written atomically. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "snap/snap_file.h"
#include "cold/cold_ws.h"

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

uint64_t cold_ws_data_off(uint64_t npages, uint64_t chunk_pages)
{
	uint64_t meta = SNAP_WS_HDR + 8 * (npages + nchunks_of(npages, chunk_pages));
	return (meta + PAGE - 1) & ~(uint64_t)(PAGE - 1);
}

long cold_ws_parse(struct cold_ws *w, const uint8_t *buf, size_t have, uint64_t size)
{
	if (have < SNAP_WS_HDR)
		return size < SNAP_WS_HDR ? -1 : SNAP_WS_HDR;
	uint64_t n = get64(buf + 8), cp = get64(buf + 16);
	/* bounds first: nothing below overflows for a file that passes them */
	if (memcmp(buf, SNAP_WS_MAGIC, 8) || cp == 0 || cp > (1 << 20) || n > size / PAGE ||
	    cold_ws_data_off(n, cp) + n * PAGE != size)
		return -1;
	uint64_t nc = nchunks_of(n, cp), meta = SNAP_WS_HDR + 8 * (n + nc);
	if (have < meta)
		return (long)meta;
	if (XXH3_64bits(buf + SNAP_WS_HDR, meta - SNAP_WS_HDR) != get64(buf + 24))
		return -1;
	*w = (struct cold_ws){.npages = n,
			      .chunk_pages = cp,
			      .nchunks = nc,
			      .data_off = cold_ws_data_off(n, cp),
			      .size = size,
			      .trace = buf + SNAP_WS_HDR,
			      .hashes = buf + SNAP_WS_HDR + 8 * n};
	return 0;
}

uint64_t cold_ws_addr(const struct cold_ws *w, uint64_t i)
{
	return get64(w->trace + 8 * i);
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

/* the whole file in memory: header, trace, chunk hashes, the snapshot's bytes for each page */
static uint8_t *build(const struct snap *s, int memfd, const uint64_t *trace, uint64_t n,
		      uint64_t *len)
{
	uint64_t cp = SNAP_WS_CHUNK_PAGES, nc = nchunks_of(n, cp), off = cold_ws_data_off(n, cp);
	uint8_t *buf = calloc(1, off + n * PAGE);
	if (!buf)
		return NULL;
	memcpy(buf, SNAP_WS_MAGIC, 8);
	put64(buf + 8, n);
	put64(buf + 16, cp);
	for (uint64_t i = 0; i < n; i++) {
		put64(buf + SNAP_WS_HDR + 8 * i, trace[i]);
		/* the snapshot's bytes for the page (the run may have written it since); a page
		 * the snapshot does not hold stays zero */
		size_t k = snap_page_index(s, trace[i]);
		if (k >= s->npages || s->pages[k] != trace[i])
			continue;
		ssize_t r = pread(memfd, buf + off + i * PAGE, PAGE, (off_t)trace[i]);
		if (r != (ssize_t)PAGE) { /* a short read sets no errno: the file ends early */
			int e = r < 0 ? errno : EIO;
			free(buf);
			errno = e;
			return NULL;
		}
	}
	for (uint64_t k = 0; k < nc; k++)
		put64(buf + SNAP_WS_HDR + 8 * (n + k),
		      XXH3_64bits(buf + off + k * cp * PAGE, chunk_len(n, cp, k)));
	put64(buf + 24, XXH3_64bits(buf + SNAP_WS_HDR, 8 * (n + nc)));
	*len = off + n * PAGE;
	return buf;
}

int cold_ws_write(const char *dir, const struct snap *s, int memfd, const uint64_t *trace,
		  uint64_t n, char *err, size_t errlen)
{
	char path[4200];
	cold_ws_path(path, sizeof(path), dir);
	uint64_t len = 0;
	uint8_t *buf = build(s, memfd, trace, n, &len);
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
