/* The cluster control plane (`ember serve --cluster`): deployments kept in etcd, nodes that
 * converge. */
#ifndef EMBER_SRV_CLUSTER_H
#define EMBER_SRV_CLUSTER_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "server/srv_core.h"
#include "server/srv_http.h"

#define CLUSTER_PREFIX	  "/ember/functions/" /* one key per function: PREFIX NAME */
#define CSTORE_DIGEST_MAX 72		      /* "sha256:" and 64 hex digits */

/* srv_etcd.c: a client of etcd's v3 JSON gateway (/v3/kv/..., /v3/watch) over libcurl */
struct etcd;
/* "etcd://HOST:PORT[,HOST:PORT...]" -> a client; NULL with err */
struct etcd *etcd_new(const char *url, char *err, size_t errlen);
void etcd_free(struct etcd *ec);
/* POSTs body to path on the first endpoint that answers: 0 and *reply, or -1 with err (no
 * endpoint reachable, or etcd's own error) */
int etcd_call(struct etcd *ec, const char *path, json_t *body, json_t **reply, char *err,
	      size_t errlen);
/* the JSON key or value: base64 of s (n bytes), new; and back (NULL when not base64) */
json_t *etcd_b64(const char *s, size_t n);
char *etcd_unb64(const json_t *v, size_t *n);
int64_t etcd_int(const json_t *v); /* etcd's int64 as a string ("12"), 0 when absent */
/* a watch of the keys under prefix from rev: each message's "result" to fn; returns when fn
 * returns nonzero, stop() says so, or the stream ends (-1 with err) */
typedef int (*etcd_watch_fn)(void *ctx, json_t *result);
int etcd_watch(struct etcd *ec, const char *prefix, int64_t rev, etcd_watch_fn fn,
	       int (*stop)(void *ctx), void *ctx, char *err, size_t errlen);
/* n bytes appended to *buf (grown, at most max; kept NUL-terminated): 0, or -1 */
int cluster_buf_add(char **buf, size_t *len, size_t *cap, const void *p, size_t n, size_t max);
/* the range of every key under prefix: {"key": prefix, "range_end": its successor} */
json_t *etcd_prefix_range(const char *prefix);

/* srv_cstore.c: the shared store (--store DIR): blobs by content, DIR/sha256/HEX */
int cstore_put(const char *dir, const void *data, size_t len, char *digest, char *err,
	       size_t errlen);
/* reads a blob and checks it against its digest: 0, or -1 with err (absent, or a mismatch) */
int cstore_get(const char *dir, const char *digest, uint8_t **data, size_t *len, char *err,
	       size_t errlen);
void cstore_digest(const void *data, size_t len, char *digest); /* "sha256:HEX" */
int cstore_file_digest(const char *path, char *digest);		/* of a file; -1 unreadable */

/* srv_cluster.c: the writes (one etcd transaction per deploy or delete) */
struct srv_cluster;
int cluster_start(struct srv *s, char *err, size_t errlen); /* nothing without opt.cluster */
void cluster_stop(struct srv *s);			    /* joins the watcher */
enum MHD_Result cluster_deploy(struct srv *s, struct srv_req *r, const json_t *in, int update);
enum MHD_Result cluster_delete(struct srv *s, struct srv_req *r, const char *name);
/* srv_cluster_watch.c: the watcher that converges this node to etcd */
void *cluster_watcher(void *p);
/* what this node converged to: in j (a function's status), in /system/info, in /metrics */
void cluster_annotate(struct srv *s, json_t *fn_status);
json_t *cluster_info(struct srv *s);
void cluster_metrics(FILE *f, struct srv *s);
int cluster_synced(struct srv *s); /* 1: no cluster, or its first sync was tried */

/* srv_system.c: applying a deployment here (the watcher's path; created: its createdAt; load:
 * 0 to keep it unloaded until its first call) */
int sys_apply(struct srv *s, const json_t *in, const char *created, int load, char *err,
	      size_t errlen);
int sys_remove(struct srv *s, const char *name); /* REG_OK or REG_NOTFOUND */

/* srv_cluster_members.c: a function unloaded with its snapshot when idle for idle_s: 1 when it
 * was, 2 when it was not loaded, 0 when it is still in use */
int reg_drop(struct srv *s, const char *name, double idle_s);
/* srv_cstore_http.c: GET /system/store?digest=sha256:HEX, a blob of this node's store */
enum MHD_Result h_store_get(struct srv *s, struct srv_req *r);
/* a blob's path in the store: 0, or -1 when the digest is malformed */
int cstore_path(const char *dir, const char *digest, char *buf, size_t len);

#endif
