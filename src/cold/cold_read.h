/* Cold starts that read the snapshot whole before the run (REAP on KVM): no fault server. */
#ifndef EMBER_SNAP_COLD_READ_H
#define EMBER_SNAP_COLD_READ_H

#include "snap/snap.h"

/* what the read brought and where its time went */
struct cold_read {
	uint64_t ws_pages; /* snapshot pages taken from the working-set file */
	uint64_t outside;  /* snapshot pages outside it: carried after it in its file, or read from
			    * the memory file beside it */
	uint64_t ws_bytes; /* the working-set file's size */
	uint64_t read_ns, check_ns, wall_ns;
	int buffered; /* the file system refused O_DIRECT: the working set came through the cache */
	int ws_bad;   /* the working set was damaged from some chunk on: dropped */
	uint64_t *ws; /* the working set's page addresses, in file order */
	size_t nws;
	uint8_t *from_ws; /* per snapshot page: 1 when its content came from the working set */
	int fd;		  /* while reading: the snapshot's new memfd, and its start mapped (the
			   * mapping kept until cold_read_settle) */
	uint8_t *map;
	uint64_t map_len;
	int sorted;	       /* the load's plan held: each page read straight to its place */
	uint64_t meta_off;     /* where the working set's header is in the memfd */
	uint64_t *pos;	       /* where each of its pages is */
	uint64_t mispredicted; /* pages outside the working set the run touched */
	int rerecorded;
	int recopy; /* the plan's: the file is written again after the run, whatever the count */
};

/* What the load learns of the working set for a start that reads it whole: the bytes of its
 * file before the pages (header, page list, chunk checksums), checked. With it the start asks
 * the disk for the memory file's pages the working set lacks before the working set's own read
 * (the two overlap), and reads each working-set page straight to its place in the snapshot's
 * order (the snapshot then maps in a few runs, not page by page). Only a hint: a working set
 * written again since is read as it is, and every page is checked either way. */
struct cold_read_plan {
	uint8_t *meta;
	uint64_t meta_len; /* the header, page list and chunk checksums */
	uint64_t size;	   /* the working-set file's size */
	int whole;	   /* meta holds the whole file (size bytes), mapped from fd, a memfd that
			    * the start takes as the snapshot's own: it reads and copies nothing */
	int fd;
	int asked;    /* the pages it lacks were asked of the disk already (cold_read_ask) */
	int recopy;   /* its state copy was not taken (damaged, stale): written again */
	int buffered; /* the whole file came through the page cache (no O_DIRECT there) */
};
/* dir's working-set header into p; p empty when there is none or it is damaged */
void cold_read_plan(struct cold_read_plan *p, const char *dir);
/* A load's one read of the snapshot (REAP on KVM): dir's working-set file read whole with one
 * O_DIRECT read into p (whole), when it is small enough for a whole read to pay and intact in
 * its header. Returns its copy of the state file (state_len bytes, into p's buffer) when that is
 * intact and the state file is still the one copied; else NULL with the reason in why (p may
 * still hold the file: its pages are checked against the state file's checksums as ever). */
const uint8_t *cold_read_plan_whole(struct cold_read_plan *p, const char *dir, size_t *state_len,
				    const char **why);
/* the pages of s the planned working set lacks, asked of dir's memory file now (their read
 * overlaps what comes before the start); once per plan */
void cold_read_ask(const struct snap *s, struct cold_read_plan *p, const char *dir);
void cold_read_plan_free(struct cold_read_plan *p);

/* Whether reading s whole beats the concurrent prefetch with the rest on demand: the working
 * set in dir is at most 4 MiB (a larger one's read overlaps the run there, here it would come
 * first) and the snapshot holds at most a quarter more pages than it, plus 64 (C functions: a
 * few pages past it; a Python or JS heap of many MiB the run never touches is not read). */
int cold_read_pays(const struct snap *s, const char *dir);
/* the same for a snapshot of snap_pages pages and a working-set file of ws_size bytes */
int cold_read_pays_n(uint64_t snap_pages, uint64_t ws_size);
/* Reads the snapshot's pages into a sealed memfd of its own, s->data its view (as snap_seal
 * leaves a snapshot; the domain's store can take them after the run): the working set of
 * dir with one O_DIRECT read (placed as plan, the load's, or NULL says), each chunk checked
 * against its checksum and each page against the snapshot's; the pages it lacks from the
 * memory file in runs, each checked. 0 when s holds
 * every page; 1 when the working set is missing or unusable from its first chunk (dropped: the
 * caller starts lazily and records it); -1 with the reason in err when the memory file is
 * damaged (the snapshot is refused). */
int cold_read_whole(struct snap *s, const char *dir, struct cold_read_plan *plan,
		    struct cold_read *r, char *err, size_t errlen);
/* After the run of a start from cold_read_whole in vm: the snapshot pages outside the working
 * set that the run touched (r->mispredicted); when they pass the threshold, or when the plan
 * said its state copy was unusable, the working set is written again (with them appended, and a
 * fresh copy of the state file). 0, or -1 with the reason in err. */
int cold_read_missed(const struct snap *s, struct vm *vm, struct cold_read *r, const char *dir,
		     char *err, size_t errlen);
/* The memory file's copies of the pages the working set supplied: checked (the run did not need
 * them; a damaged memory file still has its snapshot made again). 0, or -1 with err. */
int cold_read_check_mem(const struct snap *s, const struct cold_read *r, const char *dir, char *err,
			size_t errlen);
/* After the response: the read's own writable mapping of the snapshot's memfd let go, and the
 * memfd sealed against writes as snap_seal seals one (cold_read_whole kept the mapping: its
 * unmapping is not on the request's path) */
void cold_read_settle(const struct snap *s, struct cold_read *r);
/* what r holds (its mapping too, when cold_read_settle did not let it go) */
void cold_read_free(struct cold_read *r);

/* cold_ws_read.c, for cold_read.c: a shared writable mapping of [off, off+len) of fd, grown
 * to hold it (NULL on failure); the working-set file at path read whole into r->fd (mapped at
 * r->map, its header at meta_off), in the snapshot's order where plan still describes it (pos
 * then set), else as it is from the start. 0, or -1. */
uint8_t *cold_read_grow(int fd, uint64_t off, uint64_t len);
int cold_read_ws(const struct snap *s, const char *path, struct cold_read_plan *plan,
		 struct cold_read *r);

#endif
