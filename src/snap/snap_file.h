/* Snapshots on disk: a sparse memory file and a checksummed state file, written atomically. */
#ifndef EMBER_SNAP_FILE_H
#define EMBER_SNAP_FILE_H

#include "snap/snap.h"

/* 4: the in-guest runtime's control block changed; 5: the bundle's open files and cwd; 6: fixed-
 * width little-endian fields (snap_fmt.c) instead of the structs as the compiler laid them out;
 * 7: the runtime's table of call sites, its call in progress, a smaller XSAVE area; 8: threads
 * and timers; 9: the descriptor table (pipes with their bytes, eventfds, timerfds, epolls) in
 * place of the bundle's open files; 10: where argv's strings are (/proc/self/cmdline), the
 * limits setrlimit set; 11: the runtime's file table moved, with each file's stat.
 * A file of another version is refused, and the snapshot made again. */
#define SNAP_FILE_VERSION 11

/* what a snapshot on disk must match to be used */
struct snap_meta {
	uint64_t image_digest;
	uint64_t mem_size;
	uint64_t config_hash; /* argv, env, code: what init saw */
};

/* what a snapshot being written is called until it is whole: DIR.tmp-PID-XXXXXX (a folder) and
 * DIR/ws.tmp-PID-XXXXXX (a working set, base_replace's temporary name) */
#define SNAP_TMP BASE_TMP

/* the names on disk: STATE/snapshots/KEY/{mem,state,ws} */
#define SNAP_DIR   "snapshots"
#define SNAP_MEM   "mem"   /* each page at its guest address, holes elsewhere */
#define SNAP_STATE "state" /* the header and body of snap_file.c */
#define SNAP_WS	   "ws"	   /* the working set a cold start recorded (cold/cold.c) */

/* Writes s into dir (created or replaced as a whole: a crash leaves the old one). Returns 0 or a
 * kind of failure of ember.h: EMBER_ERR_IO (the disk refused it), EMBER_ERR_NOMEM. */
int snap_save(const struct snap *s, const struct snap_meta *m, const char *dir, char *err,
	      size_t errlen);
/* snap_load() fails with one of these */
enum { SNAP_REFUSED = -1, SNAP_MISSING = -2 };
/* Reads the state and page list of dir; with pages, also every page, checked. SNAP_MISSING: there
 * is none. SNAP_REFUSED, with the reason: a snapshot of another image, version or configuration,
 * a damaged one, or one that cannot be read. */
int snap_load(struct snap *s, const struct snap_meta *m, const char *dir, int pages, char *err,
	      size_t errlen);
/* The same from the state file's len bytes at buf (a copy of it): 0 or SNAP_REFUSED. */
int snap_load_from(struct snap *s, const struct snap_meta *m, const char *dir, const uint8_t *buf,
		   size_t len, char *err, size_t errlen);
/* Reads the page data of a snapshot loaded without it, checking each page. */
int snap_load_pages(struct snap *s, const char *dir, char *err, size_t errlen);
/* Drops dir's files from the page cache, so the next start reads them from disk. */
int snap_drop_cache(const char *dir);
/* Asks the disk for what a start reads first, the state file and the working set's header, at
 * once and without waiting: the reads that follow wait for one round trip, not one each. 1 when
 * the state file is there (its read under way), else 0. */
int snap_read_ahead(const char *dir);

/* Removes from root (STATE/snapshots) what writers that are gone left: temporary folders and
 * working-set files of processes no longer running. Returns how many it removed. */
int snap_sweep(const char *root);

/* Removes the snapshot folder dir: first renamed to a temporary name (readers never see half of
 * it; a crash leaves what snap_sweep removes), then emptied and removed. */
int snap_remove(const char *dir);

/* the per-page checksums kept beside a loaded snapshot's page list */
uint64_t snap_page_hash(const void *page);

#endif
