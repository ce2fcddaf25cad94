/* REAP's whole read of the working-set file (cold_read.c): one O_DIRECT read into the
 * snapshot's new memfd, each page straight to its place in the snapshot's order where the load's
 * plan still describes the file. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "cold/cold_read.h"
#include "cold/cold_ws.h"

#define PAGE EMBER_PAGE_SIZE

uint8_t *cold_read_grow(int fd, uint64_t off, uint64_t len)
{
	if (!len || ftruncate(fd, (off_t)(off + len)))
		return NULL;
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)off);
	return m == MAP_FAILED ? NULL : m;
}

/* the plan's layout for a file of size bytes: each snapshot page of it at its own place in
 * r->fd (the snapshot's order, as snap_seal leaves one), its header, any page the snapshot does
 * not hold and the pages carried after the working set's past them (apart: a run touching one
 * of those is seen, as a fault maps the pages around it in the same mapping); the offset of its
 * pages in the file, or 0 when the plan does not describe such a file */
static uint64_t plan_layout(const struct snap *s, const struct cold_read_plan *plan, uint64_t size,
			    struct cold_read *r)
{
	struct cold_ws w;
	if (!plan || !plan->meta || plan->size != size ||
	    cold_ws_parse(&w, plan->meta, plan->meta_len, size) ||
	    !(r->pos = malloc((w.npages + w.nextra + 1) * sizeof(*r->pos))))
		return 0;
	uint64_t end = s->npages * PAGE + w.data_off;
	r->meta_off = s->npages * PAGE;
	for (uint64_t i = 0; i < w.npages + w.nextra; i++) {
		uint64_t a = cold_ws_addr(&w, i);
		size_t j = snap_page_index(s, a);
		if (i < w.npages && j < s->npages && s->pages[j] == a) {
			r->pos[i] = j * PAGE;
		} else {
			r->pos[i] = end;
			end += PAGE;
		}
	}
	r->map_len = end;
	r->sorted = 1;
	return w.data_off;
}

/* the file's bytes in order to their places: its header at meta_off, page i at pos[i] (all of
 * it at the start without pos); pieces consecutive in both merged. The count of iov. */
static size_t layout_iov(const struct cold_read *r, uint64_t data_off, struct iovec *iov)
{
	size_t n = 1;
	iov[0] = (struct iovec){r->map + r->meta_off, r->pos ? data_off : r->ws_bytes};
	for (uint64_t i = 0; r->pos && i < (r->ws_bytes - data_off) / PAGE; i++) {
		uint8_t *p = r->map + r->pos[i];
		if ((uint8_t *)iov[n - 1].iov_base + iov[n - 1].iov_len == p)
			iov[n - 1].iov_len += PAGE;
		else
			iov[n++] = (struct iovec){p, PAGE};
	}
	return n;
}

/* size bytes of fd from its start into iov; O_DIRECT dropped (r->buffered) where the read
 * refuses it */
static int read_iov(int fd, struct iovec *iov, size_t n, uint64_t size, struct cold_read *r)
{
	uint64_t off = 0;
	size_t i = 0;
	while (off < size && i < n) {
		ssize_t got =
		    preadv(fd, iov + i, (int)(n - i < IOV_MAX ? n - i : IOV_MAX), (off_t)off);
		if (got < 0 && errno == EINVAL && !r->buffered) { /* the read refused O_DIRECT */
			int fl = fcntl(fd, F_GETFL);
			if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_DIRECT))
				return -1;
			r->buffered = 1;
			continue;
		}
		if (got <= 0)
			return -1;
		off += (uint64_t)got;
		for (size_t left = (size_t)got; left && i < n;) {
			size_t k = left < iov[i].iov_len ? left : iov[i].iov_len;
			iov[i].iov_base = (uint8_t *)iov[i].iov_base + k;
			iov[i].iov_len -= k;
			left -= k;
			if (!iov[i].iov_len)
				i++;
		}
	}
	return off == size ? 0 : -1;
}

/* the file read into r->fd as the layout says (plan_layout's, or the file as it is) */
static int read_laid(int fd, uint64_t data_off, struct cold_read *r)
{
	uint64_t n = r->pos ? 1 + (r->ws_bytes - data_off) / PAGE : 1;
	struct iovec *iov = malloc(n * sizeof(*iov));
	if (!iov || !(r->map = cold_read_grow(r->fd, 0, r->map_len))) {
		free(iov);
		return -1;
	}
	int rc = read_iov(fd, iov, layout_iov(r, data_off, iov), r->ws_bytes, r);
	free(iov);
	return rc;
}

/* back to the file as it is, at the start of r->fd (emptied) */
static void unsort(struct cold_read *r)
{
	if (r->map)
		munmap(r->map, r->map_len);
	r->map = NULL;
	free(r->pos);
	r->pos = NULL;
	r->sorted = 0;
	r->meta_off = 0;
	r->map_len = r->ws_bytes;
	if (ftruncate(r->fd, 0))
		r->map_len = 0; /* the grow fails too */
}

int cold_read_ws(const struct snap *s, const char *path, struct cold_read_plan *plan,
		 struct cold_read *r)
{
	if (plan && plan->whole) { /* read at the load into a memfd: it becomes the start's */
		close(r->fd);
		r->fd = plan->fd;
		r->map = plan->meta;
		r->ws_bytes = r->map_len = plan->size;
		r->buffered = plan->buffered;
		plan->meta = NULL;
		plan->whole = 0;
		plan->fd = -1;
		return 0;
	}
	int fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0 && errno == EINVAL) { /* tmpfs on older kernels, some overlays: said */
		fd = open(path, O_RDONLY | O_CLOEXEC);
		r->buffered = fd >= 0;
	}
	struct stat sb;
	if (fd < 0 || fstat(fd, &sb) || sb.st_size < SNAP_WS_HDR) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	r->ws_bytes = r->map_len = (uint64_t)sb.st_size;
	uint64_t t = base_now_ns();
	int rc = read_laid(fd, plan_layout(s, plan, r->ws_bytes, r), r);
	/* written again since the load (a misprediction elsewhere): read as it is */
	if (r->sorted && (rc || memcmp(r->map + r->meta_off, plan->meta, plan->meta_len))) {
		unsort(r);
		rc = read_laid(fd, 0, r);
	}
	close(fd);
	r->read_ns = base_now_ns() - t;
	return rc;
}
