/* The shared store of images and files bundles: blobs named by their SHA-256, checked when read. */
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "server/srv_cluster.h"

#define DIGEST_PREFIX "sha256:"

void cstore_digest(const void *data, size_t len, char *digest)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned n = 0;
	EVP_Digest(data, len, md, &n, EVP_sha256(), NULL);
	char *p = digest + sprintf(digest, DIGEST_PREFIX);
	for (unsigned i = 0; i < n; i++)
		p += sprintf(p, "%02x", md[i]);
}

/* DIR/sha256/HEX of a well-formed digest; -1 otherwise */
int cstore_path(const char *dir, const char *digest, char *buf, size_t len)
{
	const char *hex = digest + strlen(DIGEST_PREFIX);
	if (strncmp(digest, DIGEST_PREFIX, strlen(DIGEST_PREFIX)) || strlen(hex) != 64 ||
	    strspn(hex, "0123456789abcdef") != 64)
		return -1;
	int n = snprintf(buf, len, "%s/sha256/%s", dir, hex);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

#define BLOB_MAX (1ULL << 32)

static int read_all(const char *path, uint8_t **data, size_t *len)
{
	int rc = base_read_file(path, BLOB_MAX, data, len);
	if (rc)
		errno = -rc;
	return rc ? -1 : 0;
}

int cstore_file_digest(const char *path, char *digest)
{
	uint8_t *d;
	size_t n;
	if (read_all(path, &d, &n))
		return -1;
	cstore_digest(d, n, digest);
	free(d);
	return 0;
}

int cstore_put(const char *dir, const void *data, size_t len, char *digest, char *err,
	       size_t errlen)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8], sub[PATH_MAX];
	cstore_digest(data, len, digest);
	snprintf(sub, sizeof(sub), "%s/sha256", dir);
	if (mkdir(sub, 0755) && errno != EEXIST)
		return snprintf(err, errlen, "store %s: %s", sub, strerror(errno)), -1;
	if (cstore_path(dir, digest, path, sizeof(path)))
		return snprintf(err, errlen, "store %s: path too long", dir), -1;
	char have[CSTORE_DIGEST_MAX];
	if (!cstore_file_digest(path, have) && !strcmp(have, digest))
		return 0; /* there already, whole */
	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path);
	int rc = base_temp_write(tmp, data, len, 0644);
	if (!rc)
		rc = base_commit(tmp, path);
	if (rc)
		return snprintf(err, errlen, "store %s: %s", path, strerror(-rc)), -1;
	return 0;
}

int cstore_get(const char *dir, const char *digest, uint8_t **data, size_t *len, char *err,
	       size_t errlen)
{
	char path[PATH_MAX], got[CSTORE_DIGEST_MAX];
	if (cstore_path(dir, digest, path, sizeof(path)))
		return snprintf(err, errlen, "store: malformed digest '%.80s'", digest), -1;
	if (read_all(path, data, len))
		return snprintf(err, errlen, "store: %s: %s", path, strerror(errno)), -1;
	cstore_digest(*data, *len, got);
	if (strcmp(got, digest)) {
		free(*data);
		*data = NULL;
		return snprintf(err, errlen,
				"store: %s does not match its digest (its content is %s): refused",
				path, got),
		       -1;
	}
	return 0;
}
