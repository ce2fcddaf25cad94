/* REAP's concurrent prefetch: a reader thread, an installer thread, and waits on their progress. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "snap/snap_cold.h"
#include "snap/snap_prefetch.h"

#define PAGE	    EMBER_PAGE_SIZE
#define FIRST_PIECE (256ULL << 10) /* small: the first chunk arrives early */
#define PIECE	    (4ULL << 20)   /* then large sequential reads, at the disk's rate */

/* the whole file, in order, into p->buf; p->avail says how far */
static void *reader(void *arg)
{
	struct snap_pf *p = arg;
	pthread_setname_np(pthread_self(), "ember-reap-rd");
	uint64_t off = 0;
	int ok = 1;
	while (ok && off < p->size) {
		uint64_t want = off ? PIECE : FIRST_PIECE;
		if (want > p->size - off)
			want = p->size - off;
		uint64_t t = vm_now_ns();
		ssize_t got = pread(p->fd, p->buf + off, want, (off_t)off);
		if (got < 0 && errno == EINVAL && !p->buffered) {
			/* the open took O_DIRECT, the read did not: the rest through the cache */
			int fl = fcntl(p->fd, F_GETFL);
			ok = fl >= 0 && fcntl(p->fd, F_SETFL, fl & ~O_DIRECT) == 0;
			p->buffered = 1;
			continue;
		}
		p->read_ns += vm_now_ns() - t;
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
static int wait_bytes(struct snap_pf *p, uint64_t need)
{
	while (p->avail < need && !p->rd_done && !p->cancel)
		pthread_cond_wait(&p->cv, &p->mu);
	return p->avail >= need && !p->cancel ? 0 : -1;
}

/* the header and trace: checked, and each page's chunk noted; -1 when damaged */
static int take_meta(struct snap_cold *c, struct snap_pf *p)
{
	long need = SNAP_WS_HDR;
	while (need > 0) {
		pthread_mutex_lock(&p->mu);
		int rc = wait_bytes(p, (uint64_t)need);
		pthread_mutex_unlock(&p->mu);
		if (rc)
			return -1;
		need = snap_ws_parse(&p->w, p->buf, p->avail, p->size);
	}
	if (need < 0)
		return -1;
	for (uint64_t i = 0; i < p->w.npages; i++) {
		uint64_t a = snap_ws_addr(&p->w, i);
		if (!snap_cold_program_page(c->vm, a) || a / PAGE >= p->map_pages)
			return -1; /* not a page a run could have recorded: not ours */
		p->chunk_of[a / PAGE] = (uint32_t)(i / p->w.chunk_pages + 1);
	}
	return 0;
}

/* chunk k: checked, then installed in runs of consecutive addresses, one call each */
static int install_chunk(struct snap_cold *c, struct snap_pf *p, uint64_t k)
{
	const struct snap_ws *w = &p->w;
	uint64_t first = k * w->chunk_pages, end = first + w->chunk_pages;
	if (end > w->npages)
		end = w->npages;
	pthread_mutex_lock(&p->mu);
	int rc = wait_bytes(p, w->data_off + end * PAGE);
	pthread_mutex_unlock(&p->mu);
	if (rc)
		return -1;
	uint64_t t = vm_now_ns();
	const uint8_t *data = p->buf + w->data_off;
	if (!snap_ws_chunk_ok(w, data, k))
		return -1;
	for (uint64_t i = first; i < end;) {
		uint64_t j = i + 1, a = snap_ws_addr(w, i);
		while (j < end && snap_ws_addr(w, j) == a + (j - i) * PAGE)
			j++;
		if (snap_cold_install(c, a, data + i * PAGE, (j - i) * PAGE))
			return -1;
		p->pages += j - i;
		i = j;
	}
	p->install_ns += vm_now_ns() - t;
	return 0;
}

static void *installer(void *arg)
{
	struct snap_cold *c = arg;
	struct snap_pf *p = &c->pf;
	pthread_setname_np(pthread_self(), "ember-reap-in");
	int bad = take_meta(c, p);
	for (uint64_t k = 0; !bad && k < p->w.nchunks; k++) {
		bad = install_chunk(c, p, k);
		pthread_mutex_lock(&p->mu);
		if (!bad)
			p->chunks_in = k + 1;
		bad = bad || p->cancel;
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
	}
	pthread_mutex_lock(&p->mu);
	/* damaged (not merely cancelled): dropped, so the next start records it again */
	p->bad = bad && !p->cancel;
	if (p->bad)
		unlink(p->path);
	p->done = 1;
	p->wall_ns = vm_now_ns() - p->t0;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

static int open_ws(struct snap_pf *p, const char *dir)
{
	snap_ws_path(p->path, sizeof(p->path), dir);
	p->fd = open(p->path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (p->fd < 0 && errno == EINVAL) {
		/* a file system without O_DIRECT (tmpfs on older kernels, some overlays): the same
		 * reads through the page cache, and the caller is told */
		p->fd = open(p->path, O_RDONLY | O_CLOEXEC);
		p->buffered = p->fd >= 0;
	}
	return p->fd;
}

int snap_pf_start(struct snap_cold *c, const char *dir, char *err, size_t errlen)
{
	struct snap_pf *p = &c->pf;
	struct stat sb;
	p->t0 = vm_now_ns();
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
	if (!e && !(e = pthread_create(&p->rd, NULL, reader, p))) {
		p->threads = 1;
		if (!(e = pthread_create(&p->in, NULL, installer, c)))
			p->threads = 2;
	}
	if (e)
		return snprintf(err, errlen, "working set %s: %s", p->path, strerror(e)), -1;
	return 0;
}

void snap_pf_wait_first(struct snap_pf *p)
{
	if (p->threads < 2)
		return;
	pthread_mutex_lock(&p->mu);
	while (!p->chunks_in && !p->done)
		pthread_cond_wait(&p->cv, &p->mu);
	pthread_mutex_unlock(&p->mu);
}

int snap_pf_wait_page(struct snap_pf *p, uint64_t pg)
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

void snap_pf_wait_done(struct snap_pf *p)
{
	if (p->threads < 2)
		return;
	pthread_mutex_lock(&p->mu);
	while (!p->done)
		pthread_cond_wait(&p->cv, &p->mu);
	pthread_mutex_unlock(&p->mu);
}

void snap_pf_stop(struct snap_pf *p)
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
