/* REAP's concurrent prefetch: a reader thread, an installer thread, and waits on their progress. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cold/cold.h"
#include "cold/cold_prefetch.h"

#define PAGE	    EMBER_PAGE_SIZE
#define FIRST_PIECE (256ULL << 10) /* small: the first chunk arrives early */
#define PIECE	    (4ULL << 20)   /* then large sequential reads, at the disk's rate */

/* one read at off: the first small (its chunk arrives early), then large ones */
static ssize_t read_piece(struct cold_pf *p, uint64_t off)
{
	uint64_t want = off ? PIECE : FIRST_PIECE;
	if (want > p->size - off)
		want = p->size - off;
	uint64_t t = base_now_ns();
	ssize_t got = pread(p->fd, p->buf + off, want, (off_t)off);
	if (got < 0 && errno == EINVAL && !p->buffered) {
		/* the open took O_DIRECT, the read did not: this and the rest through the cache */
		int fl = fcntl(p->fd, F_GETFL);
		if (fl < 0 || fcntl(p->fd, F_SETFL, fl & ~O_DIRECT))
			return -1;
		p->buffered = 1;
		got = pread(p->fd, p->buf + off, want, (off_t)off);
	}
	p->read_ns += base_now_ns() - t;
	return got;
}

/* the rest of the file, in order, into p->buf; p->avail says how far */
static void *reader(void *arg)
{
	struct cold_pf *p = arg;
	pthread_setname_np(pthread_self(), "ember-reap-rd");
	uint64_t off = p->avail;
	int ok = 1;
	while (ok && off < p->size) {
		ssize_t got = read_piece(p, off);
		pthread_mutex_lock(&p->mu);
		ok = got > 0 && !p->cancel;
		if (ok)
			off += (uint64_t)got, p->avail = off;
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
	}
	pthread_mutex_lock(&p->mu);
	p->rd_done = 1;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* with mu held: waits until need bytes are in; 0, or -1 when they never will be */
static int wait_bytes(struct cold_pf *p, uint64_t need)
{
	while (p->avail < need && !p->rd_done && !p->cancel)
		pthread_cond_wait(&p->cv, &p->mu);
	return p->avail >= need && !p->cancel ? 0 : -1;
}

/* each page's chunk noted, once the header is parsed; -1 when a page is not one of ours */
static int note_chunks(struct cold *c, struct cold_pf *p)
{
	p->meta_ok = 1;
	for (uint64_t i = 0; i < p->w.npages; i++) {
		uint64_t a = cold_ws_addr(&p->w, i);
		if (!cold_program_page(c->vm, a) || a / PAGE >= p->map_pages)
			return -1; /* not a page a run could have recorded: not ours */
		p->chunk_of[a / PAGE] = (uint32_t)(i / p->w.chunk_pages + 1);
	}
	return 0;
}

/* the header and trace: waited for, checked, each page's chunk noted; -1 when damaged */
static int take_meta(struct cold *c, struct cold_pf *p)
{
	long need = SNAP_WS_HDR;
	while (need > 0) {
		pthread_mutex_lock(&p->mu);
		int rc = wait_bytes(p, (uint64_t)need);
		pthread_mutex_unlock(&p->mu);
		if (rc)
			return -1;
		need = cold_ws_parse(&p->w, p->buf, p->avail, p->size);
	}
	return need < 0 ? -1 : note_chunks(c, p);
}

static uint64_t chunk_end(const struct cold_ws *w, uint64_t k)
{
	uint64_t end = (k + 1) * w->chunk_pages;
	return end > w->npages ? w->npages : end;
}

/* chunk k: checked, then installed in runs of consecutive addresses, one call each */
static int install_chunk(struct cold *c, struct cold_pf *p, uint64_t k)
{
	const struct cold_ws *w = &p->w;
	uint64_t first = k * w->chunk_pages, end = chunk_end(w, k);
	pthread_mutex_lock(&p->mu);
	int rc = wait_bytes(p, w->data_off + end * PAGE);
	pthread_mutex_unlock(&p->mu);
	if (rc)
		return -1;
	uint64_t t = base_now_ns();
	const uint8_t *data = p->buf + w->data_off;
	if (!cold_ws_chunk_ok(w, data, k))
		return -1;
	for (uint64_t i = first; i < end;) {
		uint64_t j = i + 1, a = cold_ws_addr(w, i);
		while (j < end && cold_ws_addr(w, j) == a + (j - i) * PAGE)
			j++;
		if (cold_install(c, a, data + i * PAGE, (j - i) * PAGE))
			return -1;
		p->pages += j - i;
		i = j;
	}
	p->install_ns += base_now_ns() - t;
	return 0;
}

static void finished(struct cold_pf *p, int bad);

static void *installer(void *arg)
{
	struct cold *c = arg;
	struct cold_pf *p = &c->pf;
	pthread_setname_np(pthread_self(), "ember-reap-in");
	int bad = p->meta_ok ? 0 : take_meta(c, p);
	for (uint64_t k = p->chunks_in; !bad && k < p->w.nchunks; k++) {
		bad = install_chunk(c, p, k);
		pthread_mutex_lock(&p->mu);
		if (!bad)
			p->chunks_in = k + 1;
		bad = bad || p->cancel;
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
	}
	pthread_mutex_lock(&p->mu);
	finished(p, bad);
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* with mu held (or before the threads): over; damaged (not merely cancelled) is dropped, so the
 * next start records it again */
static void finished(struct cold_pf *p, int bad)
{
	p->bad = bad && !p->cancel;
	if (p->bad)
		unlink(p->path);
	p->done = 1;
	p->wall_ns = base_now_ns() - p->t0;
	pthread_cond_broadcast(&p->cv);
}

/* on the caller's thread, before any other: the first piece read and what it holds installed;
 * 1 when that was all of it (no threads needed), 0 when the rest is for them */
static int first_piece(struct cold *c, struct cold_pf *p)
{
	ssize_t got = p->size ? read_piece(p, 0) : -1;
	if (got <= 0)
		return finished(p, 1), 1;
	p->avail = (uint64_t)got;
	long need = cold_ws_parse(&p->w, p->buf, p->avail, p->size);
	if (need < 0 || (!need && note_chunks(c, p)))
		return finished(p, 1), 1;
	if (need > 0)
		return 0; /* a long trace: the installer waits for it */
	while (p->chunks_in < p->w.nchunks &&
	       p->w.data_off + chunk_end(&p->w, p->chunks_in) * PAGE <= p->avail) {
		if (install_chunk(c, p, p->chunks_in))
			return finished(p, 1), 1;
		p->chunks_in++;
	}
	if (p->chunks_in < p->w.nchunks)
		return 0;
	return finished(p, 0), 1;
}

static int open_ws(struct cold_pf *p, const char *dir)
{
	cold_ws_path(p->path, sizeof(p->path), dir);
	p->fd = open(p->path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (p->fd < 0 && errno == EINVAL) {
		/* a file system without O_DIRECT (tmpfs on older kernels, some overlays): the same
		 * reads through the page cache, and the caller is told */
		p->fd = open(p->path, O_RDONLY | O_CLOEXEC);
		p->buffered = p->fd >= 0;
	}
	return p->fd;
}

int cold_pf_start(struct cold *c, const char *dir, char *err, size_t errlen)
{
	struct cold_pf *p = &c->pf;
	struct stat sb;
	p->t0 = base_now_ns();
	if (open_ws(p, dir) < 0)
		return errno == ENOENT
			   ? 0
			   : (snprintf(err, errlen, "working set %s: %s", p->path, strerror(errno)),
			      -1);
	int e = fstat(p->fd, &sb) ? errno : 0;
	p->size = e ? 0 : (uint64_t)sb.st_size;
	p->map_pages = vm_user_top(c->vm) / PAGE;
	if (!e && (posix_memalign((void **)&p->buf, PAGE, p->size ? p->size : PAGE) ||
		   !(p->chunk_of = calloc(p->map_pages, sizeof(uint32_t)))))
		e = ENOMEM;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	if (!e && first_piece(c, p))
		return 0; /* a small working set: all in already */
	if (!e && !(e = pthread_create(&p->rd, NULL, reader, p))) {
		p->threads = 1;
		if (!(e = pthread_create(&p->in, NULL, installer, c)))
			p->threads = 2;
	}
	if (e)
		return snprintf(err, errlen, "working set %s: %s", p->path, strerror(e)), -1;
	return 0;
}

void cold_pf_wait_first(struct cold_pf *p)
{
	if (p->threads < 2)
		return;
	pthread_mutex_lock(&p->mu);
	while (!p->chunks_in && !p->done)
		pthread_cond_wait(&p->cv, &p->mu);
	pthread_mutex_unlock(&p->mu);
}

int cold_pf_wait_page(struct cold_pf *p, uint64_t pg)
{
	if (p->threads < 2 || pg >= p->map_pages || !p->chunk_of[pg])
		return 0;
	uint64_t k = p->chunk_of[pg];
	pthread_mutex_lock(&p->mu);
	while (p->chunks_in < k && !p->done)
		pthread_cond_wait(&p->cv, &p->mu);
	int in = p->chunks_in >= k;
	pthread_mutex_unlock(&p->mu);
	return in;
}

void cold_pf_wait_done(struct cold_pf *p)
{
	if (p->threads < 2)
		return;
	pthread_mutex_lock(&p->mu);
	while (!p->done)
		pthread_cond_wait(&p->cv, &p->mu);
	pthread_mutex_unlock(&p->mu);
}

void cold_pf_stop(struct cold_pf *p)
{
	if (p->threads) {
		pthread_mutex_lock(&p->mu);
		p->cancel = !p->done;
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
		pthread_join(p->rd, NULL);
		if (p->threads == 2)
			pthread_join(p->in, NULL);
		p->threads = 0;
	}
	if (p->fd >= 0) {
		pthread_mutex_destroy(&p->mu);
		pthread_cond_destroy(&p->cv);
		close(p->fd);
	}
	free(p->buf);
	free(p->chunk_of);
	p->buf = NULL;
	p->chunk_of = NULL;
	p->fd = -1;
}
