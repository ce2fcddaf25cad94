/* Async calls on disk: STATE/async/<seq>.call, a JSON line (id, function, callback, metadata)
 * then the body, written atomically and fsynced before the caller hears 202. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "async/async.h"
#include "server/srv_core.h"
#include "server/srv_spec.h"
#include "server/srv_store.h"

#define SEQ_DIGITS 16 /* the file name: the sequence number in hex, so names sort by age */

static void seq_name(uint64_t seq, char *buf, size_t len)
{
	snprintf(buf, len, "%016" PRIx64, seq);
}

int job_write(const struct srv *s, const struct srv_job *j, char *err, size_t errlen)
{
	char name[SEQ_DIGITS + 1], when[32], tmp[SRV_PATH_MAX];
	seq_name(j->seq, name, sizeof(name));
	srv_rfc3339(when, sizeof(when));
	json_t *doc = json_pack("{s:s,s:s,s:s%,s:s}", "id", j->id, "function", j->name, "meta",
				j->meta, j->meta_len, "accepted", when);
	if (doc && j->callback)
		json_object_set_new(doc, "callback", json_string(j->callback));
	char *head = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	size_t hl = head ? strlen(head) : 0;
	char *buf = head ? malloc(hl + 1 + j->len) : NULL;
	if (!buf) {
		free(head);
		return snprintf(err, errlen, "out of memory"), -1;
	}
	memcpy(buf, head, hl);
	buf[hl] = '\n';
	if (j->len)
		memcpy(buf + hl + 1, j->body, j->len);
	free(head);
	int rc =
	    store_temp(s, s->async_dir, buf, hl + 1 + j->len, 0600, tmp, sizeof(tmp), err, errlen);
	free(buf);
	if (!rc)
		rc = store_commit(s, s->async_dir, tmp, name, ".call", err, errlen);
	return rc;
}

static int call_path(const struct srv *s, uint64_t seq, char *path, size_t len)
{
	char name[SEQ_DIGITS + 1];
	seq_name(seq, name, sizeof(name));
	return store_path(s, s->async_dir, name, ".call", path, len);
}

static char *read_all(const char *path, size_t *len)
{
	uint8_t *buf = NULL;
	return base_read_file(path, SIZE_MAX / 2, &buf, len) ? NULL : (char *)buf;
}

/* the JSON line's fields into j; 0 or -1 with why */
static int parse_head(const char *head, size_t hl, struct srv_job *j, char *err, size_t errlen)
{
	json_error_t e;
	const char *id, *fn, *cb = NULL, *meta;
	size_t meta_len;
	json_t *doc = json_loadb(head, hl, JSON_REJECT_DUPLICATES, &e);
	int rc = -1;
	if (!doc) {
		snprintf(err, errlen, "%s", e.text);
		goto out;
	}
	if (json_unpack_ex(doc, &e, 0, "{s:s,s:s,s?s,s:s%}", "id", &id, "function", &fn, "callback",
			   &cb, "meta", &meta, &meta_len)) {
		snprintf(err, errlen, "%s", e.text);
		goto out;
	}
	if (strlen(id) >= sizeof(j->id) || !srv_name_ok(fn) ||
	    (cb && callback_url_check(cb, err, errlen))) {
		snprintf(err, errlen, "a bad id, function name or callback");
		goto out;
	}
	snprintf(j->id, sizeof(j->id), "%s", id);
	snprintf(j->name, sizeof(j->name), "%s", fn);
	j->meta = malloc(meta_len + 1);
	j->callback = cb ? strdup(cb) : NULL;
	if (!j->meta || (cb && !j->callback)) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	memcpy(j->meta, meta, meta_len + 1);
	j->meta_len = meta_len;
	rc = 0;
out:
	json_decref(doc);
	return rc;
}

int job_read(const struct srv *s, uint64_t seq, struct srv_job *j, char *err, size_t errlen)
{
	char path[SRV_PATH_MAX];
	size_t len = 0;
	memset(j, 0, sizeof(*j));
	j->seq = seq;
	if (call_path(s, seq, path, sizeof(path)))
		return snprintf(err, errlen, "state path too long"), -1;
	char *buf = read_all(path, &len);
	if (!buf)
		return snprintf(err, errlen, "%s: %s", path, strerror(errno ? errno : EIO)), -1;
	const char *nl = memchr(buf, '\n', len);
	size_t hl = nl ? (size_t)(nl - buf) : 0;
	if (!nl || parse_head(buf, hl, j, err, errlen)) {
		if (!nl)
			snprintf(err, errlen, "no header line");
		free(buf);
		job_free(j);
		return -1;
	}
	/* the body is the rest of the file: moved to the start of the buffer it was read into */
	j->len = len - hl - 1;
	memmove(buf, nl + 1, j->len);
	j->body = (uint8_t *)buf;
	return 0;
}

void job_free(struct srv_job *j)
{
	free(j->callback);
	free(j->meta);
	free(j->body);
	j->callback = j->meta = NULL;
	j->body = NULL;
}

void job_remove(const struct srv *s, uint64_t seq)
{
	char name[SEQ_DIGITS + 1];
	seq_name(seq, name, sizeof(name));
	store_remove(s, s->async_dir, name, ".call");
}

void job_set_aside(const struct srv *s, uint64_t seq)
{
	char path[SRV_PATH_MAX], bad[SRV_PATH_MAX + 8];
	if (call_path(s, seq, path, sizeof(path)))
		return;
	snprintf(bad, sizeof(bad), "%s.bad", path);
	rename(path, bad);
}

static int cmp_seq(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* 1: NAME is <SEQ_DIGITS hex digits>.call, *seq its number */
static int seq_of(const char *name, uint64_t *seq)
{
	if (strlen(name) != SEQ_DIGITS + 5 || strcmp(name + SEQ_DIGITS, ".call") ||
	    strspn(name, "0123456789abcdef") != SEQ_DIGITS)
		return 0;
	*seq = strtoull(name, NULL, 16);
	return 1;
}

int job_list(const struct srv *s, uint64_t **seqs, size_t *n)
{
	char path[SRV_PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", s->state, s->async_dir);
	*seqs = NULL;
	*n = 0;
	DIR *d = opendir(path);
	if (!d)
		return -1;
	size_t cap = 0;
	struct dirent *de;
	uint64_t seq;
	int rc = 0;
	while ((de = readdir(d))) {
		if (!seq_of(de->d_name, &seq))
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			uint64_t *v = realloc(*seqs, cap * sizeof(*v));
			if (!v) {
				rc = -1;
				break;
			}
			*seqs = v;
		}
		(*seqs)[(*n)++] = seq;
	}
	closedir(d);
	if (*n)
		qsort(*seqs, *n, sizeof(**seqs), cmp_seq);
	return rc;
}
