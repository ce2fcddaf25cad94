/* Invoking a function: one invoke path per lifecycle state, chosen by one table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "func/func.h"

/* a virtine at the snapshot state: from the pool, else restored into a clean shell on the
 * request's own path (what the refiller is there to spare it) */
static struct virtine *get_warm(struct ember_function *fn, struct ember_result *res)
{
	struct pool_refiller *r = &fn->refill;
	uint64_t t0 = base_now_ns();
	struct virtine *v = pool_take(&fn->pool);
	res->wait_us = base_us_since(t0);
	if (v) {
		res->warm = 1;
		res->start = EMBER_START_WARM;
		pool_refiller_took(r, atomic_fetch_add(&r->in_use, 1) + 1);
		return v;
	}
	res->start = EMBER_START_RESTORE;
	atomic_fetch_add(&r->restores, 1);
	pool_refiller_took(r, atomic_fetch_add(&r->in_use, 1) + 1);
	uint64_t t1 = base_now_ns();
	char err[EMBER_ERR_MAX];
	int kind;
	v = func_restored(fn, 1, &kind, err, sizeof(err));
	res->setup_us = base_us_since(t1);
	if (!v) {
		atomic_fetch_sub(&r->in_use, 1);
		func_fail_result(res, err);
	}
	return v;
}

int func_warm(struct ember_function *fn, unsigned n, char *err, size_t errlen)
{
	if (func_state(fn) != FUNC_WARM || fn->no_ready)
		return 0;
	if (n > fn->pool.cap)
		n = (unsigned)fn->pool.cap;
	int added = 0, kind;
	while (atomic_load(&fn->pool.ready) < n) {
		struct virtine *v = func_restored(fn, 0, &kind, err, errlen);
		if (!v)
			return kind == FUNC_BUDGET_FULL ? added : kind; /* spares are optional */
		if (pool_put(&fn->pool, v)) {
			virtine_destroy(v);
			break;
		}
		added++;
	}
	return added;
}

int ember_warm(struct ember_function *fn, unsigned n)
{
	char err[EMBER_ERR_MAX];
	return func_warm(fn, n, err, sizeof(err));
}

int ember_trim(struct ember_function *fn, unsigned n)
{
	int dropped = 0;
	struct virtine *v;
	while (atomic_load(&fn->pool.ready) > n && (v = pool_take(&fn->pool))) {
		virtine_destroy(v);
		dropped++;
	}
	return dropped;
}

static enum pool_gate refill_gate(void *ctx)
{
	static const enum pool_gate gates[FUNC_STATES] = {
	    [FUNC_SCRATCH] = POOL_GATE_SHUT,
	    [FUNC_FIRST] = POOL_GATE_SHUT,
	    [FUNC_COLD] = POOL_GATE_LATER, /* the pool is not to be touched meanwhile */
	    [FUNC_WARM] = POOL_GATE_OPEN,
	};
	return gates[func_state(ctx)];
}

static struct virtine *refill_make(void *ctx)
{
	char err[EMBER_ERR_MAX];
	int kind;
	return func_restored(ctx, 0, &kind, err, sizeof(err));
}

const struct pool_refill_ops func_refill_ops = {refill_gate, refill_make};

/* FUNC_SCRATCH: the image loaded into a clean shell and run from its start */
static int invoke_scratch(struct ember_function *fn, const struct func_call *c,
			  struct ember_result *res)
{
	uint64_t t0 = base_now_ns();
	char err[EMBER_ERR_MAX];
	int kind;
	struct virtine *v = virtine_new(fn, NULL, 1, &kind, err, sizeof(err));
	res->wait_us = base_us_since(t0);
	res->start = EMBER_START_INIT;
	if (!v) {
		func_fail_result(res, err);
		return -1;
	}
	uint64_t t1 = base_now_ns();
	if (func_load_image(fn, v, err, sizeof(err))) {
		virtine_destroy(v);
		func_fail_result(res, err);
		return -1;
	}
	res->load_us = base_us_since(t1);
	func_run_invocation(fn, v, c, res);
	virtine_destroy(v);
	return 0;
}

/* FUNC_FIRST: init's own run is the first invocation's result; the others run from scratch */
static int invoke_first(struct ember_function *fn, const struct func_call *c,
			struct ember_result *res)
{
	if (func_move(fn, FUNC_FIRST, FUNC_SCRATCH))
		return invoke_scratch(fn, c, res); /* another invocation took it */
	*res = fn->first;
	res->start = EMBER_START_INIT;
	memset(&fn->first, 0, sizeof(fn->first));
	return 0;
}

/* FUNC_COLD: one cold start at a time; whoever comes meanwhile waits here, not in a restore,
 * and then runs in the state the cold start left */
static int invoke_cold(struct ember_function *fn, const struct func_call *c,
		       struct ember_result *res)
{
	pthread_mutex_lock(&fn->cold_lock);
	func_finish_wait(fn); /* a cold start's work after its run: then its state */
	int rc = func_state(fn) == FUNC_COLD ? func_invoke_cold(fn, c, res) : FUNC_AGAIN;
	pthread_mutex_unlock(&fn->cold_lock);
	return rc;
}

/* FUNC_WARM: a ready virtine, put back afterwards */
static int invoke_warm(struct ember_function *fn, const struct func_call *c,
		       struct ember_result *res)
{
	struct virtine *v = get_warm(fn, res);
	if (!v)
		return -1;
	if (fn->no_ready) { /* restored for this run alone: no reset, nothing kept */
		func_run_invocation(fn, v, c, res);
		func_drop(fn, v);
	} else if (func_run_warm(fn, v, c, res) || pool_put(&fn->pool, v))
		virtine_destroy(v);
	else
		budget_kick(fn->budget);
	atomic_fetch_sub(&fn->refill.in_use,
			 1); /* after the put: ready + in use never undercounts */
	return 0;
}

static int (*const paths[FUNC_STATES])(struct ember_function *, const struct func_call *,
				       struct ember_result *) = {
    [FUNC_SCRATCH] = invoke_scratch,
    [FUNC_FIRST] = invoke_first,
    [FUNC_COLD] = invoke_cold,
    [FUNC_WARM] = invoke_warm,
};

/* the path of the state; again when a cold start changed it (at most twice: no path leads back
 * to FUNC_COLD) */
static int dispatch(struct ember_function *fn, const struct func_call *c, struct ember_result *res)
{
	for (int pass = 0; pass < FUNC_STATES; pass++) {
		int rc = paths[func_state(fn)](fn, c, res);
		if (rc != FUNC_AGAIN)
			return rc;
	}
	func_fail_result(res, "the function's state kept changing under the invocation");
	return -1;
}

int ember_invoke(struct ember_function *fn, const void *in, size_t len, struct ember_result *res)
{
	return ember_invoke_meta(fn, in, len, NULL, 0, res);
}

/* cpu_us: what the invoking thread spent (on KVM the guest's run, its faults and the reset are
 * all here), and what the backend's own processes did for it */
int ember_invoke_meta(struct ember_function *fn, const void *in, size_t len, const char *meta,
		      size_t meta_len, struct ember_result *res)
{
	memset(res, 0, sizeof(*res));
	struct func_call c = {in, len, meta, meta_len};
	uint64_t t0 = vm_thread_cpu_ns();
	int rc = dispatch(fn, &c, res);
	uint64_t t1 = vm_thread_cpu_ns();
	res->cpu_us += t1 > t0 ? (t1 - t0) / 1000 : 0;
	return rc;
}
