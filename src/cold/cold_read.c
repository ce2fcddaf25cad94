/* REAP on KVM without a fault server: the snapshot read whole, checked, then restored as warm. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cold/cold.h"
#include "cold/cold_read.h"
#include "snap/snap_file.h"
#include "cold/cold_ws.h"

#define PAGE EMBER_PAGE_SIZE
#define RUN  256 /* pages of the memory file per read */
/* pages outside the working set worth reading with it rather than serving on demand */
#define OUTSIDE_SLACK 64
/* a working set larger than this (4 MiB) is better read beside the run (cold_prefetch.c): its
 * read overlaps the run there, here it precedes it */
#define WHOLE_MAX 1024

/* the working set's intact chunks taken, page by page where it is the snapshot's content (its
 * place in the memfd, r->pos, noted in offs); the number of intact chunks */
static uint64_t take_ws(const struct snap *s, struct cold_read *r, const struct cold_ws *w,
			uint64_t *offs)
{
	uint64_t k = 0;
	for (; k < w->nchunks && cold_ws_chunk_at_ok(w, r->map, r->pos, k); k++) {
		uint64_t end =
		    (k + 1) * w->chunk_pages < w->npages ? (k + 1) * w->chunk_pages : w->npages;
		for (uint64_t i = k * w->chunk_pages; i < end; i++) {
			uint64_t a = cold_ws_addr(w, i);
			size_t j = snap_page_index(s, a);
			/* a page the snapshot does not hold was served as zeros: nothing to take;
			 * one that is not the snapshot's content comes from the memory file */
			if (j >= s->npages || s->pages[j] != a ||
			    snap_page_hash(r->map + r->pos[i]) != s->hashes[j])
				continue;
			offs[j] = r->pos[i];
			r->from_ws[j] = 1;
			r->ws_pages++;
		}
	}
	return k;
}

/* the snapshot's pages the file carries after the working set's, each taken where it is the
 * snapshot's content (from_ws 4: outside the working set, its mem copy checked after the run) */
static void take_extras(const struct snap *s, struct cold_read *r, const struct cold_ws *w,
			uint64_t *offs)
{
	for (uint64_t i = w->npages; i < w->npages + w->nextra; i++) {
		uint64_t a = cold_ws_addr(w, i);
		size_t j = snap_page_index(s, a);
		if (j >= s->npages || s->pages[j] != a || r->from_ws[j] ||
		    snap_page_hash(r->map + r->pos[i]) != s->hashes[j])
			continue;
		offs[j] = r->pos[i];
		r->from_ws[j] = 4;
		r->outside++;
	}
}

/* where each page of w went in the memfd: read as the file is, after its header */
static int pos_in_file(struct cold_read *r, const struct cold_ws *w)
{
	if (r->pos)
		return 0;
	if (!(r->pos = malloc((w->npages + w->nextra + 1) * sizeof(*r->pos))))
		return -1;
	for (uint64_t i = 0; i < w->npages + w->nextra; i++)
		r->pos[i] = w->data_off + i * PAGE;
	return 0;
}

/* the working set: read, parsed, its intact chunks taken; 1 when none could be */
static int use_ws(const struct snap *s, const char *dir, struct cold_read_plan *plan,
		  struct cold_read *r, uint64_t *offs)
{
	char path[4200];
	cold_ws_path(path, sizeof(path), dir);
	struct cold_ws w;
	int rc = 1;
	if (cold_read_ws(s, path, plan, r) ||
	    cold_ws_parse(&w, r->map + r->meta_off, r->ws_bytes, r->ws_bytes) || pos_in_file(r, &w))
		goto out;
	uint64_t t = base_now_ns();
	uint64_t good = take_ws(s, r, &w, offs);
	if (good == w.nchunks)
		take_extras(s, r, &w, offs);
	r->check_ns += base_now_ns() - t;
	r->ws_bad = good < w.nchunks;
	if (!good && w.nchunks)
		goto out;
	if (!(r->ws = malloc((w.npages ? w.npages : 1) * sizeof(uint64_t))))
		goto out;
	for (uint64_t i = 0; i < w.npages; i++)
		r->ws[i] = cold_ws_addr(&w, i);
	r->nws = w.npages;
	rc = 0;
out:
	if (rc || r->ws_bad) /* damaged: dropped, the next start records it again */
		unlink(path);
	return rc;
}

/* the run of pages from index i the working set did not bring, consecutive in the guest */
static size_t missing_run(const struct snap *s, const struct cold_read *r, size_t i)
{
	size_t n = 1;
	while (n < RUN && i + n < s->npages && !r->from_ws[i + n] &&
	       s->pages[i + n] == s->pages[i] + n * PAGE)
		n++;
	return n;
}

/* pages [i, i+n) of s read from the memory file into buf and checked; -1 at a damaged one */
static int read_checked(const struct snap *s, int fd, size_t i, size_t n, uint8_t *buf,
			uint64_t *bad)
{
	if (pread(fd, buf, n * PAGE, (off_t)s->pages[i]) != (ssize_t)(n * PAGE))
		return *bad = s->pages[i], -1;
	for (size_t k = 0; k < n; k++)
		if (snap_page_hash(buf + k * PAGE) != s->hashes[i + k])
			return *bad = s->pages[i + k], -1;
	return 0;
}

static int damaged(const char *dir, uint64_t page, char *err, size_t errlen)
{
	return snprintf(err, errlen, "snapshot %s refused: page %#llx is damaged", dir,
			(unsigned long long)page),
	       -1;
}

static int open_mem(const char *dir)
{
	char path[4200];
	snprintf(path, sizeof(path), "%.4096s/mem", dir);
	return open(path, O_RDONLY | O_CLOEXEC);
}

/* every run of pages the working set did not bring asked of the disk at once (read into the
 * page cache in the background): one wait for them all, not one per run */
static void ask_missing(const struct snap *s, const struct cold_read *r, int fd)
{
	for (size_t i = 0; fd >= 0 && i < s->npages;) {
		size_t n = r->from_ws[i] ? 1 : missing_run(s, r, i);
		if (!r->from_ws[i])
			posix_fadvise(fd, (off_t)s->pages[i], (off_t)(n * PAGE),
				      POSIX_FADV_WILLNEED);
		i += n;
	}
}

/* the pages the load's plan says the working set lacks, asked of the disk before its read, so
 * the two reads overlap; a working set written again since only makes the hint wrong */
static void ask_planned(const struct snap *s, const struct cold_read_plan *plan,
			struct cold_read *r, const char *dir)
{
	struct cold_ws w;
	if (!plan || !plan->meta || cold_ws_parse(&w, plan->meta, plan->meta_len, plan->size))
		return;
	for (uint64_t i = 0; i < w.npages + w.nextra; i++) {
		uint64_t a = cold_ws_addr(&w, i);
		size_t j = snap_page_index(s, a);
		if (j < s->npages && s->pages[j] == a)
			r->from_ws[j] = 1;
	}
	/* the memory file opened only when there is something to ask of it: a working set read
	 * whole holds every page (an open and a close, 10-15 us of the load, for nothing) */
	size_t lacks = 0;
	for (size_t j = 0; j < s->npages && !lacks; j++)
		lacks = !r->from_ws[j];
	int fd = lacks ? open_mem(dir) : -1;
	ask_missing(s, r, fd);
	if (fd >= 0)
		close(fd);
	memset(r->from_ws, 0, s->npages);
}

void cold_read_ask(const struct snap *s, struct cold_read_plan *p, const char *dir)
{
	struct cold_read r = {.from_ws = calloc(s->npages ? s->npages : 1, 1)};
	if (r.from_ws && !p->asked)
		ask_planned(s, p, &r, dir);
	p->asked = 1;
	free(r.from_ws);
}

/* the pages the working set lacks, from dir's memory file (opened only then) into the memfd
 * after it, checked */
static int read_rest(const struct snap *s, const char *dir, struct cold_read *r, uint64_t *offs,
		     uint64_t *bad)
{
	uint64_t need = 0, got = 0, at = r->map_len, t = base_now_ns();
	for (size_t i = 0; i < s->npages; i++)
		need += !r->from_ws[i];
	if (!need)
		return 0;
	int fd = open_mem(dir);
	/* after the working set, apart from it: a run touching one of them is seen (a fault maps
	 * the pages around it in the same mapping too, and vm_present would count them) */
	uint8_t *m = fd < 0 ? NULL : cold_read_grow(r->fd, at, need * PAGE);
	int rc = m ? 0 : -1;
	if (m)
		ask_missing(s, r, fd);
	for (size_t i = 0; !rc && i < s->npages;) {
		size_t n = r->from_ws[i] ? 1 : missing_run(s, r, i);
		if (!r->from_ws[i]) {
			rc = read_checked(s, fd, i, n, m + got * PAGE, bad);
			for (size_t k = 0; k < n; k++)
				offs[i + k] = at + (got + k) * PAGE;
			got += n;
			r->outside += n;
		}
		i += n;
	}
	if (m)
		munmap(m, need * PAGE);
	if (fd >= 0)
		close(fd);
	r->read_ns += base_now_ns() - t;
	return rc;
}

int cold_read_pays(const struct snap *s, const char *dir)
{
	char path[4200];
	struct stat sb;
	cold_ws_path(path, sizeof(path), dir);
	if (stat(path, &sb) || sb.st_size < SNAP_WS_HDR)
		return 0;
	return cold_read_pays_n(s->npages, (uint64_t)sb.st_size);
}

int cold_read_pays_n(uint64_t snap_pages, uint64_t ws_size)
{
	uint64_t ws = ws_size / PAGE; /* its pages, and its header's few */
	return ws <= WHOLE_MAX && snap_pages <= ws + ws / 4 + OUTSIDE_SLACK;
}

int cold_read_whole(struct snap *s, const char *dir, struct cold_read_plan *plan,
		    struct cold_read *r, char *err, size_t errlen)
{
	memset(r, 0, sizeof(*r));
	uint64_t t0 = base_now_ns(), bad = 0;
	snap_data_free(s);
	uint64_t *offs = malloc((s->npages ? s->npages : 1) * sizeof(*offs));
	r->from_ws = calloc(s->npages ? s->npages : 1, 1);
	/* the load's read brought its own memfd (cold_read_ws takes it) */
	int taken = plan && plan->whole;
	r->fd = taken ? -1 : memfd_create("ember-snapshot", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	int rc = -1;
	if (!offs || !r->from_ws || (r->fd < 0 && !taken)) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (!plan || !plan->asked)
		ask_planned(s, plan, r, dir);
	r->recopy = plan && plan->recopy;
	if (use_ws(s, dir, plan, r, offs)) {
		rc = 1;
		goto out;
	}
	if (read_rest(s, dir, r, offs, &bad)) {
		if (bad)
			damaged(dir, bad, err, errlen);
		else
			snprintf(err, errlen, "snapshot %s refused: no memory file", dir);
		goto out;
	}
	/* sealed as snap_seal leaves a snapshot (machines map it copy-on-write), but for
	 * F_SEAL_WRITE, refused while r->map is there: F_SEAL_FUTURE_WRITE holds as much from now
	 * on, and the mapping goes after the response (cold_read_settle), not 20-40 us before it */
	if (fcntl(r->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE) ||
	    !(s->data = snap_view(r->fd, offs, s->npages))) {
		snprintf(err, errlen, "snapshot %s: keeping its memory: %s", dir, strerror(errno));
		goto out;
	}
	s->offs = offs;
	s->memfd = r->fd;
	s->sealed = 1;
	offs = NULL;
	r->fd = -1;
	rc = 0;
	r->wall_ns = base_now_ns() - t0;
out:
	if (rc && r->map)
		munmap(r->map, r->map_len);
	if (rc)
		r->map = NULL;
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	free(offs);
	if (rc == 1)
		cold_read_free(r);
	return rc;
}

/* the pages outside the working set, for the misprediction count: their addresses */
static uint64_t *outside_pages(const struct snap *s, const struct cold_read *r, size_t *n)
{
	uint64_t *a = malloc((r->outside ? r->outside : 1) * sizeof(*a));
	*n = 0;
	for (size_t i = 0; a && i < s->npages; i++)
		if (!(r->from_ws[i] & 1))
			a[(*n)++] = s->pages[i];
	return a;
}

int cold_read_missed(const struct snap *s, struct vm *vm, struct cold_read *r, const char *dir,
		     char *err, size_t errlen)
{
	size_t n = 0;
	uint64_t *out = outside_pages(s, r, &n);
	uint64_t *trace = out ? malloc((r->nws + n + 1) * sizeof(*trace)) : NULL;
	uint8_t *in = trace ? malloc(n + 1) : NULL;
	int rc = -1;
	if (!in || vm_present(vm, out, n, in)) {
		snprintf(err, errlen, "counting mispredictions: %s", strerror(errno));
		goto done;
	}
	memcpy(trace, r->ws, r->nws * sizeof(*trace));
	for (size_t i = 0; i < r->nws; i++) { /* a page of the trace is no misprediction */
		size_t j = snap_page_index(s, r->ws[i]);
		if (j < s->npages && s->pages[j] == r->ws[i])
			r->from_ws[j] |= 2;
	}
	size_t nt = r->nws;
	for (size_t i = 0, j = 0; i < n; i++) {
		while (s->pages[j] != out[i])
			j++;
		if (in[i] && !(r->from_ws[j] & 2) && cold_program_page(vm, out[i]))
			trace[nt++] = out[i];
	}
	r->mispredicted = nt - r->nws;
	rc = 0;
	/* a damaged working set is dropped instead: the next start records it whole */
	if (!r->ws_bad && (r->recopy || (r->mispredicted >= SNAP_REREC_MIN &&
					 r->mispredicted * SNAP_REREC_DIV >= r->nws))) {
		int fd = open_mem(dir);
		rc = fd < 0 ? -1 : cold_ws_write(dir, s, fd, trace, nt, 1, err, errlen);
		r->rerecorded = !rc;
		if (fd >= 0)
			close(fd);
	}
done:
	free(in);
	free(trace);
	free(out);
	return rc;
}

int cold_read_check_mem(const struct snap *s, const struct cold_read *r, const char *dir, char *err,
			size_t errlen)
{
	int fd = open_mem(dir);
	uint8_t *buf = malloc(RUN * PAGE);
	uint64_t bad = 0;
	int rc = fd < 0 || !buf ? -1 : 0;
	for (size_t i = 0; !rc && i < s->npages;) {
		size_t n = 1;
		while (n < RUN && i + n < s->npages &&
		       !(r->from_ws[i + n] & 5) == !(r->from_ws[i] & 5) &&
		       s->pages[i + n] == s->pages[i] + n * PAGE)
			n++;
		if (r->from_ws[i] & 5) /* its content came from the file */
			rc = read_checked(s, fd, i, n, buf, &bad);
		i += n;
	}
	free(buf);
	if (fd >= 0)
		close(fd);
	if (rc && !bad)
		return snprintf(err, errlen, "snapshot %s refused: no memory file", dir), -1;
	return rc ? damaged(dir, bad, err, errlen) : 0;
}

void cold_read_settle(const struct snap *s, struct cold_read *r)
{
	if (!r->map)
		return;
	munmap(r->map, r->map_len);
	r->map = NULL;
	/* no writable mapping left: sealed as snap_seal seals (a snapshot in the store already
	 * has its own memfd). Before Linux 6.7 the view, a shared mapping, still counts as
	 * writable and the seal is refused: F_SEAL_FUTURE_WRITE holds as much, the writable
	 * mapping gone, and nothing reads the seals back */
	if (s->sealed && !s->store_fd)
		fcntl(s->memfd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SEAL);
}

void cold_read_free(struct cold_read *r)
{
	if (r->map)
		munmap(r->map, r->map_len);
	r->map = NULL;
	free(r->pos);
	r->pos = NULL;
	free(r->ws);
	free(r->from_ws);
	r->ws = NULL;
	r->from_ws = NULL;
}
