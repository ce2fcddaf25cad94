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
#include "snap/snap_fmt.h"
#include "vm/vm.h"

#define PAGE EMBER_PAGE_SIZE

static const char magic[8] = "EMBERSNP";

uint64_t snap_page_hash(const void *page)
{
	return XXH3_64bits(page, PAGE);
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

/* the state file: the header, then the body (snap_fmt.c); 0 or -errno */
static int write_state(const struct snap *s, const struct snap_meta *m, uint64_t *hashes,
		       const char *tmp)
{
	struct snap c = *s; /* its page hashes: those just computed */
	c.hashes = hashes;
	struct snap_hdr h = {.version = SNAP_FILE_VERSION,
			     .hdr_size = SNAP_HDR_LEN,
			     .image_digest = m->image_digest,
			     .mem_size = m->mem_size,
			     .config_hash = m->config_hash};
	memcpy(h.magic, magic, sizeof(magic));
	snprintf(h.ember, sizeof(h.ember), "%s", EMBER_VERSION);
	snap_fmt_counts(&c, &h);
	if (snap_fmt_body_len(&c, &h.body_len) || h.body_len > SIZE_MAX - SNAP_HDR_LEN)
		return -EFBIG;
	uint8_t *buf = malloc(SNAP_HDR_LEN + h.body_len);
	if (!buf)
		return -ENOMEM;
	snap_fmt_put_body(buf + SNAP_HDR_LEN, &c);
	snap_fmt_put_hdr(buf, &h); /* body_hash 0 */
	h.body_hash = XXH64(buf, SNAP_HDR_LEN + h.body_len, 0);
	snap_fmt_put_hdr(buf, &h);
	int fd = -1, rc = create(tmp, SNAP_STATE, 0, &fd);
	if (!rc)
		rc = base_pwrite_all(fd, buf, SNAP_HDR_LEN + h.body_len, 0);
	if (!rc && fsync(fd) < 0)
		rc = -errno;
	if (fd >= 0)
		close(fd);
	free(buf);
	return rc;
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

	rc = write_state(s, m, hashes, tmp);
	free(hashes);
	return rc ? rc : base_fsync_path(tmp);
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
	return !strcmp(name, SNAP_WS ".tmp") || base_tmp_stale(name);
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

/* the pages and mappings a restore relies on: in the machine, ascending, not empty */
static int check_body(const struct snap *s, uint64_t mem_size)
{
	const struct sys_saved *y = &s->sys;
	for (size_t i = 0; i < s->npages; i++)
		if (s->pages[i] % PAGE || s->pages[i] >= mem_size ||
		    (i && s->pages[i] <= s->pages[i - 1]))
			return -1;
	for (size_t i = 0; i < y->nvma; i++)
		if (y->vmas[i].start >= y->vmas[i].end || y->vmas[i].end > mem_size)
			return -1;
	return 0;
}

/* why buf (the state file) is refused, or NULL; s filled when it is not */
static const char *parse_state(struct snap *s, const struct snap_meta *m, const uint8_t *buf,
			       size_t len)
{
	struct snap_hdr h;
	if (len < SNAP_HDR_LEN)
		return "truncated state file";
	snap_fmt_get_hdr(buf, &h);
	if (memcmp(h.magic, magic, sizeof(magic)))
		return "not an Ember snapshot";
	if (h.version != SNAP_FILE_VERSION || h.hdr_size != SNAP_HDR_LEN)
		return "made by an incompatible Ember version";
	if (h.body_len != len - SNAP_HDR_LEN)
		return "truncated state file";
	uint8_t zero[SNAP_HDR_LEN];
	uint64_t want = h.body_hash;
	h.body_hash = 0;
	snap_fmt_put_hdr(zero, &h);
	XXH64_state_t *x = XXH64_createState();
	if (!x)
		return "out of memory";
	XXH64_reset(x, 0);
	XXH64_update(x, zero, SNAP_HDR_LEN);
	XXH64_update(x, buf + SNAP_HDR_LEN, h.body_len);
	int bad = XXH64_digest(x) != want;
	XXH64_freeState(x);
	if (bad)
		return "bad checksum in the state file";
	if (h.image_digest != m->image_digest)
		return "made from a different image";
	if (h.mem_size != m->mem_size || h.config_hash != m->config_hash)
		return "made with a different configuration";
	if (snap_fmt_set_counts(s, &h) || snap_fmt_get_body(s, buf + SNAP_HDR_LEN, h.body_len) ||
	    check_body(s, h.mem_size))
		return "malformed state file";
	return NULL;
}

int snap_load(struct snap *s, const struct snap_meta *m, const char *dir, int pages, char *err,
	      size_t errlen)
{
	memset(s, 0, sizeof(*s));
	char path[4200];
	snprintf(path, sizeof(path), "%.4096s/" SNAP_STATE, dir);
	size_t len = 0;
	uint8_t *buf = NULL;
	int e = -base_read_file(path, 1ULL << 32, &buf, &len);
	if (e == ENOENT)
		return snprintf(err, errlen, "no snapshot at %s", dir), SNAP_MISSING;
	if (e)
		return snprintf(err, errlen, "snapshot %s refused: cannot read its state file: %s",
				dir, strerror(e)),
		       SNAP_REFUSED;
	int rc = snap_load_from(s, m, dir, buf, len, err, errlen);
	free(buf);
	if (!rc && pages && snap_load_pages(s, dir, err, errlen))
		return snap_free(s), SNAP_REFUSED;
	return rc;
}

int snap_load_from(struct snap *s, const struct snap_meta *m, const char *dir, const uint8_t *buf,
		   size_t len, char *err, size_t errlen)
{
	memset(s, 0, sizeof(*s));
	const char *why = parse_state(s, m, buf, len);
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

int snap_read_ahead(const char *dir)
{
	int found = 0;
	/* the working set's pages come by O_DIRECT (cold/cold_prefetch.c): its header page only */
	static const struct {
		const char *name;
		off_t len; /* 0: the whole file */
	} files[] = {{SNAP_STATE, 0}, {SNAP_WS, 4096}};
	char path[4200];
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%.4096s/%s", dir, files[i].name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue; /* none yet: the load says so */
		posix_fadvise(fd, 0, files[i].len, POSIX_FADV_WILLNEED);
		close(fd);
		found |= i == 0;
	}
	return found;
}
