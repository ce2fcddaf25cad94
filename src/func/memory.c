/* What a function's warm virtines hold in memory, and a warm-up run in each of them. */
#include <string.h>

#include "func/func.h"

struct measure {
	struct ember_memory *m;
	struct vm_maps maps; /* the host's, read once for every virtine */
	int rc;
};

static int measure_one(struct virtine *v, void *ctx)
{
	struct measure *c = ctx;
	uint64_t shared, priv;
	int rc = vm_memory(v->vm, &shared, &priv);
	if (rc) {
		c->rc = rc;
		return 0;
	}
	c->m->virtines++;
	c->m->shared_bytes += shared;
	c->m->private_bytes += priv;
	struct vm_hold h;
	vm_host_hold(v->vm, &c->maps, &h);
	c->m->host_maps += h.maps;
	c->m->host_fds += h.fds;
	c->m->host_slot_bytes += h.slot_bytes;
	return 0;
}

int ember_memory(struct ember_function *fn, struct ember_memory *m)
{
	memset(m, 0, sizeof(*m));
	m->sharing = snap_share_name(fn->share);
	m->snapshot_bytes = func_has_snapshot(fn) ? fn->snap.npages * EMBER_PAGE_SIZE : 0;
	if (fn->store) {
		struct share_store_stats s;
		share_store_stats(fn->store, &s);
		m->domain = share_store_domain(fn->store);
		m->domain_bytes = s.pages * EMBER_PAGE_SIZE;
		m->merged_pages = s.merged;
		m->merge_ns = s.merge_ns;
	}
	struct measure c = {m, {0}, 0};
	if ((c.rc = vm_maps_read(&c.maps)))
		return c.rc;
	pool_visit(&fn->pool, measure_one, &c);
	vm_maps_free(&c.maps);
	return c.rc;
}

struct prime {
	struct ember_function *fn;
	const void *in;
	size_t len;
};

static int prime_one(struct virtine *v, void *ctx)
{
	struct prime *p = ctx;
	struct ember_result res;
	memset(&res, 0, sizeof(res));
	struct func_call c = {p->in, p->len, NULL, 0};
	int broken = func_run_warm(p->fn, v, &c, &res);
	ember_result_free(&res);
	return broken;
}

int ember_prime(struct ember_function *fn, const void *in, size_t len)
{
	if (func_state(fn) != FUNC_WARM)
		return -1;
	struct prime p = {fn, in, len};
	return (int)pool_visit(&fn->pool, prime_one, &p);
}
