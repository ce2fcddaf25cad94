/* The refiller: one thread per function whose capacity follows demand, off the request path. */
#include <stdio.h>
#include <time.h>

#include "func/func.h"

#define RETRY_NS (100ULL * 1000 * 1000) /* after the budget refused a spare, or a failure */

/* the virtines ready and in use */
static unsigned have(struct ember_function *fn)
{
	return (unsigned)atomic_load(&fn->pool.ready) + atomic_load(&fn->dm.in_use);
}

/* with dm->mu held: the policy applied to what was seen, published for the invoke path */
static unsigned retarget(struct ember_function *fn, uint64_t *next_ns)
{
	struct fn_demand *dm = &fn->dm;
	unsigned u = atomic_load(&dm->in_use);
	demand_seen(&dm->d, atomic_exchange(&dm->seen, u));
	demand_tick(&dm->d, u, vm_now_ns(), next_ns);
	unsigned t = demand_target(&dm->d, u);
	unsigned peak = dm->d.peak > dm->d.prev_peak ? dm->d.peak : dm->d.prev_peak;
	atomic_store(&dm->target, t);
	atomic_store(&dm->peak, peak);
	return t;
}

static void wait_until(struct fn_demand *dm, uint64_t wake_ns)
{
	if (!wake_ns) {
		pthread_cond_wait(&dm->cv, &dm->mu);
		return;
	}
	struct timespec ts = {(time_t)(wake_ns / 1000000000), (long)(wake_ns % 1000000000)};
	pthread_cond_timedwait(&dm->cv, &dm->mu, &ts);
}

/* one step towards the target outside the lock: 1 when it changed something, 0 when there was
 * nothing to do, -1 when a spare could not be made (the budget, a failure) */
static int step(struct ember_function *fn, unsigned target)
{
	unsigned n = have(fn);
	if (n < target && n < fn->dm.capacity) {
		char err[200];
		int kind;
		struct virtine *v = func_restored(fn, 0, &kind, err, sizeof(err));
		if (!v)
			return -1;
		if (pool_put(&fn->pool, v)) {
			virtine_destroy(v);
			return 0;
		}
		atomic_fetch_add(&fn->dm.refills, 1);
		return 1;
	}
	if (n > target) {
		struct virtine *v = pool_take(&fn->pool);
		if (!v)
			return 0;
		virtine_destroy(v);
		atomic_fetch_add(&fn->dm.trims, 1);
		return 1;
	}
	return 0;
}

static void *refill(void *arg)
{
	struct ember_function *fn = arg;
	struct fn_demand *dm = &fn->dm;
	pthread_setname_np(pthread_self(), "ember-refill");
	pthread_mutex_lock(&dm->mu);
	while (!dm->stop) {
		uint64_t next_ns;
		unsigned t = retarget(fn, &next_ns);
		int rc = 0;
		/* while the snapshot is only on disk the pool is not to be touched */
		if (fn->snapshot && !atomic_load(&fn->cold_pending)) {
			pthread_mutex_unlock(&dm->mu);
			rc = step(fn, t);
			pthread_mutex_lock(&dm->mu);
		}
		if (rc > 0)
			continue;
		if (rc < 0 || atomic_load(&fn->cold_pending)) {
			uint64_t retry = vm_now_ns() + RETRY_NS;
			next_ns = next_ns && next_ns < retry ? next_ns : retry;
		}
		if (!dm->kicked && !dm->stop)
			wait_until(dm, next_ns);
		dm->kicked = 0;
	}
	pthread_mutex_unlock(&dm->mu);
	return NULL;
}

void func_demand_took(struct ember_function *fn, unsigned n)
{
	struct fn_demand *dm = &fn->dm;
	unsigned seen = atomic_load(&dm->seen);
	while (n > seen && !atomic_compare_exchange_weak(&dm->seen, &seen, n))
		;
	/* beyond the peak the target was made for, or short of it: the refiller has work */
	if (!dm->on || (n <= atomic_load(&dm->peak) &&
			atomic_load(&fn->pool.ready) + n >= atomic_load(&dm->target)))
		return;
	pthread_mutex_lock(&dm->mu);
	dm->kicked = 1;
	pthread_cond_signal(&dm->cv);
	pthread_mutex_unlock(&dm->mu);
}

int func_refiller_start(struct ember_function *fn, const struct ember_config *cfg)
{
	struct fn_demand *dm = &fn->dm;
	unsigned cap = (unsigned)fn->pool.cap;
	if (fn->budget && fn->budget->limit / fn->vmcfg.mem_size < cap)
		cap = (unsigned)(fn->budget->limit / fn->vmcfg.mem_size);
	dm->capacity = cap ? cap : 1;
	uint64_t window = cfg->keep_alive_s > 0 ? (uint64_t)(cfg->keep_alive_s * 1e9) : 0;
	demand_init(&dm->d, fn->pool_size, dm->capacity, window, vm_now_ns());
	atomic_store(&dm->target, demand_target(&dm->d, 0));
	if (!dm->on)
		return 0;
	if (pthread_create(&dm->thread, NULL, refill, fn))
		return -1;
	dm->started = 1;
	return 0;
}

void func_refiller_stop(struct ember_function *fn)
{
	struct fn_demand *dm = &fn->dm;
	if (!dm->started)
		return;
	pthread_mutex_lock(&dm->mu);
	dm->stop = 1;
	pthread_cond_signal(&dm->cv);
	pthread_mutex_unlock(&dm->mu);
	pthread_join(dm->thread, NULL);
	dm->started = 0;
}
