/* An image's syscall-site table kept on disk (DIR/KEY.sites): a later load of the same file takes
 * its sites and digest from there instead of hashing and disassembling the file again; and its
 * digest alone (DIR/KEY.digest), which is all a start from a snapshot needs. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "base/base.h"
#include "image/img.h"

#define TABLE_MAGIC 0x31535449524d4245ULL /* "EMBRITS1" */

struct table_hdr {
	uint64_t magic;
	uint32_t version, hdr_size;
	uint64_t key, img_len, img_digest;
	uint64_t n, ncallable, int80, sysenter, bad_addr;
	uint64_t digest; /* of the header (this field 0) and the body: a damaged table is refused */
};

static void table_path(char *buf, size_t len, const char *dir, uint64_t key)
{
	snprintf(buf, len, "%s/%016llx.sites", dir, (unsigned long long)key);
}

/* the body's digest seeded with the header's (its digest field 0) */
static uint64_t table_digest(struct table_hdr h, const uint64_t *addr, const uint8_t *callable)
{
	h.digest = 0;
	uint64_t seed = XXH3_64bits(&h, sizeof(h));
	seed = XXH3_64bits_withSeed(addr, h.n * sizeof(*addr), seed);
	return XXH3_64bits_withSeed(callable, h.n, seed);
}

uint64_t img_file_key(const struct stat *st)
{
	uint64_t k[1 + BASE_ID_WORDS] = {IMG_TABLE_VERSION};
	base_stat_id(st, k + 1);
	return XXH3_64bits(k, sizeof(k));
}

int img_table_load(const char *dir, uint64_t key, size_t len, struct img_sites *s, uint64_t *digest)
{
	char path[4200];
	table_path(path, sizeof(path), dir, key);
	uint8_t *buf = NULL;
	size_t got = 0;
	memset(s, 0, sizeof(*s));
	if (base_read_file(path, 1ULL << 30, &buf, &got))
		return -1;
	struct table_hdr h;
	int rc = -1;
	if (got < sizeof(h))
		goto out;
	memcpy(&h, buf, sizeof(h));
	if (h.magic != TABLE_MAGIC || h.version != IMG_TABLE_VERSION || h.hdr_size != sizeof(h) ||
	    h.key != key || h.img_len != len || h.n > (got - sizeof(h)) / 9 ||
	    got != sizeof(h) + h.n * 9 || h.ncallable > h.n)
		goto out;
	s->addr = malloc(h.n ? h.n * sizeof(*s->addr) : 1);
	s->callable = malloc(h.n ? h.n : 1);
	if (!s->addr || !s->callable)
		goto out;
	memcpy(s->addr, buf + sizeof(h), h.n * sizeof(*s->addr));
	memcpy(s->callable, buf + sizeof(h) + h.n * sizeof(*s->addr), h.n);
	if (table_digest(h, s->addr, s->callable) != h.digest)
		goto out;
	s->n = s->cap = h.n;
	s->ncallable = h.ncallable;
	s->int80 = h.int80;
	s->sysenter = h.sysenter;
	s->bad_addr = h.bad_addr;
	*digest = h.img_digest;
	rc = 0;
out:
	if (rc)
		img_sites_free(s);
	free(buf);
	return rc;
}

int img_table_save(const char *dir, uint64_t key, size_t len, const struct img_sites *s,
		   uint64_t digest)
{
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -1;
	struct table_hdr h = {
	    TABLE_MAGIC, IMG_TABLE_VERSION, sizeof(h), key,	    len,	 digest,
	    s->n,	 s->ncallable,	    s->int80,  s->sysenter, s->bad_addr, 0};
	static const uint8_t none[1];
	const uint8_t *callable = s->callable ? s->callable : none;
	if (s->n && !s->callable)
		return -1;
	h.digest = table_digest(h, s->addr, callable);
	size_t total = sizeof(h) + s->n * 9;
	uint8_t *buf = malloc(total);
	if (!buf)
		return -1;
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), s->addr, s->n * sizeof(*s->addr));
	memcpy(buf + sizeof(h) + s->n * sizeof(*s->addr), callable, s->n);
	char path[4200];
	table_path(path, sizeof(path), dir, key);
	int rc = base_replace(path, buf, total, 0600);
	free(buf);
	return rc ? -1 : 0;
}

#define HINT_LEN 36 /* "d1-" and two 16-digit hex numbers, '-' between: a fast link */

static void hint_path(char *buf, size_t len, const char *dir, uint64_t key)
{
	snprintf(buf, len, "%s/%016llx.digest", dir, (unsigned long long)key);
}

/* the check of a hint: of its key and digest, so that a damaged target or one of another
 * key's is refused */
static uint64_t hint_check(uint64_t key, uint64_t digest)
{
	const uint64_t k[3] = {TABLE_MAGIC, key, digest};
	return XXH3_64bits(k, sizeof(k));
}

int img_hint_load(const char *dir, uint64_t key, uint64_t *digest)
{
	char path[4200], t[HINT_LEN + 2];
	hint_path(path, sizeof(path), dir, key);
	ssize_t n = readlink(path, t, sizeof(t) - 1);
	if (n != HINT_LEN)
		return -1;
	t[n] = 0;
	unsigned long long d, c;
	int used = 0;
	if (sscanf(t, "d1-%16llx-%16llx%n", &d, &c, &used) != 2 || used != HINT_LEN ||
	    hint_check(key, d) != c)
		return -1;
	*digest = d;
	return 0;
}

void img_hint_save(const char *dir, uint64_t key, uint64_t digest)
{
	static _Atomic unsigned seq; /* two loads of one process may write at once */
	char path[4200], tmp[4300], t[HINT_LEN + 1];
	hint_path(path, sizeof(path), dir, key);
	snprintf(tmp, sizeof(tmp), "%s" BASE_TMP "%d-%u", path, (int)getpid(), seq++);
	snprintf(t, sizeof(t), "d1-%016llx-%016llx", (unsigned long long)digest,
		 (unsigned long long)hint_check(key, digest));
	if (symlink(t, tmp) < 0)
		return;
	if (rename(tmp, path) < 0)
		unlink(tmp);
}
