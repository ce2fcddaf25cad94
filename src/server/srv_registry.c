/* The function table: deploying, replacing and removing entries; calls that pin a version. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/srv_core.h"
#include "server/srv_spec.h"
#include "server/srv_registry.h"
#include "server/srv_workers.h"
#include "server/srv_logs.h"
#include "metrics/metrics.h"

#define FAIL_CACHE_S 1.0 /* a failed load is told to others for this long before a retry */

struct srv_entry *reg_find(struct srv *s, const char *name, size_t *idx)
{
	if (!idx && s->index)
		return index_find(s, name);
	for (size_t i = 0; i < s->nfns; i++) {
		if (!strcmp(s->fns[i]->spec->name, name)) {
			if (idx)
				*idx = i;
			return s->fns[i];
		}
	}
	return NULL;
}

struct srv_inst *reg_inst_put(struct srv_inst *in)
{
	return in && atomic_fetch_sub(&in->refs, 1) == 1 ? in : NULL;
}

void reg_entry_put(struct srv_entry *e)
{
	if (atomic_fetch_sub(&e->refs, 1) != 1)
		return;
	spec_put(e->spec);
	logs_put(e->logs);
	pthread_cond_destroy(&e->cv);
	free(e);
}

int reg_add(struct srv *s, struct srv_spec *sp, struct srv_inst *in)
{
	struct srv_entry *e = calloc(1, sizeof(*e));
	pthread_mutex_lock(&s->mu);
	int rc = !e ? REG_NOMEM : reg_find(s, sp->name, NULL) ? REG_EXISTS : REG_OK;
	if (!rc && s->nfns == s->capfns) {
		size_t cap = s->capfns ? s->capfns * 2 : 16;
		struct srv_entry **v = realloc(s->fns, cap * sizeof(*v));
		if (v) {
			s->fns = v;
			s->capfns = cap;
		} else {
			rc = REG_NOMEM;
		}
	}
	if (rc) {
		pthread_mutex_unlock(&s->mu);
		free(e);
		spec_put(sp);
		inst_unload(in);
		return rc;
	}
	e->spec = sp;
	e->inst = in;
	e->refs = 1;
	e->last_used = srv_now();
	e->logs = logs_new(s->opt.log_ring_bytes, s->opt.log_ring_lines);
	e->metrics = metrics_fn(s->metrics, sp->name);
	pthread_cond_init(&e->cv, NULL);
	s->fns[s->nfns++] = e;
	index_rebuild(s);
	s->auth_fns += sp->require_auth;
	pthread_mutex_unlock(&s->mu);
	return REG_OK;
}

int reg_replace(struct srv *s, struct srv_spec *sp, struct srv_inst *in)
{
	pthread_mutex_lock(&s->mu);
	struct srv_entry *e = reg_find(s, sp->name, NULL);
	if (!e) {
		pthread_mutex_unlock(&s->mu);
		spec_put(sp);
		inst_unload(in);
		return REG_NOTFOUND;
	}
	struct srv_spec *old = e->spec;
	s->auth_fns += sp->require_auth;
	s->auth_fns -= old->require_auth;
	if (e->inst)
		e->inst->retired = 1;
	struct srv_inst *dead = reg_inst_put(e->inst);
	e->spec = sp;
	e->inst = in;
	e->gen++;
	e->failed = 0;
	e->last_used = srv_now();
	pthread_cond_broadcast(&e->cv); /* queued calls: the limits may have changed */
	pthread_mutex_unlock(&s->mu);
	spec_put(old);
	inst_unload(dead); /* calls still running hold their own references */
	return REG_OK;
}

int reg_remove(struct srv *s, const char *name)
{
	size_t i;
	pthread_mutex_lock(&s->mu);
	struct srv_entry *e = reg_find(s, name, &i);
	if (!e) {
		pthread_mutex_unlock(&s->mu);
		return REG_NOTFOUND;
	}
	memmove(&s->fns[i], &s->fns[i + 1], (s->nfns - i - 1) * sizeof(*s->fns));
	s->nfns--;
	index_rebuild(s);
	s->auth_fns -= e->spec->require_auth;
	e->deleted = 1;
	logs_close(e->logs); /* its followers end; invocations still running add nothing */
	if (e->inst)
		e->inst->retired = 1;
	struct srv_inst *dead = reg_inst_put(e->inst);
	e->inst = NULL;
	pthread_cond_broadcast(&e->cv);
	reg_entry_put(e);
	pthread_mutex_unlock(&s->mu);
	inst_unload(dead);
	return REG_OK;
}

struct srv_spec *reg_spec(struct srv *s, const char *name)
{
	pthread_mutex_lock(&s->mu);
	struct srv_entry *e = reg_find(s, name, NULL);
	struct srv_spec *sp = e ? spec_get(e->spec) : NULL;
	pthread_mutex_unlock(&s->mu);
	return sp;
}

/* e's loaded version, loading it first when needed (s->mu is dropped while loading) */
static int get_inst(struct srv *s, struct srv_entry *e, struct srv_call *c, char *err,
		    size_t errlen)
{
	for (;;) {
		if (e->deleted)
			return snprintf(err, errlen, "function '%s' was deleted", e->spec->name),
			       REG_NOTFOUND;
		if (e->inst) {
			e->inst->refs++;
			c->inst = e->inst;
			c->spec = spec_get(e->spec);
			return REG_OK;
		}
		if (e->loading) {
			pthread_cond_wait(&e->cv, &s->mu);
			continue;
		}
		if (e->failed && e->fail_gen == e->gen && srv_now() - e->fail_at < FAIL_CACHE_S)
			return snprintf(err, errlen, "%s", e->fail_msg), REG_LOADERR;
		e->loading = 1;
		uint64_t gen = e->gen;
		struct srv_spec *sp = spec_get(e->spec);
		pthread_mutex_unlock(&s->mu);
		struct srv_inst *in = NULL;
		double t0 = srv_now();
		int rc = load_spec(s, sp, NULL, &in, err, errlen);
		double took = srv_now() - t0;
		spec_put(sp);
		pthread_mutex_lock(&s->mu);
		e->loading = 0;
		pthread_cond_broadcast(&e->cv);
		if (rc && gen == e->gen) {
			e->failed = 1;
			e->fail_gen = gen;
			e->fail_at = srv_now();
			snprintf(e->fail_msg, sizeof(e->fail_msg), "%s", err);
			return REG_LOADERR;
		}
		if (rc)
			continue; /* updated meanwhile: load the new version */
		if (gen != e->gen || e->deleted || e->inst) {
			in->retired = gen != e->gen || e->deleted; /* loaded for a version gone */
			pthread_mutex_unlock(&s->mu);
			inst_unload(in);
			pthread_mutex_lock(&s->mu);
			continue;
		}
		e->inst = in;
		e->failed = 0;
		e->last_used = srv_now();
		c->load_us = (uint64_t)(took * 1e6);
	}
}

int reg_acquire(struct srv *s, const char *name, struct srv_call *c, int patient, char *err,
		size_t errlen)
{
	memset(c, 0, sizeof(*c));
	pthread_mutex_lock(&s->mu);
	struct srv_entry *e = reg_find(s, name, NULL);
	if (!e) {
		pthread_mutex_unlock(&s->mu);
		return snprintf(err, errlen, "function '%s' not found", name), REG_NOTFOUND;
	}
	e->refs++;
	if (e->spec->max_concurrency && e->inflight >= e->spec->max_concurrency) {
		if (!patient && e->queued >= e->spec->queue) {
			snprintf(err, errlen, "function '%s' has %u requests in flight, its limit",
				 name, e->inflight);
			reg_entry_put(e);
			pthread_mutex_unlock(&s->mu);
			return REG_BUSY;
		}
		e->queued++;
		while (!e->deleted && e->spec->max_concurrency &&
		       e->inflight >= e->spec->max_concurrency)
			pthread_cond_wait(&e->cv, &s->mu);
		e->queued--;
	}
	e->inflight++;
	int rc = get_inst(s, e, c, err, errlen);
	if (rc) {
		e->inflight--;
		pthread_cond_broadcast(&e->cv);
		reg_entry_put(e);
		pthread_mutex_unlock(&s->mu);
		return rc;
	}
	c->e = e;
	pthread_mutex_unlock(&s->mu);
	return REG_OK;
}

void reg_release(struct srv *s, struct srv_call *c)
{
	struct srv_entry *e = c->e;
	struct srv_inst *dead = reg_inst_put(c->inst);
	struct srv_spec *sp = c->spec;
	e->invocations++;
	e->last_used = srv_now();
	e->inflight--;
	/* a call waiting for a place counted itself in queued before it looked at inflight: it
	 * sees the decrement, or is seen here and woken under the lock it waits with */
	if (e->queued) {
		pthread_mutex_lock(&s->mu);
		pthread_cond_broadcast(&e->cv);
		pthread_mutex_unlock(&s->mu);
	}
	reg_entry_put(e); /* atomic: the last reference frees it, whoever holds it */
	inst_unload(dead);
	spec_put(sp);
	c->e = NULL;
	c->inst = NULL;
	c->spec = NULL;
}

/* loads every function not loaded yet (after a restart), one at a time */
void reg_preload(struct srv *s)
{
	char err[SRV_ERR_MAX];
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->nfns && !s->stopping; i++) {
		struct srv_entry *e = s->fns[i];
		/* --workers: another worker owns it, and its calls go there */
		if (e->inst || e->loading || !workers_mine(s, e->spec->name))
			continue;
		struct srv_call c = {0};
		e->refs++;
		struct srv_inst *dead = NULL;
		if (get_inst(s, e, &c, err, sizeof(err)) == REG_OK) {
			dead = reg_inst_put(c.inst);
			spec_put(c.spec);
		} else
			srv_log(s, "error", "cannot load %s: %s", e->spec->name, err);
		reg_entry_put(e);
		pthread_mutex_unlock(&s->mu);
		inst_unload(dead);
		pthread_mutex_lock(&s->mu);
	}
	pthread_mutex_unlock(&s->mu);
}

int reg_load(struct srv *s, const char *name)
{
	char err[SRV_ERR_MAX];
	struct srv_call c = {0};
	struct srv_inst *dead = NULL;
	pthread_mutex_lock(&s->mu);
	struct srv_entry *e = reg_find(s, name, NULL);
	int rc = e ? 0 : -1;
	if (e) {
		e->refs++;
		if (get_inst(s, e, &c, err, sizeof(err)) == REG_OK) {
			dead = reg_inst_put(c.inst);
			spec_put(c.spec);
		} else {
			srv_log(s, "error", "cannot load %s: %s", name, err);
			rc = -1;
		}
		reg_entry_put(e);
	}
	pthread_mutex_unlock(&s->mu);
	inst_unload(dead);
	return rc;
}
