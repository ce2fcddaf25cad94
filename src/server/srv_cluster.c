/* `ember serve --cluster`: a deploy or delete through this node written to etcd as one transaction.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "server/srv_cluster.h"
#include "server/srv_cluster_impl.h"
#include "server/srv_core.h"
#include "server/srv_spec.h"
#include "server/srv_store.h"
#include "server/srv_registry.h"
#include "server/srv_http.h"

int cluster_start(struct srv *s, char *err, size_t errlen)
{
	if (!s->opt.cluster)
		return 0;
	if (!s->opt.store_dir)
		return snprintf(err, errlen, "--cluster needs --store DIR (the shared store)"), -1;
	struct stat st;
	if (stat(s->opt.store_dir, &st) || !S_ISDIR(st.st_mode))
		return snprintf(err, errlen, "--store %s: not a folder", s->opt.store_dir), -1;
	struct srv_cluster *c = calloc(1, sizeof(*c));
	if (!c)
		return snprintf(err, errlen, "out of memory"), -1;
	if (!(c->ec = etcd_new(s->opt.cluster, err, errlen))) {
		free(c);
		return -1;
	}
	pthread_mutex_init(&c->mu, NULL);
	/* the address HAProxy knows this node by (lb-config's NODE): its server id on the ring */
	srv_copy(c->self, sizeof(c->self), s->opt.advertise ? s->opt.advertise : s->address);
	s->cluster = c;
	if (!ring_addr_id(c->self))
		return snprintf(err, errlen, "--advertise '%s' is not HOST:PORT", c->self), -1;
	if (!s->opt.advertise &&
	    (!strncmp(c->self, "0.0.0.0:", 8) || !strncmp(c->self, "[::]:", 5)))
		return snprintf(
			   err, errlen,
			   "--cluster on the wildcard address %s: name this node with "
			   "--advertise HOST:PORT (as its peers and ember lb-config reach it), "
			   "or every such node would be one member",
			   c->self),
		       -1;
	if (pthread_create(&c->members_th, NULL, cluster_members, s))
		return snprintf(err, errlen, "cannot start a thread"), -1;
	c->members_started = 1;
	if (pthread_create(&c->loader_th, NULL, cluster_loader, s))
		return snprintf(err, errlen, "cannot start a thread"), -1;
	c->loader_started = 1;
	if (pthread_create(&c->th, NULL, cluster_watcher, s))
		return snprintf(err, errlen, "cannot start a thread"), -1;
	c->started = 1;
	return 0;
}

void cluster_stop(struct srv *s)
{
	struct srv_cluster *c = s->cluster;
	if (!c)
		return;
	if (c->started)
		pthread_join(c->th, NULL);
	if (c->members_started)
		pthread_join(c->members_th, NULL);
	if (c->loader_started)
		pthread_join(c->loader_th, NULL);
	etcd_free(c->ec);
	free(c->fns);
	free(c->members);
	ring_free(&c->ring);
	pthread_mutex_destroy(&c->mu);
	free(c);
	s->cluster = NULL;
}

static json_t *key_of(const char *name)
{
	char key[sizeof(CLUSTER_PREFIX) + SRV_NAME_MAX];
	snprintf(key, sizeof(key), CLUSTER_PREFIX "%s", name);
	return etcd_b64(key, strlen(key));
}

/* the function's key as etcd has it now: 0 (*kv NULL when absent), -1 when etcd is unreachable */
static int current(struct srv *s, const char *name, json_t **kv, char *err, size_t errlen)
{
	json_t *reply = NULL, *req = json_pack("{s:o}", "key", key_of(name));
	int rc = req ? etcd_call(s->cluster->ec, "/v3/kv/range", req, &reply, err, errlen) : -1;
	json_decref(req);
	*kv = rc ? NULL : json_incref(json_array_get(json_object_get(reply, "kvs"), 0));
	json_decref(reply);
	return rc;
}

/* the compare of the transaction: the key as it was read (absent, or at its mod_revision) */
static json_t *unchanged(const char *name, const json_t *kv)
{
	if (!kv)
		return json_pack("{s:o,s:s,s:s,s:s}", "key", key_of(name), "target", "CREATE",
				 "create_revision", "0", "result", "EQUAL");
	return json_pack("{s:o,s:s,s:O,s:s}", "key", key_of(name), "target", "MOD", "mod_revision",
			 json_object_get(kv, "mod_revision"), "result", "EQUAL");
}

/* one transaction: the compare, then ops; 1 when it succeeded, 0 when the key changed meanwhile,
 * -1 when etcd did not take it; *rev the revision it made */
static int txn(struct srv *s, json_t *compare, json_t *op, int64_t *rev, char *err, size_t errlen)
{
	json_t *reply = NULL, *req = json_pack("{s:[o],s:[o]}", "compare", compare, "success", op);
	int rc = req ? etcd_call(s->cluster->ec, "/v3/kv/txn", req, &reply, err, errlen) : -1;
	json_decref(req);
	if (rc)
		return -1;
	rc = json_is_true(json_object_get(reply, "succeeded"));
	*rev = etcd_int(json_object_get(json_object_get(reply, "header"), "revision"));
	json_decref(reply);
	return rc;
}

static enum MHD_Result unreachable(struct srv_req *r, const char *what, const char *err)
{
	return srv_reply_error(r, 503, "cluster: etcd did not take the %s, nothing changed: %s",
			       what, err);
}

/* the image and files of sp put in the shared store, their digests in v */
static int put_blobs(struct srv *s, const struct srv_spec *sp, json_t *v, unsigned *status,
		     char *err, size_t errlen)
{
	char digest[CSTORE_DIGEST_MAX], path[SRV_PATH_MAX];
	uint8_t *img;
	size_t len;
	*status = 500;
	json_object_set_new(v, "origin", json_string(s->cluster->self)); /* serves the blobs */
	if (sp->files_len) {
		if (cstore_put(s->opt.store_dir, sp->files, sp->files_len, digest, err, errlen))
			return -1;
		json_object_set_new(v, "files", json_string(digest));
	}
	if (!sp->image[0])
		return 0;
	if (store_path(s, "images", sp->image, "", path, sizeof(path)) ||
	    base_read_file(path, 1ULL << 32, &img, &len)) {
		*status = 400;
		return snprintf(err, errlen,
				"image '%s' was not uploaded to this node (PUT /system/images/%s "
				"here first)",
				sp->image, sp->image),
		       -1;
	}
	int rc = cstore_put(s->opt.store_dir, img, len, digest, err, errlen);
	free(img);
	if (!rc)
		json_object_set_new(v, "image", json_string(digest));
	return rc;
}

/* sp loaded here once and dropped: a deployment that cannot load is refused as a node alone
 * refuses it, before etcd (and every node) has it */
static int trial(struct srv *s, const struct srv_spec *sp, char *err, size_t errlen)
{
	struct srv_inst *inst;
	int rc = load_spec(s, sp, NULL, &inst, err, errlen);
	if (!rc) {
		inst->retired = 1;
		inst_unload(inst);
	}
	return rc;
}

enum MHD_Result cluster_deploy(struct srv *s, struct srv_req *r, const json_t *in, int update)
{
	char err[SRV_ERR_MAX];
	const char *svc = json_string_value(json_object_get(in, "service"));
	json_t *kv = NULL, *old = NULL;
	struct srv_spec *sp = NULL;
	unsigned status;
	int64_t rev = 0;
	int rc;
	enum MHD_Result ret;
	if (!svc || !srv_name_ok(svc))
		return srv_reply_error(r, 400, "service must be a function name");
	if (current(s, svc, &kv, err, sizeof(err)))
		return unreachable(r, "deployment", err);
	if (kv) {
		size_t n;
		char *text = etcd_unb64(json_object_get(kv, "value"), &n);
		old = text ? json_loads(text, 0, NULL) : NULL;
		free(text);
	}
	if (kv && !update)
		ret = srv_reply_error(r, 409,
				      "function '%s' is already deployed (PUT /system/functions "
				      "updates it)",
				      svc);
	else if (!kv && update)
		ret = srv_reply_error(r, 404, "function '%s' not found", svc);
	else if (spec_parse(in,
			    json_string_value(
				json_object_get(json_object_get(old, "deploy"), "createdAt")),
			    &sp, err, sizeof(err)))
		ret = srv_reply_error(r, 400, "%s", err);
	else if ((rc = trial(s, sp, err, sizeof(err))))
		ret = srv_reply_load_error(r, rc, err);
	else {
		json_t *doc = json_deep_copy(sp->doc);
		json_object_del(doc, "files"); /* in the store, by its digest */
		json_t *v = json_pack("{s:o}", "deploy", doc);
		if (put_blobs(s, sp, v, &status, err, sizeof(err)))
			ret = srv_reply_error(r, status, "%s", err);
		else {
			char *text = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
			json_t *op = json_pack("{s:{s:o,s:o}}", "request_put", "key", key_of(svc),
					       "value", etcd_b64(text, strlen(text)));
			free(text);
			rc = txn(s, unchanged(svc, kv), op, &rev, err, sizeof(err));
			ret =
			    rc < 0 ? unreachable(r, "deployment", err)
			    : !rc
				? srv_reply_error(r, 409,
						  "function '%s' was changed meanwhile by "
						  "another deploy: try again",
						  svc)
				: srv_reply_json(r, 202,
						 json_pack("{s:s,s:I,s:s}", "name", svc, "revision",
							   (json_int_t)rev, "cluster", "etcd"));
			if (rc > 0)
				srv_log(s, "info", "%s %s in etcd at revision %lld",
					kv ? "updated" : "deployed", svc, (long long)rev);
		}
		json_decref(v);
	}
	spec_put(sp);
	json_decref(old);
	json_decref(kv);
	return ret;
}

enum MHD_Result cluster_delete(struct srv *s, struct srv_req *r, const char *name)
{
	char err[SRV_ERR_MAX];
	json_t *kv;
	int64_t rev = 0;
	if (current(s, name, &kv, err, sizeof(err)))
		return unreachable(r, "delete", err);
	if (!kv)
		return srv_reply_error(r, 404, "function '%s' not found", name);
	json_t *op = json_pack("{s:{s:o}}", "request_delete_range", "key", key_of(name));
	int rc = txn(s, unchanged(name, kv), op, &rev, err, sizeof(err));
	json_decref(kv);
	if (rc < 0)
		return unreachable(r, "delete", err);
	if (!rc)
		return srv_reply_error(r, 409, "function '%s' was changed meanwhile: try again",
				       name);
	srv_log(s, "info", "deleted %s in etcd at revision %lld", name, (long long)rev);
	return srv_reply_json(r, 202,
			      json_pack("{s:s,s:I}", "deleted", name, "revision", (json_int_t)rev));
}
