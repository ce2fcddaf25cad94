/* The fault server of cold starts: pages on demand, and REAP's prefetch started and waited on. */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xxhash.h>

#include "cold/cold.h"
#include "snap/snap_file.h"
#include "cold/cold_ws.h"

#define PAGE EMBER_PAGE_SIZE

int cold_install(struct cold *c, uint64_t addr, const void *src, uint64_t len)
{
	struct uffdio_copy cp = {
	    .dst = addr + c->u.off[0], .src = (uint64_t)(uintptr_t)src, .len = len, .mode = 0};
	if (ioctl(c->u.fd[0], UFFDIO_COPY, &cp) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* a page the program may have: page 0 (the sled), the runtime's areas (its vCPUs' and its own)
 * and its own memory, never the host's structures in between (a fault there, on a CPL0 stack, is
 * served, not recorded) */
int cold_program_page(const struct vm *vm, uint64_t addr)
{
	return addr % PAGE == 0 && (addr == 0 || (addr >= EMBER_RT_CPUS && addr < vm_user_top(vm)));
}

void cold_check(struct cold *c, size_t i, uint8_t *page, int read)
{
	if (read && snap_page_hash(page) == c->s->hashes[i])
		return;
	/* a damaged memory file: leaving the fault unserved would hang the guest until its
	 * timeout, so it gets int3 bytes (a trap as code, a non-canonical pointer as data) and the
	 * caller drops the run */
	if (!c->damaged)
		c->damaged = c->s->pages[i] + 1;
	c->failed = 1;
	memset(page, 0xcc, PAGE);
}

/* one faulting page: its snapshot content from the memory file (checked), or zeros */
static int serve(struct cold *c, int which, uint64_t fault)
{
	uint64_t addr = (fault - c->u.off[which]) & ~(PAGE - 1);
	static __thread uint8_t page[4096] __attribute__((aligned(4096)));
	const struct snap *s = c->s;
	size_t i = snap_page_index(s, addr);
	uint64_t pg = addr / PAGE, t0 = base_now_ns();
	if (cold_pf_wait_page(&c->pf, pg)) { /* on its way: in now, its waiter is woken */
		struct uffdio_range r = {addr + c->u.off[which], PAGE};
		ioctl(c->u.fd[which], UFFDIO_WAKE, &r);
		c->waits++;
		c->wait_ns += base_now_ns() - t0;
		return 0;
	}
	int zeroed = __atomic_load_n(&c->zeroed[pg / 8], __ATOMIC_ACQUIRE) & (1 << (pg % 8));
	if (!zeroed && i < s->npages && s->pages[i] == addr) {
		cold_check(c, i, page, pread(c->memfd, page, PAGE, (off_t)addr) == (ssize_t)PAGE);
	} else {
		memset(page, 0, PAGE);
	}
	struct uffdio_copy cp = {.dst = addr + c->u.off[which],
				 .src = (uint64_t)(uintptr_t)page,
				 .len = PAGE,
				 .mode = 0};
	/* errno means something only when the ioctl failed: a success leaves it as it was */
	if (ioctl(c->u.fd[which], UFFDIO_COPY, &cp) < 0) {
		if (errno != EEXIST)
			return -errno;
		/* the page arrived meanwhile (the prefetch, another fault): wake the waiter */
		struct uffdio_range r = {addr + c->u.off[which], PAGE};
		ioctl(c->u.fd[which], UFFDIO_WAKE, &r);
	}
	c->faults++;
	c->fault_ns += base_now_ns() - t0;
	uint64_t pn = addr / PAGE;
	/* a page the run gave back or mapped afresh is not recorded: a prefetch of it would be
	 * punched away by that same munmap or mmap before it is touched */
	if (c->record && !zeroed && cold_program_page(c->vm, addr) &&
	    !(c->seen[pn / 8] & (1 << (pn % 8)))) {
		c->seen[pn / 8] |= (uint8_t)(1 << (pn % 8));
		if (c->ntrace == c->cap) {
			size_t cap = c->cap ? c->cap * 2 : 1024;
			uint64_t *t = realloc(c->trace, cap * sizeof(*t));
			if (!t)
				return -ENOMEM;
			c->trace = t;
			c->cap = cap;
		}
		c->trace[c->ntrace++] = addr;
	}
	return 0;
}

/* on the vCPU's thread, inside a syscall: pages given back read as zero from now on, whatever
 * the snapshot held there */
static void on_discarded(void *ctx, uint64_t start, uint64_t len)
{
	struct cold *c = ctx;
	/* called before the pages go: a prefetch still installing could put them back */
	cold_pf_wait_done(&c->pf);
	uint64_t top = vm_user_top(c->vm) / PAGE;
	for (uint64_t pg = start / PAGE; pg < (start + len) / PAGE && pg < top; pg++)
		__atomic_fetch_or(&c->zeroed[pg / 8], (uint8_t)(1 << (pg % 8)), __ATOMIC_RELEASE);
}

static void *fault_server(void *p)
{
	struct cold *c = p;
	struct pollfd pf[3];
	int n = c->u.n;
	for (int i = 0; i < n; i++)
		pf[i] = (struct pollfd){c->u.fd[i], POLLIN, 0};
	pf[n] = (struct pollfd){c->stop[0], POLLIN, 0};
	for (;;) {
		if (poll(pf, (nfds_t)n + 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pf[n].revents)
			break;
		for (int i = 0; i < n; i++) {
			struct uffd_msg msg;
			while (pf[i].revents &&
			       read(c->u.fd[i], &msg, sizeof(msg)) == sizeof(msg)) {
				if (msg.event == UFFD_EVENT_PAGEFAULT &&
				    serve(c, i, msg.arg.pagefault.address))
					c->failed = 1;
			}
		}
	}
	return NULL;
}

int cold_ws_exists(const char *dir)
{
	char path[4200];
	cold_ws_path(path, sizeof(path), dir);
	return access(path, R_OK) == 0;
}

/* seeds the trace with the working set's pages: the run's misses come after them */
static int seed(struct cold *c)
{
	const struct cold_ws *w = &c->pf.w;
	if (!(c->trace = malloc((w->npages ? w->npages : 1) * sizeof(uint64_t))))
		return -ENOMEM;
	c->cap = w->npages ? w->npages : 1;
	for (uint64_t i = 0; i < w->npages; i++) {
		uint64_t a = cold_ws_addr(w, i), pn = a / PAGE;
		c->seen[pn / 8] |= (uint8_t)(1 << (pn % 8));
		c->trace[c->ntrace++] = a;
	}
	c->nseed = c->ntrace;
	c->record = 2;
	return 0;
}

/* the concurrent prefetch: started, and waited for until its first chunk is in */
static int reap(struct cold *c, const char *dir, char *err, size_t errlen)
{
	uint64_t t = base_now_ns(); /* the first piece is read on this thread */
	if (cold_pf_start(c, dir, err, errlen))
		return -1;
	cold_pf_wait_first(&c->pf);
	c->first_ns = base_now_ns() - t;
	if (c->pf.fd < 0)
		return 0; /* nothing recorded yet: everything is served on demand */
	pthread_mutex_lock(&c->pf.mu);
	int in = c->pf.chunks_in > 0 || (c->pf.done && !c->pf.bad), bad = c->pf.bad;
	pthread_mutex_unlock(&c->pf.mu);
	if (!in && bad) {
		c->record = 1; /* damaged: dropped, and this start, lazy, records it again */
		return 0;
	}
	if (!c->record && seed(c)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

/* a failed step of the cold start: its name and error, unless a callee said more already */
static int step_failed(char *err, size_t errlen, const char *step, int e)
{
	if (!err[0])
		snprintf(err, errlen, "cold start: %s: %s", step, strerror(e));
	return -1;
}

int cold_start(struct cold *c, const struct snap *s, struct vm *vm, struct sys_state *st,
	       const char *dir, enum snap_restore_mode mode, int record, char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	c->s = s;
	c->vm = vm;
	c->record = record;
	c->stop[0] = c->stop[1] = c->memfd = c->pf.fd = -1;
	err[0] = 0;
	uint64_t t0 = base_now_ns();
	char path[4200];
	snprintf(path, sizeof(path), "%.4090s/mem", dir);
	int rc = 0; /* each step's own error (errno or -rc), never a stale errno */
	c->memfd = open(path, O_RDONLY | O_CLOEXEC);
	if (c->memfd < 0) {
		step_failed(err, errlen, path, errno);
		goto fail;
	}
	c->seen = calloc(vm_mem_size(vm) / PAGE / 8 + 1, 1);
	c->zeroed = calloc(vm_mem_size(vm) / PAGE / 8 + 1, 1);
	if (!c->seen || !c->zeroed) {
		step_failed(err, errlen, "page bitmaps", ENOMEM);
		goto fail;
	}
	if (pipe2(c->stop, O_CLOEXEC)) {
		step_failed(err, errlen, "pipe", errno);
		goto fail;
	}
	if (vm_get_uffds(vm, &c->u, err, errlen))
		goto fail;
	/* permissions first (they write no guest page), then every guest page faults to us */
	for (size_t i = 0; i < s->sys.nvma; i++)
		if ((rc = vm_protect(vm, s->sys.vmas[i].start,
				     s->sys.vmas[i].end - s->sys.vmas[i].start,
				     s->sys.vmas[i].prot))) {
			step_failed(err, errlen, "setting page permissions", -rc);
			goto fail;
		}
	uint64_t lo = 0, len = vm_user_top(vm); /* from page 0: the runtime's pages fault too */
	for (int i = 0; i < c->u.n; i++) {
		struct uffdio_register r = {.range = {lo + c->u.off[i], len},
					    .mode = UFFDIO_REGISTER_MODE_MISSING};
		int ok = ioctl(c->u.fd[i], UFFDIO_REGISTER, &r) == 0;
		if (!ok) { /* a stub that could not map page 0 starts at the runtime's area */
			r.range =
			    (struct uffdio_range){EMBER_RT_BASE + c->u.off[i], len - EMBER_RT_BASE};
			ok = ioctl(c->u.fd[i], UFFDIO_REGISTER, &r) == 0;
		}
		if (!ok) {
			snprintf(err, errlen, "userfaultfd register: %s", strerror(errno));
			goto fail;
		}
	}
	c->open_ns = base_now_ns() - t0;
	if (mode == SNAP_REAP && reap(c, dir, err, errlen))
		goto fail;
	c->server = (struct base_job){.run = fault_server, .arg = c};
	if ((rc = base_park_start(&c->server))) {
		step_failed(err, errlen, "starting the fault server", rc);
		goto fail;
	}
	c->running = 1;
	c->st = st;
	st->discarded = on_discarded;
	st->discarded_ctx = c;
	if ((rc = sys_restore(st, &s->sys))) {
		step_failed(err, errlen, "restoring the emulation state", -rc);
		goto fail;
	}
	if ((rc = snap_set_cpu(s, vm))) {
		step_failed(err, errlen, "setting the vCPU state", rc < 0 ? -rc : EIO);
		goto fail;
	}
	return 0;
fail:
	cold_finish(c, NULL, err + strlen(err), 0);
	return -1;
}

/* the prefetch's figures, once it is over */
static void pf_figures(struct cold *c)
{
	const struct cold_pf *p = &c->pf;
	c->prefetched = p->pages;
	c->prefetch_bytes = p->bad ? 0 : p->size;
	c->prefetch_us = p->wall_ns / 1000;
	c->read_ns = p->read_ns;
	c->install_ns = p->install_ns;
	c->buffered = p->buffered;
}

/* whether the recorded trace is to be written: a first recording, or a REAP start whose misses
 * passed the threshold */
static int to_write(struct cold *c)
{
	if (c->record == 1)
		return 1;
	size_t miss = c->ntrace - c->nseed;
	c->rerecorded =
	    c->record == 2 && miss >= SNAP_REREC_MIN && miss * SNAP_REREC_DIV >= c->nseed;
	return c->rerecorded;
}

/* [lo, hi) of the host's mapping no longer registered with fd: in halves where one call is
 * refused, as it is over a file's pages mapped there that userfaultfd cannot serve (a bundle's
 * window the run made, a .bnd file on disk), which would leave the rest registered and the
 * fill after the run waiting on a fault nobody serves */
static void unregister(int fd, uint64_t lo, uint64_t hi)
{
	struct uffdio_range r = {lo, hi - lo};
	if (!ioctl(fd, UFFDIO_UNREGISTER, &r) || errno != EINVAL || hi - lo <= EMBER_PAGE_SIZE)
		return;
	uint64_t mid = lo + ((hi - lo) / 2 & ~(EMBER_PAGE_SIZE - 1));
	unregister(fd, lo, mid);
	unregister(fd, mid, hi);
}

int cold_finish(struct cold *c, const char *dir, char *err, size_t errlen)
{
	int prefetched = c->pf.fd >= 0;
	cold_pf_stop(&c->pf); /* before the fault server: it may be waiting on the prefetch */
	if (prefetched)
		pf_figures(c);
	if (c->running) {
		if (write(c->stop[1], "x", 1) < 0)
			c->failed = 1;
		base_park_wait(&c->server);
		c->running = 0;
	}
	for (int i = 0; i < c->u.n; i++) {
		struct uffdio_range r = {c->u.off[i], vm_user_top(c->vm)};
		if (ioctl(c->u.fd[i], UFFDIO_UNREGISTER, &r) < 0) /* registered from RT_BASE */
			unregister(c->u.fd[i], EMBER_RT_BASE + c->u.off[i],
				   c->u.off[i] + vm_user_top(c->vm));
	}
	c->u.n = 0;
	if (c->st) {
		c->st->discarded = NULL;
		c->st->discarded_ctx = NULL;
		c->st = NULL;
	}
	int rc = 0;
	if (dir && c->record && !c->failed && to_write(c))
		/* KVM's starts read a small snapshot whole: the file brings all of it */
		rc = cold_ws_write(dir, c->s, c->memfd, c->trace, c->ntrace,
				   vm_backend_of(c->vm) == VM_BACKEND_KVM, err, errlen);
	if (c->memfd >= 0)
		close(c->memfd);
	if (c->stop[0] >= 0)
		close(c->stop[0]), close(c->stop[1]);
	free(c->trace);
	free(c->seen);
	free(c->zeroed);
	c->trace = NULL;
	c->seen = c->zeroed = NULL;
	c->memfd = c->stop[0] = c->stop[1] = -1;
	return rc || c->failed ? -1 : 0;
}

void cold_result(const struct cold *c, struct ember_result *res)
{
	res->faults = c->faults;
	res->prefetched_pages = c->prefetched;
	res->prefetch_bytes = c->prefetch_bytes;
	res->prefetch_us = c->prefetch_us;
	res->prefetch_buffered = c->buffered;
	res->rerecorded = c->rerecorded;
	res->open_us = c->open_ns / 1000;
	res->first_chunk_us = c->first_ns / 1000;
	res->ws_read_us = c->read_ns / 1000;
	res->install_us = c->install_ns / 1000;
	res->fault_us = c->fault_ns / 1000;
	res->fault_waits = c->waits;
	res->fault_wait_us = c->wait_ns / 1000;
}
