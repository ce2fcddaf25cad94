/* Pools of ready virtines: slots claimed with compare-and-swap, so takers never wait on a lock. */
#include <stdlib.h>

#include "pool/budget.h"
#include "pool/pool.h"

int pool_init(struct pool *p, size_t cap)
{
	p->cap = cap ? cap : 1;
	p->slots = calloc(p->cap, sizeof(*p->slots));
	atomic_init(&p->ready, 0);
	return p->slots ? 0 : -1;
}

void virtine_destroy(struct virtine *v)
{
	if (!v)
		return;
	sys_free(&v->st);
	vm_destroy(v->vm);
	share_refs_release(&v->merged); /* its mappings of them are gone */
	budget_give(v->budget, v->charged);
	free(v);
}

void pool_drain(struct pool *p)
{
	struct virtine *v;
	while (p->slots && (v = pool_take(p)))
		virtine_destroy(v);
}

void pool_fini(struct pool *p)
{
	pool_drain(p);
	free(p->slots);
	p->slots = NULL;
}

struct virtine *pool_take(struct pool *p)
{
	if (atomic_load(&p->ready) == 0)
		return NULL;
	for (size_t i = 0; i < p->cap; i++) {
		int ready = POOL_READY;
		if (atomic_compare_exchange_strong(&p->slots[i].state, &ready, POOL_BUSY)) {
			struct virtine *v = p->slots[i].v;
			p->slots[i].v = NULL;
			atomic_fetch_sub(&p->ready, 1);
			atomic_store(&p->slots[i].state, POOL_EMPTY);
			return v;
		}
	}
	return NULL;
}

int pool_put(struct pool *p, struct virtine *v)
{
	for (size_t i = 0; i < p->cap; i++) {
		int empty = POOL_EMPTY;
		if (atomic_compare_exchange_strong(&p->slots[i].state, &empty, POOL_BUSY)) {
			p->slots[i].v = v;
			atomic_fetch_add(&p->ready, 1);
			atomic_store(&p->slots[i].state, POOL_READY);
			return 0;
		}
	}
	return -1;
}

size_t pool_visit(struct pool *p, int (*fn)(struct virtine *v, void *ctx), void *ctx)
{
	size_t n = 0;
	for (size_t i = 0; i < p->cap; i++) {
		int ready = POOL_READY;
		if (!atomic_compare_exchange_strong(&p->slots[i].state, &ready, POOL_BUSY))
			continue;
		n++;
		if (fn(p->slots[i].v, ctx)) {
			virtine_destroy(p->slots[i].v);
			p->slots[i].v = NULL;
			atomic_fetch_sub(&p->ready, 1);
			atomic_store(&p->slots[i].state, POOL_EMPTY);
			continue;
		}
		atomic_store(&p->slots[i].state, POOL_READY);
	}
	return n;
}
