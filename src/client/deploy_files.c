/* ember deploy: a function's files (files: in the stack file), checked as the server will check
 * them, packed as a gzipped tar archive and put in the deployment's files field in base64. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bundle/bnd.h"
#include "cli/cli.h"
#include "client/stack.h"

/* the archive as libarchive writes it */
struct out {
	uint8_t *buf;
	size_t len, cap;
};

static la_ssize_t put_bytes(struct archive *a, void *arg, const void *p, size_t n)
{
	struct out *o = arg;
	if (o->len + n > o->cap) {
		size_t cap = o->cap ? o->cap : 65536;
		while (cap < o->len + n)
			cap *= 2;
		uint8_t *b = realloc(o->buf, cap);
		if (!b) {
			archive_set_error(a, ENOMEM, "out of memory");
			return -1;
		}
		o->buf = b;
		o->cap = cap;
	}
	memcpy(o->buf + o->len, p, n);
	o->len += n;
	return (la_ssize_t)n;
}

/* folder d's entries below path (plen bytes of it), each one's header and contents */
static int put_folder(struct archive *w, struct archive_entry *e, const struct bnd *b, uint32_t d,
		      char *path, size_t plen)
{
	const struct bnd_node *dn = &b->nodes[d];
	for (uint32_t i = dn->first; i < dn->first + dn->count; i++) {
		const struct bnd_node *n = &b->nodes[i];
		size_t len = plen + (plen ? 1 : 0) + n->name_len;
		if (len >= BND_PATH_MAX)
			return -1;
		if (plen)
			path[plen] = '/';
		memcpy(path + len - n->name_len, b->names + n->name_off, n->name_len);
		path[len] = 0;
		archive_entry_clear(e);
		archive_entry_set_pathname(e, path);
		archive_entry_set_mode(e, n->mode);
		char target[BND_PATH_MAX];
		if (bnd_is(b, i, S_IFLNK)) {
			memcpy(target, b->data + n->data_off, n->size);
			target[n->size] = 0;
			archive_entry_set_symlink(e, target);
		}
		if (bnd_is(b, i, S_IFREG))
			archive_entry_set_size(e, (la_int64_t)n->size);
		if (archive_write_header(w, e) != ARCHIVE_OK)
			return -1;
		if (bnd_is(b, i, S_IFREG) && n->size &&
		    archive_write_data(w, b->data + n->data_off, n->size) != (la_ssize_t)n->size)
			return -1;
		if (bnd_is(b, i, S_IFDIR) && put_folder(w, e, b, i, path, len))
			return -1;
		path[plen] = 0;
	}
	return 0;
}

/* the tree as a gzipped tar archive in o */
static int pack(const struct bnd *b, struct out *o, char *err, size_t errlen)
{
	struct archive *w = archive_write_new();
	struct archive_entry *e = archive_entry_new();
	char *path = malloc(BND_PATH_MAX + 1);
	int rc = -1;
	if (!w || !e || !path) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	path[0] = 0;
	if (archive_write_set_format_pax_restricted(w) != ARCHIVE_OK ||
	    archive_write_add_filter_gzip(w) != ARCHIVE_OK ||
	    archive_write_set_bytes_in_last_block(w, 1) != ARCHIVE_OK ||
	    archive_write_open2(w, o, NULL, put_bytes, NULL, NULL) != ARCHIVE_OK ||
	    put_folder(w, e, b, 0, path, 0) || archive_write_close(w) != ARCHIVE_OK)
		snprintf(err, errlen, "cannot pack them: %s", archive_error_string(w));
	else
		rc = 0;
out:
	free(path);
	archive_entry_free(e);
	archive_write_free(w);
	return rc;
}

int cli_deploy_files(const struct cli_stack_fn *fn, json_t *deployment, char *what, size_t whatlen,
		     char *why, size_t whylen)
{
	char err[512] = "";
	struct out o = {0};
	char *b64 = NULL;
	int rc = -1;
	/* an OCI image layout: its root tree, unpacked by umoci, is what travels */
	char root[CLI_PATH_MAX];
	int oci = cli_oci_unpack(fn->files, root, sizeof(root), err, sizeof(err));
	/* the rules the server applies, here first: the reason before anything is sent */
	struct bnd *b = oci < 0 ? NULL : bnd_open(oci ? root : fn->files, err, sizeof(err));
	if (oci > 0)
		cli_oci_done(root); /* bnd_open read it whole */
	if (!b || pack(b, &o, err, sizeof(err)))
		goto out;
	if (o.len > (size_t)INT32_MAX / 4 * 3 || !(b64 = malloc(4 * ((o.len + 2) / 3) + 1))) {
		snprintf(err, sizeof(err), "too large to send");
		goto out;
	}
	int n = EVP_EncodeBlock((unsigned char *)b64, o.buf, (int)o.len);
	if (json_object_set_new(deployment, "files", json_stringn(b64, (size_t)n))) {
		snprintf(err, sizeof(err), "out of memory");
		goto out;
	}
	size_t used = strlen(what);
	snprintf(what + used, whatlen - used, ", files %s (%u entries, %zu bytes packed)",
		 fn->files, b->nnodes - 1, o.len);
	rc = 0;
out:
	if (rc) {
		/* bnd_open's reasons for the folder itself name it already */
		char head[CLI_PATH_MAX + 16];
		snprintf(head, sizeof(head), "files %s: ", fn->files);
		int named = !strncmp(err, head, strlen(head));
		snprintf(why, whylen, "%s: %s%s", fn->name, named ? "" : head, err);
	}
	bnd_free(b);
	free(o.buf);
	free(b64);
	return rc;
}
