/* The refiller: a pool's capacity following demand, kept by one thread off the request path. */
#ifndef EMBER_REFILL_H
#define EMBER_REFILL_H

#include <pthread.h>
#include <stdatomic.h>

#include "pool/demand.h"
#include "pool/pool.h"

/* whether spares may be made now (pool_refill_ops.gate) */
enum pool_gate {
	POOL_GATE_OPEN,	 /* yes */
	POOL_GATE_LATER, /* not now (the snapshot is only on disk): looked at again soon */
	POOL_GATE_SHUT,	 /* nothing to make them from: until the next kick */
};

/* what the layer above gives the refiller: it builds virtines, the pool only holds them */
struct pool_refill_ops {
	enum pool_gate (*gate)(void *ctx);
	/* a virtine at the snapshot state made now, without waiting for the budget (a spare);
	 * NULL when it cannot be (the reason is the maker's to keep) */
	struct virtine *(*make)(void *ctx);
};

/* Counters the invoke path keeps without a lock, and the refiller thread's state under mu. */
struct pool_refiller {
	int on;			  /* pool_max > pool_size: a refiller runs */
	atomic_uint in_use, seen; /* seen: the most in use since the refiller last looked */
	atomic_uint target, peak; /* as the refiller last computed them */
	atomic_ulong refills, trims, restores;
	unsigned capacity;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int kicked, stop;
	pthread_t thread;
	int started;
	struct demand d;
	struct pool *pool;
	const struct pool_refill_ops *ops;
	void *ctx;
};

void pool_refiller_init(struct pool_refiller *r, struct pool *p, const struct pool_refill_ops *ops,
			void *ctx);
/* floor virtines at least, capacity at most; window_ns: keepAlive, after which idle spares go
 * (0: never). The thread runs only when r->on. 0, or -1 when it cannot be started. */
int pool_refiller_start(struct pool_refiller *r, unsigned floor, unsigned capacity,
			uint64_t window_ns);
void pool_refiller_stop(struct pool_refiller *r);
void pool_refiller_fini(struct pool_refiller *r);
/* the invoke path took a virtine (in_use is now n): wakes the refiller when demand grew */
void pool_refiller_took(struct pool_refiller *r, unsigned n);

#endif
