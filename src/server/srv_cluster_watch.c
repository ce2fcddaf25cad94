/* The watcher: this node's deployments converged to etcd's, by one sync and then the watch stream.
 */
#include <stdlib.h>
#include <string.h>

#include "server/srv_cluster_impl.h"
#include "server/srv_core.h"
#include "server/srv_spec.h"
#include "server/srv_store.h"
#include "server/srv_registry.h"

#define RETRY_S 1 /* after etcd was unreachable */

static void set_state(struct srv_cluster *c, int connected, const char *err, int64_t rev)
{
	pthread_mutex_lock(&c->mu);
	c->connected = connected;
	if (err)
		srv_copy(c->last_err, sizeof(c->last_err), err);
	if (rev > c->revision)
		c->revision = rev;
	pthread_mutex_unlock(&c->mu);
}

/* the blob v[field] names, from the store or a peer, checked (*data NULL when v names none) */
static int fetch(struct srv *s, const json_t *v, const char *field, uint8_t **data, size_t *len,
		 char *err, size_t errlen)
{
	const char *digest = json_string_value(json_object_get(v, field));
	const char *origin = json_string_value(json_object_get(v, "origin"));
	*data = NULL;
	*len = 0;
	return digest ? cstore_fetch(s, digest, origin, data, len, err, errlen) : 0;
}

/* 1 when the function here is that deployment already (same JSON, same image) */
static int same(struct srv *s, const json_t *in, const char *created, const char *image_digest)
{
	char err[SRV_ERR_MAX], path[SRV_PATH_MAX], have[CSTORE_DIGEST_MAX];
	const char *name = json_string_value(json_object_get(in, "service"));
	struct srv_spec *old = name ? reg_spec(s, name) : NULL, *sp = NULL;
	int eq =
	    old && !spec_parse(in, created, &sp, err, sizeof(err)) && json_equal(old->doc, sp->doc);
	if (eq && image_digest)
		eq = old->pin[0] && !pin_path(s, old->pin, path, sizeof(path)) &&
		     !cstore_file_digest(path, have) && !strcmp(have, image_digest);
	spec_put(sp);
	spec_put(old);
	return eq;
}

/* applies one deployment of etcd here, loaded when this node holds it (*loaded): 0, or -1 */
static int apply_value(struct srv *s, const char *name, const json_t *v, int *loaded, char *err,
		       size_t errlen)
{
	json_t *doc = json_object_get(v, "deploy");
	const char *svc = json_string_value(json_object_get(doc, "service"));
	const char *image = json_string_value(json_object_get(doc, "image"));
	const char *image_digest = json_string_value(json_object_get(v, "image"));
	if (!json_is_object(doc) || !svc || strcmp(svc, name))
		return snprintf(err, errlen, "etcd: the key of '%s' holds no deployment of it",
				name),
		       -1;
	uint8_t *files, *img = NULL;
	size_t nfiles, nimg = 0;
	int rc = -1;
	json_t *in = json_deep_copy(doc);
	if (fetch(s, v, "files", &files, &nfiles, err, errlen) ||
	    fetch(s, v, "image", &img, &nimg, err, errlen) || !in)
		goto out;
	if (files) {
		json_t *b = etcd_b64((const char *)files, nfiles);
		if (!b || json_object_set_new(in, "files", b)) {
			snprintf(err, errlen, "out of memory");
			goto out;
		}
	}
	const char *created = json_string_value(json_object_get(doc, "createdAt"));
	if (same(s, in, created, image_digest)) {
		rc = 0;
		goto out;
	}
	if (img && image && store_write(s, "images", image, "", img, nimg, err, errlen))
		goto out;
	int role = cluster_role(s->cluster, name);
	*loaded = role == ROLE_UNKNOWN || ROLE_HELD(role); /* no ring yet: as a node alone */
	rc = sys_apply(s, in, created, *loaded, err, errlen);
out:
	json_decref(in);
	free(files);
	free(img);
	return rc;
}

/* one key of etcd (a kv of a range or an event): applied, or removed (del) */
static void apply_kv(struct srv *s, const json_t *kv, int del)
{
	struct srv_cluster *c = s->cluster;
	size_t n;
	char err[SRV_ERR_MAX], *key = etcd_unb64(json_object_get(kv, "key"), &n);
	const char *name = key ? key + strlen(CLUSTER_PREFIX) : NULL;
	if (!key || n <= strlen(CLUSTER_PREFIX) || !srv_name_ok(name)) {
		free(key);
		return;
	}
	int64_t rev = etcd_int(json_object_get(kv, "mod_revision"));
	if (del) {
		sys_remove(s, name);
		cluster_forget(c, name);
		free(key);
		return;
	}
	char *text = etcd_unb64(json_object_get(kv, "value"), &n);
	json_t *v = text ? json_loads(text, 0, NULL) : NULL;
	int loaded = -1; /* unchanged: it was the same already */
	int rc = v ? apply_value(s, name, v, &loaded, err, sizeof(err))
		   : (snprintf(err, sizeof(err), "etcd: the value of '%s' is not JSON", name), -1);
	if (rc)
		srv_log(s, "error", "cluster: %s at revision %lld not applied: %s", name,
			(long long)rev, err);
	cluster_record(c, name, rev, etcd_int(json_object_get(kv, "version")), rc ? err : NULL,
		       rc ? 0 : loaded);
	json_decref(v);
	free(text);
	free(key);
}

static int listed(const json_t *kvs, const char *name)
{
	size_t i, n;
	json_t *kv;
	json_array_foreach(kvs, i, kv)
	{
		char *key = etcd_unb64(json_object_get(kv, "key"), &n);
		int hit = key && !strcmp(key + strlen(CLUSTER_PREFIX), name);
		free(key);
		if (hit)
			return 1;
	}
	return 0;
}

/* everything under the prefix applied, what etcd lacks removed; etcd's revision, or -1 */
static int64_t sync_all(struct srv *s, char *err, size_t errlen)
{
	json_t *reply = NULL, *req = etcd_prefix_range(CLUSTER_PREFIX);
	int rc = req ? etcd_call(s->cluster->ec, "/v3/kv/range", req, &reply, err, errlen) : -1;
	json_decref(req);
	if (rc)
		return -1;
	json_t *kvs = json_object_get(reply, "kvs"), *kv, *here = reg_list(s), *st;
	size_t i;
	json_array_foreach(kvs, i, kv) apply_kv(s, kv, 0);
	json_array_foreach(here, i, st)
	{
		const char *name = json_string_value(json_object_get(st, "name"));
		if (name && !listed(kvs, name) && sys_remove(s, name) == REG_OK)
			cluster_forget(s->cluster, name);
	}
	int64_t rev = etcd_int(json_object_get(json_object_get(reply, "header"), "revision"));
	json_decref(here);
	json_decref(reply);
	return rev;
}

/* one message of the watch: its events applied in order, then its revision is this node's */
static int on_watch(void *ctx, json_t *res)
{
	struct srv *s = ctx;
	json_t *ev;
	size_t i;
	if (json_is_true(json_object_get(res, "canceled")) ||
	    etcd_int(json_object_get(res, "compact_revision")))
		return 1; /* compacted past us: sync again */
	json_array_foreach(json_object_get(res, "events"), i, ev)
	{
		const char *type = json_string_value(json_object_get(ev, "type"));
		apply_kv(s, json_object_get(ev, "kv"), type && !strcmp(type, "DELETE"));
	}
	set_state(s->cluster, 1, NULL,
		  etcd_int(json_object_get(json_object_get(res, "header"), "revision")));
	return 0;
}

void *cluster_watcher(void *p)
{
	struct srv *s = p;
	struct srv_cluster *c = s->cluster;
	char err[SRV_ERR_MAX];
	/* the state folder's functions first, and the ring (what this node loads) */
	for (int ring = 0; !cluster_stopping(s) && (!atomic_load(&s->ready) || !ring);) {
		pthread_mutex_lock(&c->mu);
		ring = c->ring_tried;
		pthread_mutex_unlock(&c->mu);
		cluster_pause(s, 0.05);
	}
	while (!cluster_stopping(s)) {
		int64_t rev = sync_all(s, err, sizeof(err));
		pthread_mutex_lock(&c->mu);
		c->synced = 1;
		pthread_mutex_unlock(&c->mu);
		if (rev < 0) {
			set_state(c, 0, err, 0);
			srv_log(s, "warning", "cluster: %s; serving what this node has", err);
			cluster_pause(s, RETRY_S);
			continue;
		}
		set_state(c, 1, "", rev);
		if (etcd_watch(c->ec, CLUSTER_PREFIX, rev + 1, on_watch, cluster_stopping, s, err,
			       sizeof(err)) < 0) {
			set_state(c, 0, err, 0);
			srv_log(s, "warning", "cluster: %s; serving what this node has", err);
			cluster_pause(s, RETRY_S);
		}
	}
	return NULL;
}
