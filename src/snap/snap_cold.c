/* The fault server of cold starts, the REAP prefetch and the working-set file it reads. */
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

#include "snap/snap_cold.h"
#include "snap/snap_file.h"

#define PAGE EMBER_PAGE_SIZE

/* The working-set file: this header, the trace (page addresses in fault order), padding to a
 * page, then the pages themselves, contiguous: one large read brings all of it in. */
struct ws_hdr {
	char magic[8];
	uint64_t npages;
	uint64_t trace_hash, data_hash;
};

static const char ws_magic[8] = "EMBERWS1";

static uint64_t ws_data_off(uint64_t npages)
{
	return (sizeof(struct ws_hdr) + npages * 8 + PAGE - 1) & ~(PAGE - 1);
}

static int install(struct snap_cold *c, uint64_t addr, const void *src, uint64_t len)
{
	struct uffdio_copy cp = {
	    .dst = addr + c->u.off[0], .src = (uint64_t)(uintptr_t)src, .len = len, .mode = 0};
	if (ioctl(c->u.fd[0], UFFDIO_COPY, &cp) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* a page the program may have: page 0 (the sled), the runtime's area and its own memory, never
 * the host's structures in between (a fault there, on a CPL0 stack, is served, not recorded) */
static int program_page(const struct vm *vm, uint64_t addr)
{
	return addr % PAGE == 0 && (addr == 0 || (addr >= EMBER_RT_BASE && addr < vm_user_top(vm)));
}

/* one faulting page: its snapshot content from the memory file (checked), or zeros */
static int serve(struct snap_cold *c, int which, uint64_t fault)
{
	uint64_t addr = (fault - c->u.off[which]) & ~(PAGE - 1);
	static __thread uint8_t page[4096] __attribute__((aligned(4096)));
	const struct snap *s = c->s;
	size_t i = snap_page_index(s, addr);
	uint64_t pg = addr / PAGE;
	int zeroed = __atomic_load_n(&c->zeroed[pg / 8], __ATOMIC_ACQUIRE) & (1 << (pg % 8));
	if (!zeroed && i < s->npages && s->pages[i] == addr) {
		if (pread(c->memfd, page, PAGE, (off_t)addr) != (ssize_t)PAGE ||
		    snap_page_hash(page) != s->hashes[i]) {
			/* a damaged memory file: leaving the fault unserved would hang the guest
			 * until its timeout, so it gets int3 bytes (a trap as code, a non-canonical
			 * pointer as data) and the caller drops the run */
			if (!c->damaged)
				c->damaged = addr + 1;
			c->failed = 1;
			memset(page, 0xcc, PAGE);
		}
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
	uint64_t pn = addr / PAGE;
	/* a page the run gave back or mapped afresh is not recorded: a prefetch of it would be
	 * punched away by that same munmap or mmap before it is touched */
	if (c->record && !zeroed && program_page(c->vm, addr) &&
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
	struct snap_cold *c = ctx;
	uint64_t top = vm_user_top(c->vm) / PAGE;
	for (uint64_t pg = start / PAGE; pg < (start + len) / PAGE && pg < top; pg++)
		__atomic_fetch_or(&c->zeroed[pg / 8], (uint8_t)(1 << (pg % 8)), __ATOMIC_RELEASE);
}

static void *fault_server(void *p)
{
	struct snap_cold *c = p;
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

static int ws_path(char *out, size_t len, const char *dir)
{
	return snprintf(out, len, "%.4090s/ws", dir) >= (int)len ? -1 : 0;
}

int snap_ws_exists(const char *dir)
{
	char path[4200];
	ws_path(path, sizeof(path), dir);
	return access(path, R_OK) == 0;
}

/* REAP's prefetch: the whole file in one O_DIRECT read, installed in contiguous runs */
static int prefetch(struct snap_cold *c, const char *dir, char *err, size_t errlen)
{
	char path[4200];
	ws_path(path, sizeof(path), dir);
	int fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0 && errno == EINVAL) {
		/* a file system without O_DIRECT (tmpfs on older kernels): the same one read,
		 * through the page cache, and the caller is told */
		fd = open(path, O_RDONLY | O_CLOEXEC);
		c->buffered = fd >= 0;
	}
	if (fd < 0 && errno == ENOENT)
		return 0; /* nothing recorded yet: everything is served on demand */
	if (fd < 0) {
		snprintf(err, errlen, "working set %s: %s", path, strerror(errno));
		return -1;
	}
	off_t size = lseek(fd, 0, SEEK_END);
	size_t len = ((size_t)size + PAGE - 1) & ~(PAGE - 1);
	void *buf = NULL;
	int rc = -1;
	uint64_t t0 = vm_now_ns();
	int e = size < 0 ? errno : posix_memalign(&buf, PAGE, len ? len : PAGE);
	ssize_t got = e ? -1 : pread(fd, buf, len, 0);
	if (!e && got < 0)
		e = errno;
	if (e || got != size) {
		snprintf(err, errlen, "working set %s: cannot read it: %s", path,
			 e ? strerror(e) : "short read");
		goto out;
	}
	struct ws_hdr *h = buf;
	const uint64_t *trace = (const uint64_t *)(h + 1);
	if (size < (off_t)sizeof(struct ws_hdr) || memcmp(h->magic, ws_magic, 8) ||
	    h->npages > (uint64_t)size / PAGE ||
	    ws_data_off(h->npages) + h->npages * PAGE != (uint64_t)size ||
	    XXH3_64bits(trace, h->npages * 8) != h->trace_hash ||
	    XXH3_64bits((uint8_t *)buf + ws_data_off(h->npages), h->npages * PAGE) !=
		h->data_hash) {
		/* damaged: dropped, and this start, lazy, records it again */
		unlink(path);
		c->record = 1;
		rc = 0;
		goto out;
	}
	c->prefetch_bytes = (uint64_t)size;
	const uint8_t *data = (const uint8_t *)buf + ws_data_off(h->npages);
	/* the trace is in fault order; install runs of consecutive addresses with one call each */
	for (uint64_t i = 0; i < h->npages;) {
		uint64_t j = i;
		while (j < h->npages && program_page(c->vm, trace[j]) &&
		       (j == i || trace[j] == trace[j - 1] + PAGE))
			j++;
		if (j == i || install(c, trace[i], data + i * PAGE, (j - i) * PAGE)) {
			snprintf(err, errlen, "working set %s: cannot install page %#llx", path,
				 (unsigned long long)trace[i]);
			goto out;
		}
		c->prefetched += j - i;
		i = j;
	}
	c->prefetch_us = (vm_now_ns() - t0) / 1000;
	rc = 0;
out:
	free(buf);
	close(fd);
	return rc;
}

/* a failed step of the cold start: its name and error, unless a callee said more already */
static int step_failed(char *err, size_t errlen, const char *step, int e)
{
	if (!err[0])
		snprintf(err, errlen, "cold start: %s: %s", step, strerror(e));
	return -1;
}

int snap_cold_start(struct snap_cold *c, const struct snap *s, struct vm *vm, struct sys_state *st,
		    const char *dir, enum snap_restore_mode mode, int record, char *err,
		    size_t errlen)
{
	memset(c, 0, sizeof(*c));
	c->s = s;
	c->vm = vm;
	c->record = record;
	c->stop[0] = c->stop[1] = c->memfd = -1;
	err[0] = 0;
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
	if (mode == SNAP_REAP && prefetch(c, dir, err, errlen))
		goto fail;
	if ((rc = pthread_create(&c->th, NULL, fault_server, c))) {
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
	snap_cold_finish(c, NULL, err + strlen(err), 0);
	return -1;
}

static int write_ws(struct snap_cold *c, const char *dir, char *err, size_t errlen)
{
	char path[4200], tmp[4300];
	ws_path(path, sizeof(path), dir);
	/* a name of its own: two functions of one configuration may record at once */
	snprintf(tmp, sizeof(tmp), "%s" SNAP_TMP "%d-XXXXXX", path, (int)getpid());
	uint64_t n = c->ntrace, off = ws_data_off(n);
	uint8_t *buf = calloc(1, off + n * PAGE);
	if (!buf)
		return snprintf(err, errlen, "out of memory"), -1;
	struct ws_hdr *h = (struct ws_hdr *)buf;
	memcpy(h->magic, ws_magic, 8);
	h->npages = n;
	memcpy(h + 1, c->trace, n * 8);
	for (uint64_t i = 0; i < n; i++) {
		/* the snapshot's bytes for the page (the run may have written it since) */
		size_t k = snap_page_index(c->s, c->trace[i]);
		if (k < c->s->npages && c->s->pages[k] == c->trace[i] &&
		    pread(c->memfd, buf + off + i * PAGE, PAGE, (off_t)c->trace[i]) !=
			(ssize_t)PAGE) {
			free(buf);
			return snprintf(err, errlen, "reading the memory file: %s",
					strerror(errno)),
			       -1;
		}
	}
	h->trace_hash = XXH3_64bits(h + 1, n * 8);
	h->data_hash = XXH3_64bits(buf + off, n * PAGE);
	int fd = mkostemp(tmp, O_CLOEXEC);
	int e = fd < 0 ? errno : 0;
	size_t len = off + n * PAGE, done = 0;
	while (!e && done < len) {
		ssize_t w = write(fd, buf + done, len - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) /* no progress without an error: the disk's */
			e = w < 0 ? errno : EIO;
		else
			done += (size_t)w;
	}
	if (!e && (fsync(fd) || rename(tmp, path)))
		e = errno;
	if (fd >= 0)
		close(fd);
	free(buf);
	if (!e) {
		snap_fsync(dir); /* the new name survives a crash of the machine too */
		return 0;
	}
	unlink(tmp);
	return snprintf(err, errlen, "writing %s: %s", path, strerror(e)), -1;
}

int snap_cold_finish(struct snap_cold *c, const char *dir, char *err, size_t errlen)
{
	if (c->running) {
		if (write(c->stop[1], "x", 1) < 0)
			c->failed = 1;
		pthread_join(c->th, NULL);
		c->running = 0;
	}
	for (int i = 0; i < c->u.n; i++) {
		struct uffdio_range r = {c->u.off[i], vm_user_top(c->vm)};
		if (ioctl(c->u.fd[i], UFFDIO_UNREGISTER, &r) < 0) { /* registered from RT_BASE */
			r = (struct uffdio_range){EMBER_RT_BASE + c->u.off[i],
						  vm_user_top(c->vm) - EMBER_RT_BASE};
			ioctl(c->u.fd[i], UFFDIO_UNREGISTER, &r);
		}
	}
	c->u.n = 0;
	if (c->st) {
		c->st->discarded = NULL;
		c->st->discarded_ctx = NULL;
		c->st = NULL;
	}
	int rc = 0;
	if (dir && c->record && !c->failed)
		rc = write_ws(c, dir, err, errlen);
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
