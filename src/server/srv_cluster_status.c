/* What a node converged to from etcd: its table per function, shown in status, info and /metrics.
 */
#include <stdlib.h>
#include <string.h>

#include "server/srv_cluster_impl.h"
#include "server/srv_core.h"
#include "server/srv_spec.h"

/* with c->mu held: the record of name, made when make is set (NULL: none, or out of memory) */
static struct cluster_fn *find(struct srv_cluster *c, const char *name, int make)
{
	for (size_t i = 0; i < c->nfns; i++)
		if (!strcmp(c->fns[i].name, name))
			return &c->fns[i];
	if (!make)
		return NULL;
	if (c->nfns == c->capfns) {
		size_t cap = c->capfns ? 2 * c->capfns : 16;
		struct cluster_fn *f = realloc(c->fns, cap * sizeof(*f));
		if (!f)
			return NULL;
		c->fns = f;
		c->capfns = cap;
	}
	struct cluster_fn *f = &c->fns[c->nfns++];
	memset(f, 0, sizeof(*f));
	srv_copy(f->name, sizeof(f->name), name);
	return f;
}

void cluster_record(struct srv_cluster *c, const char *name, int64_t rev, int64_t version,
		    const char *err, int loaded)
{
	pthread_mutex_lock(&c->mu);
	struct cluster_fn *f = find(c, name, 1);
	if (f) {
		f->revision = rev;
		f->version = version;
		if (loaded >= 0)
			f->prepared = loaded;
		f->role = cluster_role_locked(c, name, f->owner, f->next);
		srv_copy(f->err, sizeof(f->err), err ? err : "");
	}
	if (err)
		c->failures++;
	pthread_mutex_unlock(&c->mu);
}

void cluster_forget(struct srv_cluster *c, const char *name)
{
	pthread_mutex_lock(&c->mu);
	struct cluster_fn *f = find(c, name, 0);
	if (f)
		*f = c->fns[--c->nfns];
	pthread_mutex_unlock(&c->mu);
}

int cluster_synced(struct srv *s)
{
	struct srv_cluster *c = s->cluster;
	if (!c)
		return 1;
	pthread_mutex_lock(&c->mu);
	int synced = c->synced;
	pthread_mutex_unlock(&c->mu);
	return synced;
}

static const char *const role_names[] = {"unknown", "none", "next", "owner"};

static json_t *fn_json(const struct cluster_fn *f)
{
	json_t *j = json_pack("{s:I,s:I,s:s,s:s,s:s}", "revision", (json_int_t)f->revision,
			      "version", (json_int_t)f->version, "role", role_names[f->role],
			      "owner", f->owner, "nextOwner", f->next);
	if (j && f->err[0])
		json_object_set_new(j, "error", json_string(f->err));
	return j;
}

/* with c->mu held: how many functions this node holds as role */
static size_t holding(const struct srv_cluster *c, int role)
{
	size_t n = 0;
	for (size_t i = 0; i < c->nfns; i++)
		n += c->fns[i].role == role;
	return n;
}

void cluster_annotate(struct srv *s, json_t *st)
{
	struct srv_cluster *c = s->cluster;
	const char *name = json_string_value(json_object_get(st, "name"));
	if (!c || !name)
		return;
	pthread_mutex_lock(&c->mu);
	struct cluster_fn *f = find(c, name, 0);
	if (f)
		json_object_set_new(st, "cluster", fn_json(f));
	pthread_mutex_unlock(&c->mu);
}

json_t *cluster_info(struct srv *s)
{
	struct srv_cluster *c = s->cluster;
	if (!c)
		return json_null();
	json_t *fns = json_object();
	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; fns && i < c->nfns; i++)
		json_object_set_new(fns, c->fns[i].name, fn_json(&c->fns[i]));
	json_t *members = json_array();
	for (size_t i = 0; members && i < c->nmembers; i++)
		json_array_append_new(members, json_string(c->members[i]));
	json_t *j = json_pack(
	    "{s:s,s:s,s:I,s:b,s:b,s:s,s:o,s:s,s:o,s:I,s:I,s:I}", "etcd", s->opt.cluster, "store",
	    s->opt.store_dir, "revision", (json_int_t)c->revision, "connected", c->connected,
	    "synced", c->synced, "lastError", c->last_err, "functions", fns ? fns : json_object(),
	    "self", c->self, "members", members ? members : json_array(), "owned",
	    (json_int_t)holding(c, ROLE_OWNER), "nextOwned", (json_int_t)holding(c, ROLE_NEXT),
	    "rebalances", (json_int_t)c->rebalances);
	pthread_mutex_unlock(&c->mu);
	return j;
}

void cluster_metrics(FILE *f, struct srv *s)
{
	struct srv_cluster *c = s->cluster;
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	fprintf(
	    f,
	    "# HELP ember_cluster_revision The etcd revision this node has converged to.\n"
	    "# TYPE ember_cluster_revision gauge\nember_cluster_revision %lld\n"
	    "# HELP ember_cluster_connected 1 while this node watches etcd.\n"
	    "# TYPE ember_cluster_connected gauge\nember_cluster_connected %d\n"
	    "# HELP ember_cluster_apply_failures_total Deployments from etcd this node could "
	    "not apply.\n# TYPE ember_cluster_apply_failures_total counter\n"
	    "ember_cluster_apply_failures_total %llu\n"
	    "# HELP ember_cluster_function_revision The etcd revision of each function this node "
	    "applied (-1: it failed).\n# TYPE ember_cluster_function_revision gauge\n",
	    (long long)c->revision, c->connected, (unsigned long long)c->failures);
	for (size_t i = 0; i < c->nfns; i++)
		fprintf(f, "ember_cluster_function_revision{function_name=\"%s\"} %lld\n",
			c->fns[i].name, c->fns[i].err[0] ? -1LL : (long long)c->fns[i].revision);
	fprintf(f,
		"# HELP ember_cluster_members The nodes on the ring (registered in etcd).\n"
		"# TYPE ember_cluster_members gauge\nember_cluster_members %zu\n"
		"# HELP ember_cluster_owned_functions The functions this node owns on the ring.\n"
		"# TYPE ember_cluster_owned_functions gauge\nember_cluster_owned_functions %zu\n"
		"# HELP ember_cluster_next_owned_functions The functions this node owns next (it "
		"takes them when their owner goes).\n# TYPE ember_cluster_next_owned_functions "
		"gauge\nember_cluster_next_owned_functions %zu\n"
		"# HELP ember_cluster_function_role This node's role for each function: 2 its "
		"owner, 1 its next owner, 0 neither (loaded on a call).\n"
		"# TYPE ember_cluster_function_role gauge\n",
		c->nmembers, holding(c, ROLE_OWNER), holding(c, ROLE_NEXT));
	for (size_t i = 0; i < c->nfns; i++)
		fprintf(f, "ember_cluster_function_role{function_name=\"%s\"} %d\n", c->fns[i].name,
			ROLE_HELD(c->fns[i].role) ? c->fns[i].role - ROLE_NONE : 0);
	pthread_mutex_unlock(&c->mu);
}
