/* The store over HTTP between a cluster's nodes: GET /system/store?digest=..., and a node
 * fetching a blob it lacks from its peers, checked against its digest before it is used. */
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/srv_cluster_impl.h"
#include "server/srv_spec.h"

#define PEER_CONNECT_S 2
#define PEER_FETCH_S   120
#define PEER_BLOB_MAX  (1ULL << 32)

enum MHD_Result h_store_get(struct srv *s, struct srv_req *r)
{
	const char *digest = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "digest");
	char path[PATH_MAX];
	uint8_t *data;
	size_t len;
	if (!s->opt.store_dir)
		return srv_reply_error(r, 404, "this node keeps no store (no --cluster)");
	if (!digest || cstore_path(s->opt.store_dir, digest, path, sizeof(path)))
		return srv_reply_error(r, 400, "digest must be sha256: and 64 hex digits");
	/* served as stored: the node that reads it checks it against its digest */
	if (base_read_file(path, PEER_BLOB_MAX, &data, &len))
		return srv_reply_error(r, 404, "no blob %s in this node's store", digest);
	return srv_reply(r, 200, "application/octet-stream", data, len, 1, NULL, 0);
}

struct rx {
	char *buf;
	size_t len, cap;
};

static size_t rx_write(char *p, size_t size, size_t nmemb, void *cls)
{
	struct rx *x = cls;
	size_t n = size * nmemb;
	return cluster_buf_add(&x->buf, &x->len, &x->cap, p, n, PEER_BLOB_MAX) ? 0 : n;
}

/* one GET of the blob from peer: 0 with x filled, -1 with err */
static int get_blob(struct srv *s, const char *peer, const char *digest, struct rx *x, char *err,
		    size_t errlen)
{
	char url[256]; /* an address (< CLUSTER_ADDR_MAX) and a digest (< CSTORE_DIGEST_MAX) */
	snprintf(url, sizeof(url), "http://%.95s/system/store?digest=%.71s", peer, digest);
	CURL *c = curl_easy_init();
	if (!c)
		return snprintf(err, errlen, "out of memory"), -1;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, (long)PEER_CONNECT_S);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)PEER_FETCH_S);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, rx_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
	if (s->auth) { /* the nodes share the management credentials */
		curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(c, CURLOPT_USERNAME, s->auth_user);
		curl_easy_setopt(c, CURLOPT_PASSWORD, s->auth_pass);
	}
	CURLcode rc = curl_easy_perform(c);
	long code = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(c);
	if (rc != CURLE_OK)
		return snprintf(err, errlen, "store: %s: %s", url, curl_easy_strerror(rc)), -1;
	if (code != 200)
		return snprintf(err, errlen, "store: %s: HTTP %ld", url, code), -1;
	return 0;
}

/* the peers to ask, origin first, this node left out: n. Only members are asked: the
 * credentials go with the request, and origin is what an etcd value says */
static size_t peers(struct srv_cluster *c, const char *origin, char (*out)[CLUSTER_ADDR_MAX],
		    size_t max)
{
	size_t n = 0;
	pthread_mutex_lock(&c->mu);
	int member = 0;
	for (size_t i = 0; origin && i < c->nmembers; i++)
		member |= !strcmp(c->members[i], origin);
	if (member && strcmp(origin, c->self) && max)
		strcpy(out[n++], origin);
	for (size_t i = 0; i < c->nmembers && n < max; i++)
		if (strcmp(c->members[i], c->self) && (!origin || strcmp(c->members[i], origin)))
			strcpy(out[n++], c->members[i]);
	pthread_mutex_unlock(&c->mu);
	return n;
}

#define PEERS_MAX 16 /* asked for one blob, at most */

int cstore_fetch(struct srv *s, const char *digest, const char *origin, uint8_t **data, size_t *len,
		 char *err, size_t errlen)
{
	char path[PATH_MAX], got[CSTORE_DIGEST_MAX], list[PEERS_MAX][CLUSTER_ADDR_MAX];
	const char *dir = s->opt.store_dir;
	if (cstore_path(dir, digest, path, sizeof(path)) || !access(path, F_OK))
		return cstore_get(dir, digest, data, len, err, errlen); /* here: checked as it is */
	size_t n = peers(s->cluster, origin, list, PEERS_MAX);
	int mismatch = 0;
	snprintf(err, errlen, "store: %s is in no node's store (%s, no peer)", digest, path);
	for (size_t i = 0; i < n; i++) {
		struct rx x = {0};
		char why[SRV_ERR_MAX];
		if (get_blob(s, list[i], digest, &x, why, sizeof(why))) {
			if (!mismatch) /* a mismatch is the error to tell, whatever follows */
				srv_copy(err, errlen, why);
			free(x.buf);
			continue;
		}
		cstore_digest(x.buf ? (void *)x.buf : (void *)"", x.len, got);
		if (strcmp(got, digest)) {
			snprintf(
			    err, errlen,
			    "store: the blob %s from %s does not match its digest (its content "
			    "is %s): refused",
			    digest, list[i], got);
			srv_log(s, "error", "cluster: %s", err);
			mismatch = 1;
			free(x.buf);
			continue;
		}
		char d2[CSTORE_DIGEST_MAX], why2[SRV_ERR_MAX];
		if (cstore_put(dir, x.buf ? (void *)x.buf : (void *)"", x.len, d2, why2,
			       sizeof(why2))) /* kept to serve others; used all the same */
			srv_log(s, "warning", "cluster: %s", why2);
		*data = x.buf ? (uint8_t *)x.buf : calloc(1, 1);
		*len = x.len;
		return *data ? 0 : (snprintf(err, errlen, "out of memory"), -1);
	}
	return -1;
}
