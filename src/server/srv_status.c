/* The function table seen from outside: status objects, gauges, eviction of idle functions. */
#include <stdlib.h>
#include <string.h>

#include "server/srv_cluster.h"
#include "server/srv_core.h"
#include "server/srv_spec.h"
#include "server/srv_registry.h"

#define EVICT_BATCH 16

/* OpenFaaS's FunctionStatus, with Ember's fields (s->mu held) */
static json_t *status_locked(struct srv_entry *e)
{
	/* a shallow copy: the files (base64, as large as an image) are never copied; "ember",
	 * which gets the live fields, is the copy's own */
	json_t *j = json_copy(e->spec->doc);
	if (!j)
		return NULL;
	json_object_set_new(j, "ember", json_deep_copy(json_object_get(j, "ember")));
	json_object_del(j, "code");
	if (e->spec->files)
		json_object_set_new(j, "files",
				    json_pack("{s:I,s:s}", "bytes", (json_int_t)e->spec->files_len,
					      "sha256", e->spec->files_sha256));
	json_object_del(j, "service");
	json_object_set_new(j, "name", json_string(e->spec->name));
	struct ember_info info = {0};
	if (e->inst)
		ember_info(e->inst->fn, &info);
	uint64_t replicas = e->inst ? info.ready + e->inflight : 0;
	uint64_t mem = e->inst ? e->inst->mem_bytes : 0;
	json_object_set_new(j, "invocationCount", json_integer((json_int_t)e->invocations));
	unsigned inflight = e->inflight, queued = e->queued;
	json_object_set_new(j, "replicas", json_integer((json_int_t)replicas));
	json_object_set_new(j, "availableReplicas", json_integer((json_int_t)info.ready));
	json_object_set_new(j, "usage",
			    json_pack("{s:I}", "totalMemoryBytes", (json_int_t)(mem * replicas)));
	json_t *em = json_object_get(j, "ember");
	/* what its virtines run with, given or not (the stored deployment has them only when
	 * given, so that one without them follows Ember's defaults) */
	json_object_set_new(em, "cpus", json_integer(e->spec->cpus ? e->spec->cpus : 1));
	json_object_set_new(
	    em, "threads", json_integer(e->spec->threads ? e->spec->threads : SRV_THREADS_DEFAULT));
	json_object_set_new(em, "pids",
			    json_integer(e->spec->pids ? e->spec->pids : SRV_PIDS_DEFAULT));
	json_object_set_new(em, "loaded", json_boolean(e->inst != NULL));
	json_object_set_new(em, "inflight", json_integer(inflight));
	json_object_set_new(em, "queued", json_integer(queued));
	if (e->inst) {
		json_object_set_new(em, "backend", json_string(info.backend));
		/* what its virtines run with: the deployment's, else the server's default */
		json_object_set_new(em, "syscalls", json_string(info.syscalls));
		json_object_set_new(em, "snapshot", json_boolean(info.snapshot));
		json_object_set_new(em, "initSeconds", json_real((double)info.init_us / 1e6));
		json_object_set_new(em, "guestMemoryBytes",
				    json_integer((json_int_t)info.mem_bytes));
		/* its invocations wait for a costly slot (srv_cpu.c) */
		json_object_set_new(em, "costly", json_boolean(atomic_load(&e->inst->costly)));
		struct ember_memory m;
		if (!ember_memory(e->inst->fn, &m))
			json_object_set_new(
			    em, "memory",
			    json_pack("{s:s,s:s?,s:I,s:i,s:I,s:I,s:I,s:I,s:I}", "sharing",
				      m.sharing, "domain", m.domain, "snapshotBytes",
				      (json_int_t)m.snapshot_bytes, "virtines", (int)m.virtines,
				      "sharedBytes", (json_int_t)m.shared_bytes, "privateBytes",
				      (json_int_t)m.private_bytes, "domainBytes",
				      (json_int_t)m.domain_bytes, "hostMaps",
				      (json_int_t)m.host_maps, "hostFds", (json_int_t)m.host_fds));
		json_object_set_new(
		    em, "pool",
		    json_pack("{s:i,s:i,s:i,s:i,s:i,s:I,s:I,s:I}", "ready", (int)info.ready,
			      "inUse", (int)info.in_use, "target", (int)info.target, "peak",
			      (int)info.peak, "capacity", (int)info.capacity, "refills",
			      (json_int_t)info.refills, "trims", (json_int_t)info.trims, "restores",
			      (json_int_t)info.restores));
	}
	return j;
}

json_t *reg_status(struct srv *s, const char *name)
{
	pthread_mutex_lock(&s->mu);
	struct srv_entry *e = reg_find(s, name, NULL);
	json_t *j = e ? status_locked(e) : NULL;
	pthread_mutex_unlock(&s->mu);
	if (j)
		cluster_annotate(s, j);
	return j;
}

json_t *reg_list(struct srv *s)
{
	json_t *a = json_array();
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; a && i < s->nfns; i++)
		json_array_append_new(a, status_locked(s->fns[i]));
	pthread_mutex_unlock(&s->mu);
	size_t i;
	json_t *st;
	json_array_foreach(a, i, st) cluster_annotate(s, st);
	return a;
}

void reg_gauges(struct srv *s, struct reg_gauges *g)
{
	memset(g, 0, sizeof(*g));
	pthread_mutex_lock(&s->mu);
	g->functions = s->nfns;
	for (size_t i = 0; i < s->nfns; i++) {
		struct srv_entry *e = s->fns[i];
		struct ember_info info = {0};
		if (e->inst)
			ember_info(e->inst->fn, &info);
		g->ready += info.ready;
		g->alive += info.ready + info.in_use;
	}
	pthread_mutex_unlock(&s->mu);
}

/* the guest memory a loaded function holds: its size times its virtines, and at least one once
 * its snapshot is in memory (the budget gives spares up to invocations, so a function can be
 * left with none; loaded, it needs room to run one). One loaded from disk and not invoked yet
 * holds nothing. */
static uint64_t held(const struct srv_entry *e)
{
	struct ember_info info = {0};
	ember_info(e->inst->fn, &info);
	unsigned n = info.ready + info.in_use;
	if (!n && info.snapshot && !info.cold_pending)
		n = 1;
	return e->inst->mem_bytes * (uint64_t)n;
}

/* With s->mu held: while the functions loaded hold more guest memory than the budget, unloads
 * the least recently used idle one (not one in flight, loading or with minWarm). */
static size_t evict_over_budget(struct srv *s, struct srv_inst **dead, size_t room)
{
	uint64_t budget = s->opt.memory_budget ? s->opt.memory_budget : SRV_BUDGET_DEFAULT,
		 total = 0;
	for (size_t i = 0; i < s->nfns; i++)
		if (s->fns[i]->inst)
			total += held(s->fns[i]);
	size_t n = 0;
	while (total > budget && n < room) {
		struct srv_entry *lru = NULL;
		for (size_t i = 0; i < s->nfns; i++) {
			struct srv_entry *e = s->fns[i];
			if (e->inst && !e->inflight && !e->loading && !e->spec->min_warm &&
			    (!lru || e->last_used < lru->last_used))
				lru = e;
		}
		if (!lru)
			break;
		total -= held(lru);
		struct srv_inst *d = reg_inst_put(lru->inst);
		lru->inst = NULL;
		if (d)
			dead[n++] = d;
	}
	return n;
}

/* unloads functions idle for longer than their keepAlive (never those with minWarm), then the
 * least recently used while over the memory budget */
void reg_evict(struct srv *s)
{
	struct srv_inst *dead[EVICT_BATCH];
	size_t n = 0;
	double now = srv_now();
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->nfns && n < EVICT_BATCH; i++) {
		struct srv_entry *e = s->fns[i];
		const struct srv_spec *sp = e->spec;
		if (!e->inst || e->inflight || e->loading || sp->min_warm ||
		    sp->keep_alive_s <= 0 || now - e->last_used < sp->keep_alive_s)
			continue;
		struct srv_inst *d = reg_inst_put(e->inst);
		e->inst = NULL;
		if (d)
			dead[n++] = d;
	}
	n += evict_over_budget(s, dead + n, EVICT_BATCH - n);
	pthread_mutex_unlock(&s->mu);
	for (size_t i = 0; i < n; i++)
		inst_unload(dead[i]);
}

/* at shutdown, with nothing in flight */
void reg_free(struct srv *s)
{
	pthread_mutex_lock(&s->mu);
	struct srv_entry **v = s->fns;
	size_t n = s->nfns;
	s->fns = NULL;
	s->nfns = s->capfns = 0;
	index_free(s);
	pthread_mutex_unlock(&s->mu);
	for (size_t i = 0; i < n; i++) {
		inst_unload(reg_inst_put(v[i]->inst));
		v[i]->inst = NULL;
		pthread_mutex_lock(&s->mu);
		reg_entry_put(v[i]);
		pthread_mutex_unlock(&s->mu);
	}
	free(v);
}
