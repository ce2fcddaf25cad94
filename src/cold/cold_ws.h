/* The working-set file of REAP cold starts: its format (explicit little-endian fields, checksums
 * per chunk so each is checked as it arrives), writing it, and reading its page list. */
#ifndef EMBER_SNAP_WS_H
#define EMBER_SNAP_WS_H

#include <stddef.h>
#include <stdint.h>

#include "snap/snap.h"

/* Layout, every integer a little-endian u64:
 *   0   magic "EMBERWS3" (2: no state copy; an older file is not read, and is recorded again)
 *   8   npages        pages in the working set
 *   16  chunk_pages   pages per checksummed chunk (the last may be shorter)
 *   24  meta_hash     XXH3-64 of the bytes from 32 to the end of the chunk checksums
 *   32  state_len     bytes of the state file's copy (0: none)
 *   40  state_hash    XXH3-64 of the copy
 *   48  state_id      the state file's identity when it was copied: device, inode, mtime and
 *                     ctime in ns (4 u64); a state file with another is never trusted via the copy
 *   80  nextra        the snapshot's pages outside the working set carried after it (0 unless
 *                     a start reads the snapshot whole: cold_read_pays)
 *   88  trace         npages guest addresses, in the order the recording run faulted them
 *                     (ascending where the extras are carried: the file's pages are then
 *                     in the snapshot's order, its working set's and then the extras', and
 *                     the load reads it into the snapshot's memfd as it is)
 *   ..  chunk hashes  one XXH3-64 per chunk of the page data
 *   ..  extras        nextra guest addresses, ascending (each page checked against the
 *                     snapshot's own checksum when it is taken)
 *   ..  state copy    the snapshot's state file, byte for byte
 *   then zeros to a page boundary (data_off), then the npages pages, then the nextra pages,
 *   contiguous: one large sequential read brings all of it in, and a start from disk that reads
 *   the file whole takes the state and every page from it (one request to the disk, where the
 *   state file, the working set and the pages it lacks were three, two of them in turn). */
#define SNAP_WS_MAGIC	    "EMBERWS3"
#define SNAP_WS_HDR	    88
#define SNAP_WS_ID	    4  /* u64s of the state file's identity */
#define SNAP_WS_CHUNK_PAGES 32 /* 128 KiB: the first one in, the vCPU starts */

/* a parsed working-set header; trace and hashes point into the caller's buffer (in file
 * order, little-endian: read them with cold_ws_addr / cold_ws_hash) */
struct cold_ws {
	uint64_t npages, chunk_pages, nchunks;
	uint64_t nextra;	 /* pages after the working set's (cold_ws_addr from npages on) */
	uint64_t data_off, size; /* where the pages start; the whole file's size */
	const uint8_t *trace, *hashes, *extras;
	const uint8_t *state; /* the state file's copy (state_len bytes, unchecked), or NULL */
	uint64_t state_len, state_hash, state_id[SNAP_WS_ID];
};

/* bytes of the file before the page data, for npages, nextra and a state copy of state_len
 * bytes */
uint64_t cold_ws_data_off(uint64_t npages, uint64_t chunk_pages, uint64_t nextra,
			  uint64_t state_len);
/* Parses the start of a working-set file of size bytes, have of which are in buf. Returns 0
 * (w filled, checked but for the state copy, which is set only when have holds it), a
 * positive count of bytes needed before it can
 * tell, or -1: not a working-set file of this format, or damaged. */
long cold_ws_parse(struct cold_ws *w, const uint8_t *buf, size_t have, uint64_t size);
/* the address of page i of the file's data: the trace's below npages, then the extras' */
uint64_t cold_ws_addr(const struct cold_ws *w, uint64_t i);
/* whether chunk k of the page data (at data, the file's bytes from data_off) is intact */
int cold_ws_chunk_ok(const struct cold_ws *w, const uint8_t *data, uint64_t k);
/* the same with page i of the file at base + pos[i] */
int cold_ws_chunk_at_ok(const struct cold_ws *w, const uint8_t *base, const uint64_t *pos,
			uint64_t k);

/* The state copy of w (parsed from a buffer holding the whole header), when it is intact and
 * the state file of dir is still the one copied (same identity); else NULL, the reason in why. */
const uint8_t *cold_ws_state(const struct cold_ws *w, const char *dir, const char **why);

/* DIR/ws */
int cold_ws_path(char *out, size_t len, const char *dir);
/* Writes DIR/ws atomically for the n pages of trace, their content the snapshot's (read from
 * memfd, the snapshot's memory file), with a copy of DIR/state (none when it cannot be read);
 * with whole (the backend's starts read a small snapshot whole: KVM), the extras too and the
 * trace sorted where cold_read_pays, else the trace as recorded (the ptrace backend's prefetch
 * installs it in order beside the run: its first chunk is the pages touched first). 0, or -1
 * with the reason in err. */
int cold_ws_write(const char *dir, const struct snap *s, int memfd, const uint64_t *trace,
		  uint64_t n, int whole, char *err, size_t errlen);
/* The page addresses of DIR/ws in file order, checked (malloc'd into *pages); -1 when there is
 * none or it is damaged. */
int cold_ws_pages(const char *dir, uint64_t **pages, size_t *n);

#endif
