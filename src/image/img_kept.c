/* Images opened for a load: shared by the process while one holds them, their syscall sites kept
 * on disk (img_table.c), so that a load of an unchanged image neither hashes nor scans it. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "base/base.h"
#include "ember/ember.h"
#include "image/img.h"
#include "vm/vm.h"

#define IMG_MAX_FILE (256ULL << 20)

/* the images of files open in this process, by their identity */
static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static struct img **shared;
static size_t nshared;

int img_unshare(struct img *img)
{
	if (!img->key)
		return 0;
	pthread_mutex_lock(&shared_lock);
	int held = --img->refs > 0;
	for (size_t i = 0; !held && i < nshared; i++)
		if (shared[i] == img)
			shared[i] = shared[--nshared];
	pthread_mutex_unlock(&shared_lock);
	return held;
}

/* the image of key held once more, or NULL; with mine, mine is shared unless one is already */
static struct img *share(uint64_t key, struct img *mine)
{
	struct img *got = NULL;
	pthread_mutex_lock(&shared_lock);
	for (size_t i = 0; !got && i < nshared; i++)
		if (shared[i]->key == key)
			got = shared[i];
	if (got) {
		got->refs++;
	} else if (mine) {
		struct img **v = realloc(shared, (nshared + 1) * sizeof(*shared));
		if (v) { /* out of memory: mine stays its holder's alone */
			shared = v;
			shared[nshared++] = mine;
			mine->key = key;
			mine->refs = 1;
		}
		got = mine;
	}
	pthread_mutex_unlock(&shared_lock);
	if (mine && got != mine)
		img_free(mine);
	return got;
}

/* img's ELF checked and its sites: from the table (hit), else found, hashed, and the table
 * written to dir; 0 or a kind */
static int check(struct img *img, const char *dir, uint64_t key, const struct img_sites *table,
		 uint64_t digest, struct img_how *how, char *err, size_t errlen)
{
	uint64_t t0 = base_now_ns();
	if (table) /* img_free frees it from now on */
		img->sites = *table;
	if (img_elf_parse(img->buf, img->len, &img->elf, err, errlen))
		return EMBER_ERR_IMAGE;
	if (table) {
		img->digest = digest;
		how->from = IMG_TABLE;
		how->sites_us += base_us_since(t0);
		return 0;
	}
	base_want(img->buf, img->len); /* hashed and scanned whole: from a kept bundle's pages */
	img->digest = XXH64(img->buf, img->len, 0);
	how->read_us += base_us_since(t0);
	t0 = base_now_ns();
	int src = img_find_sites(img->buf, img->len, &img->elf, &img->sites, err, errlen);
	if (src)
		return src == -1 ? EMBER_ERR_IMAGE : src == -ENOMEM ? EMBER_ERR_NOMEM : EMBER_ERR;
	if (dir) /* a folder that cannot be written: scanned again next time */
		img_table_save(dir, key, img->len, &img->sites, img->digest);
	how->from = IMG_SCANNED;
	how->sites_us += base_us_since(t0);
	return 0;
}

/* the file's bytes: mapped when its table was found (they are only read where used), else read
 * whole (they are hashed and scanned now); 0 or a kind */
static int bytes_of(int fd, const char *path, size_t len, int map, struct img *img, char *err,
		    size_t errlen)
{
	if (map) {
		void *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m == MAP_FAILED)
			return snprintf(err, errlen, "%s: cannot map the file: %s", path,
					strerror(errno)),
			       vm_errno_kind(errno, EMBER_ERR_IO);
		img->buf = m;
		img->own = IMG_OWN_MAP;
		return 0;
	}
	size_t got = 0;
	int e = -base_read_fd(fd, IMG_MAX_FILE, &img->buf, &got);
	img->own = IMG_OWN_HEAP;
	/* a read error is the disk's; a file that changed size, the image's */
	int rc = e ? vm_errno_kind(e, EMBER_ERR_IO) : got != len ? EMBER_ERR_IMAGE : 0;
	if (rc)
		snprintf(err, errlen, "%s: cannot read the file: %s", path,
			 rc == EMBER_ERR_IMAGE ? "it shrank while being read" : strerror(e));
	return rc;
}

/* A file read whole to be hashed and scanned is mapped instead from now on, as a later load
 * that finds its table maps it, when it is still the file that was read (its identity): the
 * host's page cache holds it once, and only the pages used stay (Node.js's 96 MB binary was
 * held in the heap for each function using it). Left as it is otherwise. */
static void to_mapping(int fd, uint64_t key, struct img *img)
{
	struct stat sb;
	if (img->own != IMG_OWN_HEAP || !img->len || fstat(fd, &sb) < 0 ||
	    img_file_key(&sb) != key || (uint64_t)sb.st_size != img->len)
		return;
	void *m = mmap(NULL, img->len, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED)
		return;
	free(img->buf);
	img->buf = m;
	img->own = IMG_OWN_MAP;
}

/* img's ELF checked, its digest the hint's and its sites left for img_sites_fill; 0 or a kind */
static int check_hinted(struct img *img, const char *dir, uint64_t key, uint64_t digest,
			struct img_how *how, char *err, size_t errlen)
{
	uint64_t t0 = base_now_ns();
	if (img_elf_parse(img->buf, img->len, &img->elf, err, errlen))
		return EMBER_ERR_IMAGE;
	if (!(img->later_dir = strdup(dir)))
		return snprintf(err, errlen, "out of memory"), EMBER_ERR_NOMEM;
	img->later_key = key;
	img->digest = digest;
	how->from = IMG_HINT;
	how->sites_us += base_us_since(t0);
	return 0;
}

/* img_open_kept, and with hinted img_open_hinted */
static int open_kept(const char *path, const char *dir, int hinted, struct img **out,
		     struct img_how *how, char *err, size_t errlen)
{
	struct img_how none;
	how = how ? how : &none;
	memset(how, 0, sizeof(*how));
	uint64_t t0 = base_now_ns();
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) { /* missing or not readable: the image; no memory, no file slot: the host */
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return vm_errno_kind(errno, EMBER_ERR_IMAGE);
	}
	struct stat sb;
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || (uint64_t)sb.st_size > IMG_MAX_FILE) {
		snprintf(err, errlen, "%s: not a regular file of at most 256 MiB", path);
		close(fd);
		return EMBER_ERR_IMAGE;
	}
	uint64_t key = img_file_key(&sb);
	size_t len = (size_t)sb.st_size;
	if ((*out = share(key, NULL))) {
		close(fd);
		how->from = IMG_SHARED;
		how->read_us = base_us_since(t0);
		return 0;
	}
	struct img_sites table;
	uint64_t digest = 0;
	hinted = hinted && dir && len && !img_hint_load(dir, key, &digest);
	int hit = !hinted && dir && len && !img_table_load(dir, key, len, &table, &digest);
	struct img *img = calloc(1, sizeof(*img));
	if (!img) {
		close(fd);
		if (hit)
			img_sites_free(&table);
		return snprintf(err, errlen, "out of memory"), EMBER_ERR_NOMEM;
	}
	img->len = len;
	int rc = bytes_of(fd, path, len, hit || hinted, img, err, errlen);
	how->read_us = base_us_since(t0);
	if (!rc && hinted)
		rc = check_hinted(img, dir, key, digest, how, err, errlen);
	else if (!rc)
		rc = check(img, dir, key, hit ? &table : NULL, digest, how, err, errlen);
	else if (hit)
		img_sites_free(&table);
	if (!rc && !hit && !hinted)
		to_mapping(fd, key, img);
	close(fd);
	if (rc) {
		img_free(img);
		return rc;
	}
	if (dir && !hinted && len) /* the next load finds its digest without the table */
		img_hint_save(dir, key, img->digest);
	*out = share(key, img);
	return 0;
}

int img_open_kept(const char *path, const char *dir, struct img **out, struct img_how *how,
		  char *err, size_t errlen)
{
	return open_kept(path, dir, 0, out, how, err, errlen);
}

int img_open_hinted(const char *path, const char *dir, struct img **out, struct img_how *how,
		    char *err, size_t errlen)
{
	return open_kept(path, dir, 1, out, how, err, errlen);
}

/* the sites of an image filled once: the lock keeps two fills (or a fill and a reader that
 * filled first) apart */
static pthread_mutex_t fill_lock = PTHREAD_MUTEX_INITIALIZER;

int img_sites_fill(const struct img *img, char *err, size_t errlen)
{
	struct img_how how;
	return img_sites_fill_how(img, &how, err, errlen);
}

int img_sites_fill_how(const struct img *cimg, struct img_how *how, char *err, size_t errlen)
{
	char none[8];
	err = err ? err : none;
	errlen = err == none ? sizeof(none) : errlen;
	/* the sites are a part filled late: the image was allocated writable (open_kept) */
	struct img *img = (struct img *)cimg;
	pthread_mutex_lock(&fill_lock);
	int rc = 0;
	if (!img->later_dir)
		goto out;
	uint64_t digest = 0, hinted = img->digest, t0 = base_now_ns();
	how->from = IMG_TABLE;
	if (img_table_load(img->later_dir, img->later_key, img->len, &img->sites, &digest)) {
		how->from = IMG_SCANNED;
		base_want(img->buf, img->len);
		digest = XXH64(img->buf, img->len, 0);
		int src = img_find_sites(img->buf, img->len, &img->elf, &img->sites, err, errlen);
		if (src) {
			rc = src == -1	      ? EMBER_ERR_IMAGE
			     : src == -ENOMEM ? EMBER_ERR_NOMEM
					      : EMBER_ERR;
			goto out;
		}
		img_table_save(img->later_dir, img->later_key, img->len, &img->sites, digest);
	}
	how->sites_us = base_us_since(t0);
	if (digest != hinted) { /* the hint was wrong: the next load is not misled again */
		img->digest = digest;
		img_hint_save(img->later_dir, img->later_key, digest);
	}
	free(img->later_dir);
	img->later_dir = NULL;
out:
	pthread_mutex_unlock(&fill_lock);
	return rc;
}

void img_sites_counts(const struct img *img, size_t *n, size_t *ncallable)
{
	pthread_mutex_lock(&fill_lock);
	*n = img->later_dir ? 0 : img->sites.n;
	*ncallable = img->later_dir ? 0 : img->sites.ncallable;
	pthread_mutex_unlock(&fill_lock);
}

int img_from_bytes_kept(const void *buf, size_t len, uint64_t id, const char *dir, struct img **out,
			struct img_how *how, char *err, size_t errlen)
{
	struct img_how none;
	how = how ? how : &none;
	memset(how, 0, sizeof(*how));
	uint64_t k[3] = {IMG_TABLE_VERSION, id, len};
	uint64_t key = XXH3_64bits(k, sizeof(k)), digest = 0;
	struct img_sites table;
	/* as a file's (open_kept): the digest from the hint, the sites when needed; else the
	 * table, else a scan */
	int hinted = dir && len && !img_hint_load(dir, key, &digest);
	int hit = !hinted && dir && !img_table_load(dir, key, len, &table, &digest);
	struct img *img = calloc(1, sizeof(*img));
	if (!img) {
		if (hit)
			img_sites_free(&table);
		return snprintf(err, errlen, "out of memory"), EMBER_ERR_NOMEM;
	}
	img->buf = (uint8_t *)buf; /* borrowed: never written, never freed here */
	img->len = len;
	int rc = hinted ? check_hinted(img, dir, key, digest, how, err, errlen)
			: check(img, dir, key, hit ? &table : NULL, digest, how, err, errlen);
	if (rc) {
		img_free(img);
		return rc;
	}
	if (dir && !hinted && len)
		img_hint_save(dir, key, img->digest);
	*out = img;
	return 0;
}
