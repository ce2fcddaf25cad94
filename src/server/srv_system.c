/* The /system routes for functions (deploy, update, delete, list, get) and health and info. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/srv_cluster.h"
#include "server/srv_core.h"
#include "server/srv_spec.h"
#include "server/srv_store.h"
#include "server/srv_registry.h"
#include "server/srv_http.h"
#include "server/srv_workers.h"

enum MHD_Result h_healthz(struct srv *s, struct srv_req *r)
{
	(void)s;
	return srv_reply(r, 200, "text/plain; charset=utf-8", "OK\n", 3, 0, NULL, 0);
}

/* ready once the deployments kept in the state folder have been loaded, or tried and logged */
enum MHD_Result h_readyz(struct srv *s, struct srv_req *r)
{
	pthread_mutex_lock(&s->mu);
	int stopping = s->stopping;
	pthread_mutex_unlock(&s->mu);
	if (stopping)
		return srv_reply_error(r, 503, "shutting down");
	if (!atomic_load(&s->ready) || !cluster_synced(s))
		return srv_reply_error(r, 503, "loading the deployed functions");
	return srv_reply(r, 200, "text/plain; charset=utf-8", "OK\n", 3, 0, NULL, 0);
}

json_t *srv_info(struct srv *s)
{
	struct reg_gauges g;
	reg_gauges(s, &g);
	json_t *ver =
	    json_pack("{s:s,s:s,s:s}", "release", EMBER_VERSION, "sha", "", "commit_message", "");
	json_t *j = json_pack("{s:{s:s,s:s,s:O},s:o,s:s,s:{s:s,s:s,s:I,s:I,s:I,s:f}}", "provider",
			      "provider", "ember", "orchestration", "virtines", "version", ver,
			      "version", ver, "arch", "x86_64", "ember", "backend", s->backend,
			      "stateDir", s->state, "maxBodyBytes", (json_int_t)s->opt.max_body,
			      "maxImageBytes", (json_int_t)s->opt.max_image, "functions",
			      (json_int_t)g.functions, "uptimeSeconds", srv_now() - s->started);
	if (s->cluster)
		json_object_set_new(json_object_get(j, "ember"), "cluster", cluster_info(s));
	if (s->opt.workers > 1)
		json_object_set_new(json_object_get(j, "ember"), "worker", workers_self(s));
	return j;
}

enum MHD_Result h_info(struct srv *s, struct srv_req *r)
{
	return srv_reply_json(r, 200, srv_info(s));
}

enum MHD_Result h_list(struct srv *s, struct srv_req *r)
{
	return srv_reply_json(r, 200, reg_list(s));
}

enum MHD_Result h_get(struct srv *s, struct srv_req *r)
{
	json_t *j = reg_status(s, r->name);
	if (!j)
		return srv_reply_error(r, 404, "function '%s' not found", r->name);
	return srv_reply_json(r, 200, j);
}

/* Stores the deployment; 0 or a kind. Its image (pin, a temporary link; "" for a runtime) gets a
 * name of its own first, then the JSON that names it goes to a temporary file (a full disk fails
 * there, before anything changed) and replaces the old one in one rename; the old version's
 * image goes once the table has switched (deploy_locked). A crash or a failure at any point
 * leaves the old version whole (a new deployment: no file) or the new one. */
static int save(struct srv *s, struct srv_spec *sp, const char *pin, char *err, size_t errlen)
{
	int rc;
	if (pin[0] && (rc = pin_commit(s, pin, sp, err, errlen)))
		return rc;
	json_t *doc = json_copy(sp->doc);
	if (doc && sp->pin[0])
		json_object_set_new(doc, "imageFile", json_string(sp->pin));
	char *text = doc ? json_dumps(doc, JSON_INDENT(1) | JSON_SORT_KEYS) : NULL;
	json_decref(doc);
	rc = text ? store_write(s, "functions", sp->name, ".json", text, strlen(text), err, errlen)
		  : (snprintf(err, errlen, "out of memory"), EMBER_ERR_NOMEM);
	free(text);
	if (rc) {
		pin_remove(s, sp->pin);
		sp->pin[0] = 0;
	}
	return rc;
}

/* how a deployment is applied: created (POST), updated (PUT), or either (the cluster's watcher) */
enum { APPLY_CREATE, APPLY_UPDATE, APPLY_EITHER };
/* why it was not: an HTTP status (400, 404, 409, 500) or a kind of load failure */
struct apply_fail {
	unsigned status;
	int kind;
	char err[SRV_ERR_MAX];
};

/* a deployment made or replaced, with s->admin held: 0, or -1 and f (created: the createdAt of
 * APPLY_EITHER's deployment) */
static int apply_locked(struct srv *s, const json_t *in, int mode, const char *created, int load,
			struct apply_fail *f, char *name_out)
{
	char *err = f->err;
	size_t errlen = sizeof(f->err);
	const char *svc = json_string_value(json_object_get(in, "service"));
	struct srv_spec *old = svc ? reg_spec(s, svc) : NULL, *sp;
	if (mode == APPLY_UPDATE)
		created = old ? json_string_value(json_object_get(old->doc, "createdAt")) : NULL;
	int rc = spec_parse(in, created, &sp, err, errlen);
	int update = old != NULL;
	char old_pin[sizeof(sp->pin)] = "";
	if (old)
		snprintf(old_pin, sizeof(old_pin), "%s", old->pin);
	spec_put(old);
	if (rc)
		return f->status = 400, -1;
	if (old && mode == APPLY_CREATE) {
		spec_put(sp);
		snprintf(err, errlen,
			 "function '%s' is already deployed (PUT /system/functions updates it)",
			 svc);
		return f->status = 409, -1;
	}
	if (!old && mode == APPLY_UPDATE) {
		spec_put(sp);
		snprintf(err, errlen, "function '%s' not found", svc);
		return f->status = 404, -1;
	}
	struct srv_inst *inst = NULL;
	char pin[SRV_PATH_MAX] = "";
	if (sp->image[0] && (rc = pin_link(s, sp->image, pin, sizeof(pin), err, errlen))) {
		spec_put(sp);
		return f->kind = rc, -1;
	}
	rc = load ? load_spec(s, sp, pin[0] ? pin : NULL, &inst, err, errlen) : 0;
	if (rc) {
		if (pin[0])
			unlink(pin);
		spec_put(sp);
		return f->kind = rc, -1;
	}
	if ((rc = save(s, sp, pin, err, errlen))) {
		spec_put(sp);
		if (inst)
			inst->retired = 1; /* never deployed */
		inst_unload(inst);
		return f->kind = rc, -1;
	}
	char name[SRV_NAME_MAX], new_pin[sizeof(sp->pin)];
	strcpy(name, sp->name);
	strcpy(new_pin, sp->pin);
	rc = update ? reg_replace(s, sp, inst) : reg_add(s, sp, inst);
	if (rc == REG_NOMEM && !update) { /* not deployed: its files go too */
		store_remove(s, "functions", name, ".json");
		pin_remove(s, new_pin);
	}
	if (rc) {
		snprintf(err, errlen,
			 rc == REG_NOMEM ? "out of memory" : "function '%s' changed meanwhile",
			 name);
		return f->status = 500, -1;
	}
	/* no load of the old version starts from now on (one already started fails and retries) */
	if (strcmp(old_pin, new_pin))
		pin_remove(s, old_pin);
	srv_log(s, "info", "%s %s", update ? "updated" : "deployed", name);
	strcpy(name_out, name);
	return 0;
}

int sys_apply(struct srv *s, const json_t *in, const char *created, int load, char *err,
	      size_t errlen)
{
	struct apply_fail f = {0};
	char name[SRV_NAME_MAX];
	pthread_mutex_lock(&s->admin);
	int rc = apply_locked(s, in, APPLY_EITHER, created, load, &f, name);
	pthread_mutex_unlock(&s->admin);
	if (rc)
		snprintf(err, errlen, "%s", f.err);
	return rc;
}

static enum MHD_Result deploy(struct srv *s, struct srv_req *r, int update)
{
	enum MHD_Result ret;
	json_t *in = srv_body_json(r, &ret);
	if (!in)
		return ret;
	if (s->cluster) { /* etcd holds the deployments: this node converges like the others */
		ret = cluster_deploy(s, r, in, update);
		json_decref(in);
		return ret;
	}
	struct apply_fail f = {0};
	char name[SRV_NAME_MAX];
	pthread_mutex_lock(&s->admin);
	int rc = apply_locked(s, in, update ? APPLY_UPDATE : APPLY_CREATE, NULL, 1, &f, name);
	pthread_mutex_unlock(&s->admin);
	json_decref(in);
	if (rc && f.kind)
		return srv_reply_load_error(r, f.kind, f.err);
	if (rc)
		return srv_reply_error(r, f.status, "%s", f.err);
	if (s->opt.workers > 1) /* before the answer: a call after it finds it in every worker */
		workers_notify(s, "name", name);
	json_t *st = reg_status(s, name);
	return st ? srv_reply_json(r, 202, st) : srv_reply_error(r, 500, "deleted meanwhile");
}

enum MHD_Result h_deploy(struct srv *s, struct srv_req *r)
{
	return deploy(s, r, 0);
}

enum MHD_Result h_update(struct srv *s, struct srv_req *r)
{
	return deploy(s, r, 1);
}

int sys_remove(struct srv *s, const char *name)
{
	pthread_mutex_lock(&s->admin);
	struct srv_spec *sp = reg_spec(s, name);
	int rc = reg_remove(s, name);
	if (rc == REG_OK && store_remove(s, "functions", name, ".json"))
		srv_log(s, "error", "cannot remove functions/%s.json", name);
	if (rc == REG_OK && sp) /* after the JSON: a crash between leaves a pin swept at start */
		pin_remove(s, sp->pin);
	spec_put(sp);
	pthread_mutex_unlock(&s->admin);
	if (rc == REG_OK)
		srv_log(s, "info", "deleted %s", name);
	return rc;
}

enum MHD_Result h_delete(struct srv *s, struct srv_req *r)
{
	enum MHD_Result ret;
	json_t *in = srv_body_json(r, &ret);
	if (!in)
		return ret;
	char name[SRV_NAME_MAX];
	const char *fn = json_string_value(json_object_get(in, "functionName"));
	if (!json_is_object(in) || !fn || !srv_name_ok(fn)) {
		json_decref(in);
		return srv_reply_error(r, 400, "functionName must be a function name");
	}
	strcpy(name, fn);
	json_decref(in);
	if (s->cluster)
		return cluster_delete(s, r, name);
	int rc = sys_remove(s, name);
	if (rc)
		return srv_reply_error(r, 404, "function '%s' not found", name);
	if (s->opt.workers > 1)
		workers_notify(s, "name", name);
	return srv_reply_json(r, 202, json_pack("{s:s}", "deleted", name));
}
