/* The on-disk snapshot: `mem` holds each page at its guest address (holes elsewhere), `state`
 * the registers, emulation state and checksums. Both go to a temporary folder that replaces the
 * old one in one rename, so a crash mid-write leaves the previous snapshot whole. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "ember/ember.h"
#include "snap/snap_file.h"
#include "vm/vm.h"

#define PAGE EMBER_PAGE_SIZE

struct snap_hdr {
	char magic[8];
	uint32_t version, hdr_size;
	char ember[16];
	uint64_t image_digest, mem_size, config_hash;
	uint64_t npages, nvma, out_len, log_len, fpu_len;
	uint64_t body_len, body_hash; /* the hash covers this header (with body_hash 0) and body */
};

static const char magic[8] = "EMBERSNP";

uint64_t snap_page_hash(const void *page)
{
	return XXH3_64bits(page, PAGE);
}

/* the body: fixed fields, then arrays, in this order */
struct body {
	uint8_t *p;
	size_t len, cap;
	int bad;
};

static void put(struct body *b, const void *src, size_t n)
{
	if (b->bad || n == 0)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 65536;
		while (cap < b->len + n)
			cap *= 2;
		uint8_t *p = realloc(b->p, cap);
		if (!p) {
			b->bad = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, src, n);
	b->len += n;
}

static int get(const uint8_t **p, const uint8_t *end, void *dst, size_t n)
{
	if ((size_t)(end - *p) < n)
		return -1;
	memcpy(dst, *p, n);
	*p += n;
	return 0;
}

/* the creating open, then the ftruncate (mem) or nothing: 0 or -errno */
static int create(const char *tmp, const char *name, uint64_t size, int *fd)
{
	char path[4200];
	snprintf(path, sizeof(path), "%.4096s/%s", tmp, name);
	*fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (*fd < 0 || (size && ftruncate(*fd, (off_t)size) < 0))
		return -errno;
	return 0;
}

/* 0 or -errno */
static int write_files(const struct snap *s, const struct snap_meta *m, const char *tmp)
{
	int fd = -1, rc = create(tmp, SNAP_MEM, m->mem_size, &fd);
	uint64_t *hashes = NULL;
	if (rc)
		goto fail;
	hashes = calloc(s->npages ? s->npages : 1, sizeof(*hashes));
	if (!hashes) {
		rc = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < s->npages && !rc; i++) {
		hashes[i] = snap_page_hash(s->data + i * PAGE);
		rc = base_pwrite_all(fd, s->data + i * PAGE, PAGE, (off_t)s->pages[i]);
	}
	if (rc || (fsync(fd) < 0 && (rc = -errno)))
		goto fail;
	close(fd);
	fd = -1;

	struct snap_hdr h = {.version = SNAP_FILE_VERSION,
			     .hdr_size = sizeof(h),
			     .image_digest = m->image_digest,
			     .mem_size = m->mem_size,
			     .config_hash = m->config_hash,
			     .npages = s->npages,
			     .nvma = s->sys.nvma,
			     .out_len = s->sys.out.len,
			     .log_len = s->sys.log.len,
			     .fpu_len = s->fpu_len};
	memcpy(h.magic, magic, sizeof(magic));
	snprintf(h.ember, sizeof(h.ember), "%s", EMBER_VERSION);
	struct body b = {0};
	const struct sys_saved *y = &s->sys;
	put(&b, &s->proc, sizeof(s->proc));
	put(&b, &s->regs, sizeof(s->regs));
	put(&b, &s->fs_base, 8);
	put(&b, s->fpu, s->fpu_len);
	put(&b, &y->brk_cur, 8);
	put(&b, &y->code_pos, sizeof(y->code_pos));
	put(&b, &y->open_fds, sizeof(y->open_fds));
	put(&b, &y->cwd, sizeof(y->cwd));
	put(&b, y->files, sizeof(y->files));
	put(&b, &y->tid_addr, 8);
	put(&b, &y->sigmask, 8);
	put(&b, y->sig, sizeof(y->sig));
	put(&b, y->altstack, sizeof(y->altstack));
	put(&b, &y->pending, sizeof(y->pending));
	put(&b, y->vmas, y->nvma * sizeof(*y->vmas));
	put(&b, s->pages, s->npages * 8);
	put(&b, hashes, s->npages * 8);
	put(&b, y->out.data, y->out.len);
	put(&b, y->log.data, y->log.len);
	free(hashes);
	hashes = NULL;
	rc = -ENOMEM;
	if (b.bad)
		goto fail_body;
	h.body_len = b.len;
	XXH64_state_t *x = XXH64_createState();
	XXH64_reset(x, 0);
	XXH64_update(x, &h, sizeof(h));
	XXH64_update(x, b.p, b.len);
	h.body_hash = XXH64_digest(x);
	XXH64_freeState(x);
	if ((rc = create(tmp, SNAP_STATE, 0, &fd)) ||
	    (rc = base_pwrite_all(fd, &h, sizeof(h), 0)) ||
	    (rc = base_pwrite_all(fd, b.p, b.len, sizeof(h))) || (fsync(fd) < 0 && (rc = -errno)))
		goto fail_body;
	close(fd);
	free(b.p);
	return base_fsync_path(tmp);
fail_body:
	free(b.p);
fail:
	free(hashes);
	if (fd >= 0)
		close(fd);
	return rc;
}

/* a snapshot folder and the files in it (no deeper folders) */
static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlinkat(dirfd(d), e->d_name, 0);
	if (d)
		closedir(d);
	rmdir(dir);
}

/* a temporary name (NAME.tmp-PID-XXXXXX, or NAME.tmp-PID and ws.tmp as older versions wrote them)
 * of a process that is gone, or of an earlier one with this process's PID */
static int stale(const char *name)
{
	const char *t = strstr(name, SNAP_TMP);
	if (!strcmp(name, SNAP_WS ".tmp"))
		return 1;
	if (!t)
		return 0;
	char *end;
	long pid = strtol(t + strlen(SNAP_TMP), &end, 10);
	if (pid <= 0 || (*end != '-' && *end != 0))
		return 0;
	return pid == getpid() || (kill((pid_t)pid, 0) < 0 && errno == ESRCH);
}

int snap_remove(const char *dir)
{
	char tmp[4096];
	if (strlen(dir) > 4000)
		return -1;
	/* an empty folder of a fresh name, which the snapshot's folder then replaces */
	snprintf(tmp, sizeof(tmp), "%s" SNAP_TMP "%d-XXXXXX", dir, (int)getpid());
	if (!mkdtemp(tmp))
		return -1;
	if (rename(dir, tmp) < 0) {
		rmdir(tmp);
		return -1;
	}
	remove_dir(tmp);
	return 0;
}

int snap_sweep(const char *root)
{
	DIR *d = opendir(root);
	struct dirent *e;
	char path[4200];
	int n = 0;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%.4000s/%.190s", root, e->d_name);
		if (stale(e->d_name)) {
			remove_dir(path);
			n++;
			continue;
		}
		DIR *sd = opendir(path); /* a snapshot: a working set that was being written */
		struct dirent *f;
		while (sd && (f = readdir(sd)))
			if (!strncmp(f->d_name, SNAP_WS, strlen(SNAP_WS)) && stale(f->d_name))
				n += unlinkat(dirfd(sd), f->d_name, 0) == 0;
		if (sd)
			closedir(sd);
	}
	if (d)
		closedir(d);
	return n;
}

int snap_save(const struct snap *s, const struct snap_meta *m, const char *dir, char *err,
	      size_t errlen)
{
	char tmp[4096], parent[4096];
	if (strlen(dir) > 4000)
		return snprintf(err, errlen, "snapshot path too long"), -1;
	/* a name of its own: two loads of one configuration may save at once, in one process;
	 * what a crash leaves is swept at the next start (snap_sweep) */
	snprintf(tmp, sizeof(tmp), "%.4000s" SNAP_TMP "%d-XXXXXX", dir, (int)getpid());
	snprintf(parent, sizeof(parent), "%.4000s", dir);
	char *slash = strrchr(parent, '/');
	if (slash)
		*slash = 0;
	else
		snprintf(parent, sizeof(parent), ".");
	if (!s->data)
		return snprintf(err, errlen, "no snapshot pages in memory to write"), EMBER_ERR;
	int rc = !mkdtemp(tmp) ? -errno : write_files(s, m, tmp);
	if (rc) { /* whatever the disk refused, the state folder is at fault: EMBER_ERR_IO */
		snprintf(err, errlen, "writing the snapshot to %s: %s", tmp, strerror(-rc));
		remove_dir(tmp);
		return vm_errno_kind(-rc, EMBER_ERR_IO);
	}
	/* one atomic step: swap the new folder in, then drop the old one */
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_EXCHANGE) == 0)
		remove_dir(tmp);
	else if (rename(tmp, dir) < 0) {
		rc = errno;
		snprintf(err, errlen, "installing the snapshot at %s: %s", dir, strerror(rc));
		remove_dir(tmp);
		return vm_errno_kind(rc, EMBER_ERR_IO);
	}
	base_fsync_path(parent);
	return 0;
}

/* the whole file, or NULL with errno saying why */
static uint8_t *read_file(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), e = 0;
	struct stat sb;
	uint8_t *buf = NULL;
	size_t got = 0;
	if (fd < 0 || fstat(fd, &sb) < 0)
		e = errno;
	else if (sb.st_size > (1LL << 32))
		e = EFBIG;
	else if (!(buf = malloc((size_t)sb.st_size + 1)))
		e = ENOMEM;
	while (!e && got < (size_t)sb.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)sb.st_size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			e = r < 0 ? errno : EIO; /* an error, or a file that shrank */
		else
			got += (size_t)r;
	}
	if (fd >= 0)
		close(fd);
	if (e) {
		free(buf);
		errno = e;
		return NULL;
	}
	*len = got;
	return buf;
}

static int parse_body(struct snap *s, const struct snap_hdr *h, const uint8_t *p,
		      const uint8_t *end)
{
	struct sys_saved *y = &s->sys;
	/* every array is in the body: nothing larger than the body is allocated */
	uint64_t room = h->body_len;
	if (h->fpu_len > VM_FPU_MAX || h->nvma > room / sizeof(*y->vmas) || h->npages > room / 16 ||
	    h->out_len > room || h->log_len > room)
		return -1;
	s->fpu_len = h->fpu_len;
	y->nvma = h->nvma;
	s->npages = h->npages;
	y->vmas = malloc((y->nvma ? y->nvma : 1) * sizeof(*y->vmas));
	s->pages = malloc((s->npages ? s->npages : 1) * 8);
	s->hashes = malloc((s->npages ? s->npages : 1) * 8);
	y->out.data = malloc(h->out_len + 1);
	y->log.data = malloc(h->log_len + 1);
	if (!y->vmas || !s->pages || !s->hashes || !y->out.data || !y->log.data)
		return -1;
	y->out.len = y->out.cap = h->out_len;
	y->log.len = y->log.cap = h->log_len;
	if (get(&p, end, &s->proc, sizeof(s->proc)) || get(&p, end, &s->regs, sizeof(s->regs)) ||
	    get(&p, end, &s->fs_base, 8) || get(&p, end, s->fpu, s->fpu_len) ||
	    get(&p, end, &y->brk_cur, 8) || get(&p, end, &y->code_pos, sizeof(y->code_pos)) ||
	    get(&p, end, &y->open_fds, sizeof(y->open_fds)) ||
	    get(&p, end, &y->cwd, sizeof(y->cwd)) || get(&p, end, y->files, sizeof(y->files)) ||
	    get(&p, end, &y->tid_addr, 8) || get(&p, end, &y->sigmask, 8) ||
	    get(&p, end, y->sig, sizeof(y->sig)) ||
	    get(&p, end, y->altstack, sizeof(y->altstack)) ||
	    get(&p, end, &y->pending, sizeof(y->pending)) ||
	    get(&p, end, y->vmas, y->nvma * sizeof(*y->vmas)) ||
	    get(&p, end, s->pages, s->npages * 8) || get(&p, end, s->hashes, s->npages * 8) ||
	    get(&p, end, y->out.data, h->out_len) || get(&p, end, y->log.data, h->log_len) ||
	    p != end)
		return -1;
	for (size_t i = 0; i < s->npages; i++)
		if (s->pages[i] % PAGE || s->pages[i] >= h->mem_size ||
		    (i && s->pages[i] <= s->pages[i - 1]))
			return -1;
	for (size_t i = 0; i < y->nvma; i++)
		if (y->vmas[i].start >= y->vmas[i].end || y->vmas[i].end > h->mem_size)
			return -1;
	return 0;
}

int snap_load(struct snap *s, const struct snap_meta *m, const char *dir, int pages, char *err,
	      size_t errlen)
{
	memset(s, 0, sizeof(*s));
	char path[4200];
	snprintf(path, sizeof(path), "%.4096s/" SNAP_STATE, dir);
	size_t len = 0;
	uint8_t *buf = read_file(path, &len);
	if (!buf && errno == ENOENT)
		return snprintf(err, errlen, "no snapshot at %s", dir), SNAP_MISSING;
	if (!buf)
		return snprintf(err, errlen, "snapshot %s refused: cannot read its state file: %s",
				dir, strerror(errno)),
		       SNAP_REFUSED;
	struct snap_hdr h;
	const char *why = NULL;
	if (len < sizeof(h))
		why = "truncated state file";
	else
		memcpy(&h, buf, sizeof(h));
	if (!why && memcmp(h.magic, magic, sizeof(magic)))
		why = "not an Ember snapshot";
	else if (!why && (h.version != SNAP_FILE_VERSION || h.hdr_size != sizeof(h)))
		why = "made by an incompatible Ember version";
	else if (!why && h.body_len != len - sizeof(h))
		why = "truncated state file";
	if (!why) {
		uint64_t want = h.body_hash;
		h.body_hash = 0;
		XXH64_state_t *x = XXH64_createState();
		XXH64_reset(x, 0);
		XXH64_update(x, &h, sizeof(h));
		XXH64_update(x, buf + sizeof(h), h.body_len);
		if (XXH64_digest(x) != want)
			why = "bad checksum in the state file";
		XXH64_freeState(x);
	}
	if (!why && h.image_digest != m->image_digest)
		why = "made from a different image";
	else if (!why && (h.mem_size != m->mem_size || h.config_hash != m->config_hash))
		why = "made with a different configuration";
	else if (!why && parse_body(s, &h, buf + sizeof(h), buf + len))
		why = "malformed state file";
	free(buf);
	if (!why && pages && snap_load_pages(s, dir, err, errlen))
		return snap_free(s), SNAP_REFUSED;
	if (why) {
		snap_free(s);
		return snprintf(err, errlen, "snapshot %s refused: %s", dir, why), SNAP_REFUSED;
	}
	return 0;
}

int snap_load_pages(struct snap *s, const char *dir, char *err, size_t errlen)
{
	char path[4200];
	snprintf(path, sizeof(path), "%.4096s/" SNAP_MEM, dir);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	snap_data_free(s);
	s->data = malloc((s->npages ? s->npages : 1) * PAGE);
	if (fd < 0 || !s->data) {
		if (fd >= 0)
			close(fd);
		return snprintf(err, errlen, "snapshot %s refused: no memory file", dir), -1;
	}
	for (size_t i = 0; i < s->npages; i++) {
		uint8_t *p = s->data + i * PAGE;
		if (pread(fd, p, PAGE, (off_t)s->pages[i]) != (ssize_t)PAGE ||
		    snap_page_hash(p) != s->hashes[i]) {
			close(fd);
			return snprintf(err, errlen, "snapshot %s refused: page %#llx is damaged",
					dir, (unsigned long long)s->pages[i]),
			       -1;
		}
	}
	close(fd);
	int rc = snap_seal(s);
	if (rc)
		return snprintf(err, errlen, "snapshot %s: keeping its memory: %s", dir,
				strerror(-rc)),
		       -1;
	return 0;
}

int snap_drop_cache(const char *dir)
{
	static const char *const names[] = {SNAP_MEM, SNAP_STATE, SNAP_WS};
	char path[4200];
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%.4096s/%s", dir, names[i]);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		fdatasync(fd);
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		close(fd);
	}
	return 0;
}
