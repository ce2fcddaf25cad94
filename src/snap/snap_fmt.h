/* The state file's layout (snap_fmt.c): fixed-width little-endian fields, described once in
 * tables that the writer and the parser both walk, so no compiler's struct layout reaches disk. */
#ifndef EMBER_SNAP_FMT_H
#define EMBER_SNAP_FMT_H

#include <stddef.h>
#include <stdint.h>

#include "snap/snap.h"

/* the header as the program holds it; on disk SNAP_HDR_LEN bytes, in this order */
struct snap_hdr {
	char magic[8];
	uint32_t version, hdr_size; /* hdr_size: SNAP_HDR_LEN */
	char ember[16];		    /* the Ember version that wrote it, for people */
	uint64_t image_digest, mem_size, config_hash;
	uint64_t npages, nvma, out_len, log_len, fpu_len; /* the body's variable parts */
	uint64_t nthreads, nfar;	    /* its threads, its reservations beyond memory */
	uint64_t nfd, nobj, nepi, pipe_len; /* and its descriptor table */
	uint64_t body_len, body_hash; /* the hash covers the header (with body_hash 0) and body */
};
#define SNAP_HDR_LEN 160

/* h into out[SNAP_HDR_LEN], and back */
void snap_fmt_put_hdr(uint8_t *out, const struct snap_hdr *h);
void snap_fmt_get_hdr(const uint8_t *in, struct snap_hdr *h);
/* the counts of s's variable parts into h (npages ... pipe_len), and back (-1: one is larger
 * than this machine can hold or than the format allows) */
void snap_fmt_counts(const struct snap *s, struct snap_hdr *h);
int snap_fmt_set_counts(struct snap *s, const struct snap_hdr *h);
/* the body's length on disk for s's counts; -1 when it would not fit in 64 bits */
int snap_fmt_body_len(const struct snap *s, uint64_t *len);
/* the body of s into out[len] (len from snap_fmt_body_len) */
void snap_fmt_put_body(uint8_t *out, const struct snap *s);
/* s's fields from in[len], its counts already set (snap_fmt_set_counts) and its arrays
 * allocated here: 0, or -1 when len does not match the counts or memory runs out (what was
 * allocated stays in s for snap_free) */
int snap_fmt_get_body(struct snap *s, const uint8_t *in, uint64_t len);

#endif
