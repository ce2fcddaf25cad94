/* The refiller: one thread per pool whose capacity follows demand, off the request path. */
#include <time.h>

#include "pool/refill.h"

#define RETRY_NS (100ULL * 1000 * 1000) /* after the budget refused a spare, or a failure */

/* the virtines ready and in use */
static unsigned have(struct pool_refiller *r)
{
	return (unsigned)atomic_load(&r->pool->ready) + atomic_load(&r->in_use);
}

/* with r->mu held: the policy applied to what was seen, published for the invoke path */
static unsigned retarget(struct pool_refiller *r, uint64_t *next_ns)
{
	unsigned u = atomic_load(&r->in_use);
	demand_seen(&r->d, atomic_exchange(&r->seen, u));
	demand_tick(&r->d, u, base_now_ns(), next_ns);
	unsigned t = demand_target(&r->d, u);
	unsigned peak = r->d.peak > r->d.prev_peak ? r->d.peak : r->d.prev_peak;
	atomic_store(&r->target, t);
	atomic_store(&r->peak, peak);
	return t;
}

static void wait_until(struct pool_refiller *r, uint64_t wake_ns)
{
	if (!wake_ns) {
		pthread_cond_wait(&r->cv, &r->mu);
		return;
	}
	struct timespec ts = {(time_t)(wake_ns / 1000000000), (long)(wake_ns % 1000000000)};
	pthread_cond_timedwait(&r->cv, &r->mu, &ts);
}

/* one step towards the target outside the lock: 1 when it changed something, 0 when there was
 * nothing to do, -1 when a spare could not be made (the budget, a failure) */
static int step(struct pool_refiller *r, unsigned target)
{
	unsigned n = have(r);
	if (n < target && n < r->capacity) {
		struct virtine *v = r->ops->make(r->ctx);
		if (!v)
			return -1;
		if (pool_put(r->pool, v)) {
			virtine_destroy(v);
			return 0;
		}
		atomic_fetch_add(&r->refills, 1);
		return 1;
	}
	if (n > target) {
		struct virtine *v = pool_take(r->pool);
		if (!v)
			return 0;
		virtine_destroy(v);
		atomic_fetch_add(&r->trims, 1);
		return 1;
	}
	return 0;
}

static void *refill(void *arg)
{
	struct pool_refiller *r = arg;
	pthread_setname_np(pthread_self(), "ember-refill");
	pthread_mutex_lock(&r->mu);
	while (!r->stop) {
		uint64_t next_ns;
		unsigned t = retarget(r, &next_ns);
		int rc = 0;
		enum pool_gate g = r->ops->gate(r->ctx);
		if (g == POOL_GATE_OPEN) {
			pthread_mutex_unlock(&r->mu);
			rc = step(r, t);
			pthread_mutex_lock(&r->mu);
		}
		if (rc > 0)
			continue;
		if (rc < 0 || g == POOL_GATE_LATER) {
			uint64_t retry = base_now_ns() + RETRY_NS;
			next_ns = next_ns && next_ns < retry ? next_ns : retry;
		}
		if (!r->kicked && !r->stop)
			wait_until(r, next_ns);
		r->kicked = 0;
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

void pool_refiller_took(struct pool_refiller *r, unsigned n)
{
	unsigned seen = atomic_load(&r->seen);
	while (n > seen && !atomic_compare_exchange_weak(&r->seen, &seen, n))
		;
	/* beyond the peak the target was made for, or short of it: the refiller has work */
	if (!r->on || (n <= atomic_load(&r->peak) &&
		       atomic_load(&r->pool->ready) + n >= atomic_load(&r->target)))
		return;
	pthread_mutex_lock(&r->mu);
	r->kicked = 1;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

void pool_refiller_init(struct pool_refiller *r, struct pool *p, const struct pool_refill_ops *ops,
			void *ctx)
{
	r->pool = p;
	r->ops = ops;
	r->ctx = ctx;
	pthread_mutex_init(&r->mu, NULL);
	base_cond_init(&r->cv);
}

int pool_refiller_start(struct pool_refiller *r, unsigned floor, unsigned capacity,
			uint64_t window_ns)
{
	r->capacity = capacity ? capacity : 1;
	demand_init(&r->d, floor, r->capacity, window_ns, base_now_ns());
	atomic_store(&r->target, demand_target(&r->d, 0));
	if (!r->on)
		return 0;
	if (pthread_create(&r->thread, NULL, refill, r))
		return -1;
	r->started = 1;
	return 0;
}

void pool_refiller_stop(struct pool_refiller *r)
{
	if (!r->started)
		return;
	pthread_mutex_lock(&r->mu);
	r->stop = 1;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
	pthread_join(r->thread, NULL);
	r->started = 0;
}

void pool_refiller_fini(struct pool_refiller *r)
{
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cv);
}
