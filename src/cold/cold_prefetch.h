/* REAP's concurrent prefetch: the working-set file read in large sequential (O_DIRECT) pieces by
 * one thread while another checks each chunk and installs its pages; the vCPU starts once the
 * first chunk is in, and a fault on a page still on its way waits for it. */
#ifndef EMBER_SNAP_PREFETCH_H
#define EMBER_SNAP_PREFETCH_H

#include <pthread.h>
#include <stdint.h>

#include "cold/cold_ws.h"

struct cold;

struct cold_pf {
	int fd;	      /* the working-set file, -1: none */
	int buffered; /* the file system refused O_DIRECT: read through the page cache */
	char path[4200];
	uint8_t *buf;
	uint64_t size;
	pthread_t rd, in;
	int threads; /* how many of rd, in run */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* under mu */
	uint64_t avail;	    /* bytes read so far (a prefix of the file) */
	uint64_t chunks_in; /* chunks installed (a prefix of the file's) */
	int rd_done, done;  /* the reader / the installer has finished */
	int bad;	    /* the file proved damaged (or unreadable): dropped, rest on demand */
	int cancel;	    /* the run ended first: stop */
	int meta_ok;	    /* the header is parsed and each page's chunk noted */
	struct cold_ws w;
	uint32_t *chunk_of; /* per guest page: 1 + its chunk, 0 outside the working set */
	uint64_t map_pages;
	/* figures */
	uint64_t t0, read_ns, install_ns, wall_ns, pages;
};

/* Starts prefetching DIR/ws into c's machine (none: p->fd stays -1). 0, or -1 with err. */
int cold_pf_start(struct cold *c, const char *dir, char *err, size_t errlen);
/* waits until the first chunk is installed or the prefetch is over */
void cold_pf_wait_first(struct cold_pf *p);
/* for a fault on guest page pg: when the prefetch brings it, waits for that and returns 1 (the
 * page is in); 0: the page is the fault server's to serve */
int cold_pf_wait_page(struct cold_pf *p, uint64_t pg);
/* waits until the prefetch is over (everything installed, or stopped) */
void cold_pf_wait_done(struct cold_pf *p);
/* stops it (what is installed stays), joins its threads and frees it */
void cold_pf_stop(struct cold_pf *p);

#endif
