/* Membership: this node registered in etcd under a lease, the ring of the nodes registered, and
 * the functions it owns (or owns next) loaded and snapshotted; the others wait for a call. */
#include <stdlib.h>
#include <string.h>

#include "server/srv_cluster_impl.h"
#include "server/srv_registry.h"
#include "server/srv_spec.h"

#define LEASE_TTL_S  3	  /* a node gone without a word leaves the ring after this */
#define TICK_S	     1.0  /* keepalive and membership read */
#define SPARE_IDLE_S 10.0 /* a function no longer held is dropped once idle this long */

int cluster_stopping(void *ctx)
{
	struct srv *s = ctx;
	return atomic_load(&s->stopping);
}

void cluster_pause(struct srv *s, double secs)
{
	struct timespec ts;
	base_deadline(&ts, secs);
	pthread_mutex_lock(&s->mu);
	if (!s->stopping)
		pthread_cond_timedwait(&s->reaper_cv, &s->mu, &ts);
	pthread_mutex_unlock(&s->mu);
}

/* POSTs {"ID": lease} (and more) to path; the reply's TTL (0: the lease is gone), -1 on failure */
static long lease_call(struct srv_cluster *c, const char *path, char *err, size_t errlen)
{
	char id[32];
	json_t *reply = NULL;
	snprintf(id, sizeof(id), "%lld", (long long)c->lease);
	json_t *req = json_pack("{s:s}", "ID", id);
	int rc = req ? etcd_call(c->ec, path, req, &reply, err, errlen) : -1;
	json_decref(req);
	json_t *res = json_object_get(reply, "result");
	long ttl = rc ? -1 : (long)etcd_int(json_object_get(res ? res : reply, "TTL"));
	json_decref(reply);
	return ttl;
}

/* this node's key under a live lease: kept alive, or made anew (a lease that expired) */
static int keep_registered(struct srv_cluster *c, char *err, size_t errlen)
{
	if (c->lease) {
		long ttl = lease_call(c, "/v3/lease/keepalive", err, errlen);
		if (ttl > 0)
			return 0;
		if (ttl < 0)
			return -1;
		c->lease = 0; /* expired (etcd was away too long): register again */
	}
	json_t *reply = NULL, *req = json_pack("{s:i}", "TTL", LEASE_TTL_S);
	int rc = req ? etcd_call(c->ec, "/v3/lease/grant", req, &reply, err, errlen) : -1;
	json_decref(req);
	int64_t lease = rc ? 0 : etcd_int(json_object_get(reply, "ID"));
	json_decref(reply);
	if (!lease)
		return rc ? -1 : (snprintf(err, errlen, "etcd granted no lease"), -1);
	char key[sizeof(CLUSTER_NODES) + CLUSTER_ADDR_MAX], id[32];
	snprintf(key, sizeof(key), CLUSTER_NODES "%s", c->self);
	snprintf(id, sizeof(id), "%lld", (long long)lease);
	req = json_pack("{s:o,s:o,s:s}", "key", etcd_b64(key, strlen(key)), "value",
			etcd_b64(c->self, strlen(c->self)), "lease", id);
	reply = NULL;
	rc = req ? etcd_call(c->ec, "/v3/kv/put", req, &reply, err, errlen) : -1;
	json_decref(req);
	json_decref(reply);
	if (!rc)
		c->lease = lease;
	return rc;
}

static int by_addr(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* the members etcd has, this node among them, sorted: n, or -1 */
static long read_members(struct srv_cluster *c, char (**out)[CLUSTER_ADDR_MAX], char *err,
			 size_t errlen)
{
	json_t *reply = NULL, *req = etcd_prefix_range(CLUSTER_NODES);
	int rc = req ? etcd_call(c->ec, "/v3/kv/range", req, &reply, err, errlen) : -1;
	json_decref(req);
	if (rc)
		return -1;
	json_t *kvs = json_object_get(reply, "kvs"), *kv;
	char(*m)[CLUSTER_ADDR_MAX] = calloc(json_array_size(kvs) + 1, sizeof(*m));
	size_t i, n = 0;
	int self = 0;
	json_array_foreach(kvs, i, kv)
	{
		size_t len;
		char *v = m ? etcd_unb64(json_object_get(kv, "value"), &len) : NULL;
		if (v && len < CLUSTER_ADDR_MAX && ring_addr_id(v)) {
			self |= !strcmp(v, c->self);
			strcpy(m[n++], v);
		}
		free(v);
	}
	json_decref(reply);
	if (!m)
		return snprintf(err, errlen, "out of memory"), -1;
	if (!self) /* not registered (yet, or etcd lost its lease): a node counts itself */
		strcpy(m[n++], c->self);
	qsort(m, n, sizeof(*m), by_addr);
	*out = m;
	return (long)n;
}

int cluster_role_locked(struct srv_cluster *c, const char *name, char *owner, char *next)
{
	owner[0] = next[0] = 0;
	if (!c->ring.n)
		return ROLE_UNKNOWN;
	long o = ring_pick(&c->ring, name, -1), x = o < 0 ? -1 : ring_pick(&c->ring, name, o);
	if (o >= 0)
		srv_copy(owner, CLUSTER_ADDR_MAX, c->members[o]);
	if (x >= 0)
		srv_copy(next, CLUSTER_ADDR_MAX, c->members[x]);
	return !strcmp(owner, c->self)	? ROLE_OWNER
	       : !strcmp(next, c->self) ? ROLE_NEXT
					: ROLE_NONE;
}

int cluster_role(struct srv_cluster *c, const char *name)
{
	char o[CLUSTER_ADDR_MAX], x[CLUSTER_ADDR_MAX];
	pthread_mutex_lock(&c->mu);
	int role = cluster_role_locked(c, name, o, x);
	pthread_mutex_unlock(&c->mu);
	return role;
}

/* the new membership m (taken): 1 when it differs from the one before */
static int set_members(struct srv *s, char (*m)[CLUSTER_ADDR_MAX], size_t n)
{
	struct srv_cluster *c = s->cluster;
	uint32_t *ids = calloc(n, sizeof(*ids));
	struct ring r = {0};
	for (size_t i = 0; ids && i < n; i++)
		ids[i] = ring_addr_id(m[i]);
	pthread_mutex_lock(&c->mu);
	int changed = n != c->nmembers || memcmp(m, c->members, n * sizeof(*m));
	if (changed && ids && !ring_build(&r, ids, n)) {
		ring_free(&c->ring);
		c->ring = r;
		free(c->members);
		c->members = m;
		c->nmembers = n;
		m = NULL;
		c->rebalances++;
	}
	c->ring_tried = 1;
	pthread_mutex_unlock(&c->mu);
	free(ids);
	free(m);
	return changed;
}

int reg_drop(struct srv *s, const char *name, double idle_s)
{
	struct srv_inst *dead = NULL;
	pthread_mutex_lock(&s->mu);
	struct srv_entry *e = reg_find(s, name, NULL);
	int gone = !e || !e->inst;
	if (e && e->inst && !e->inflight && !e->loading && !e->spec->min_warm &&
	    srv_now() - e->last_used >= idle_s) {
		e->inst->retired = 1; /* its snapshot too: the owners have theirs */
		dead = reg_inst_put(e->inst);
		e->inst = NULL;
	}
	pthread_mutex_unlock(&s->mu);
	inst_unload(dead);
	return dead ? 1 : gone ? 2 : 0;
}

enum { ACT_NONE, ACT_LOAD, ACT_DROP };

static void unprepare(struct srv_cluster *c, const char *name)
{
	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < c->nfns; i++)
		if (!strcmp(c->fns[i].name, name) && !ROLE_HELD(c->fns[i].role))
			c->fns[i].prepared = 0;
	pthread_mutex_unlock(&c->mu);
}

/* each function's role under the ring: loaded when it became held; one loaded as held that no
 * longer is, dropped once idle (a function loaded by a call is left to its keepAlive) */
static void rebalance(struct srv *s)
{
	struct srv_cluster *c = s->cluster;
	pthread_mutex_lock(&c->mu);
	size_t n = c->nfns;
	char(*names)[SRV_NAME_MAX] = calloc(n ? n : 1, sizeof(*names));
	int *act = calloc(n ? n : 1, sizeof(*act));
	for (size_t i = 0; names && act && i < n; i++) {
		struct cluster_fn *f = &c->fns[i];
		int role = cluster_role_locked(c, f->name, f->owner, f->next);
		strcpy(names[i], f->name);
		if (ROLE_HELD(role) && !f->prepared && !f->err[0])
			act[i] = ACT_LOAD, f->prepared = 1;
		else if (!ROLE_HELD(role) && f->prepared) /* tried again until idle */
			act[i] = ACT_DROP;
		f->role = role;
	}
	pthread_mutex_unlock(&c->mu);
	for (size_t i = 0; names && act && i < n && !cluster_stopping(s); i++) {
		if (act[i] == ACT_LOAD && !reg_load(s, names[i]))
			srv_log(s, "info", "cluster: %s loaded here (its owner or next owner)",
				names[i]);
		else if (act[i] == ACT_DROP) {
			int d = reg_drop(s, names[i], SPARE_IDLE_S);
			if (d == 1)
				srv_log(s, "info",
					"cluster: %s unloaded (another node owns it now)",
					names[i]);
			if (d)
				unprepare(c, names[i]);
		}
	}
	free(names);
	free(act);
}

/* the loader: what the ring gives this node loaded, what it took away dropped, each tick (apart
 * from the members thread, so that a long load never delays the lease's keepalive) */
void *cluster_loader(void *p)
{
	struct srv *s = p;
	while (!cluster_stopping(s)) {
		if (atomic_load(&s->ready))
			rebalance(s);
		cluster_pause(s, TICK_S);
	}
	return NULL;
}

static void log_members(struct srv *s)
{
	struct srv_cluster *c = s->cluster;
	char list[1024] = "";
	size_t used = 0;
	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < c->nmembers && used < sizeof(list); i++)
		used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s", i ? " " : "",
					 c->members[i]);
	size_t n = c->nmembers;
	pthread_mutex_unlock(&c->mu);
	srv_log(s, "info", "cluster: %zu node%s on the ring: %s", n, n == 1 ? "" : "s", list);
}

void *cluster_members(void *p)
{
	struct srv *s = p;
	struct srv_cluster *c = s->cluster;
	char err[SRV_ERR_MAX];
	int warned = 0;
	while (!cluster_stopping(s)) {
		char(*m)[CLUSTER_ADDR_MAX] = NULL;
		long n = keep_registered(c, err, sizeof(err))
			     ? -1
			     : read_members(c, &m, err, sizeof(err));
		if (n < 0) {
			if (!warned++)
				srv_log(s, "warning", "cluster: membership: %s", err);
			pthread_mutex_lock(&c->mu);
			c->ring_tried = 1; /* the ring as it was (none at first: load all) */
			pthread_mutex_unlock(&c->mu);
		} else {
			warned = 0;
			if (set_members(s, m, (size_t)n))
				log_members(s);
		}
		cluster_pause(s, TICK_S);
	}
	if (c->lease) /* leaving: the others take this node's functions now, not at expiry */
		lease_call(c, "/v3/lease/revoke", err, sizeof(err));
	return NULL;
}
