/* The memory budget shared by functions: guest memory of every virtine, spares given up first. */
#include <stdlib.h>
#include <time.h>

#include "func/func.h"

struct ember_budget *ember_budget_new(uint64_t bytes)
{
	struct ember_budget *b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	pthread_mutex_init(&b->mu, NULL);
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&b->cv, &a);
	pthread_condattr_destroy(&a);
	b->limit = bytes;
	return b;
}

void ember_budget_free(struct ember_budget *b)
{
	if (!b)
		return;
	pthread_mutex_destroy(&b->mu);
	pthread_cond_destroy(&b->cv);
	free(b->fns);
	free(b);
}

void ember_budget_usage(struct ember_budget *b, struct ember_budget_usage *u)
{
	pthread_mutex_lock(&b->mu);
	*u = (struct ember_budget_usage){b->limit, b->used, b->peak, b->waits, b->refused};
	pthread_mutex_unlock(&b->mu);
}

int budget_join(struct ember_budget *b, struct ember_function *fn)
{
	if (!b)
		return 0;
	pthread_mutex_lock(&b->mu);
	int rc = 0;
	if (b->nfns == b->capfns) {
		size_t cap = b->capfns ? b->capfns * 2 : 16;
		struct ember_function **v = realloc(b->fns, cap * sizeof(*v));
		if (v) {
			b->fns = v;
			b->capfns = cap;
		} else {
			rc = -1;
		}
	}
	if (!rc)
		b->fns[b->nfns++] = fn;
	pthread_mutex_unlock(&b->mu);
	return rc;
}

void budget_leave(struct ember_budget *b, struct ember_function *fn)
{
	if (!b)
		return;
	pthread_mutex_lock(&b->mu);
	for (size_t i = 0; i < b->nfns; i++) {
		if (b->fns[i] == fn) {
			b->fns[i] = b->fns[--b->nfns];
			break;
		}
	}
	pthread_mutex_unlock(&b->mu);
}

/* with b->mu held: a ready virtine of some function, taken out of its pool (round robin, so no
 * one function loses all its spares first); NULL when no pool has one */
static struct virtine *spare(struct ember_budget *b)
{
	for (size_t k = 0; k < b->nfns; k++) {
		struct ember_function *fn = b->fns[(b->next + k) % b->nfns];
		if (atomic_load(&fn->cold_pending)) /* its pool may be remade meanwhile */
			continue;
		struct virtine *v = pool_take(&fn->pool);
		if (v) {
			b->next = (b->next + k + 1) % b->nfns;
			return v;
		}
	}
	return NULL;
}

int budget_take(struct ember_budget *b, uint64_t bytes, uint64_t deadline_ns)
{
	if (!b)
		return 0;
	pthread_mutex_lock(&b->mu);
	int rc = 0, waited = 0;
	while (b->used + bytes > b->limit) {
		if (!deadline_ns) {
			b->refused++;
			rc = -1;
			break;
		}
		/* counted before looking for a spare: a virtine put back after the look sees it
		 * and wakes this wait (budget_kick) */
		atomic_fetch_add(&b->waiters, 1);
		struct virtine *v = spare(b);
		if (v) { /* a spare gives its memory to a request */
			atomic_fetch_sub(&b->waiters, 1);
			pthread_mutex_unlock(&b->mu);
			virtine_destroy(v);
			pthread_mutex_lock(&b->mu);
			continue;
		}
		if (vm_now_ns() >= deadline_ns) {
			atomic_fetch_sub(&b->waiters, 1);
			rc = -1;
			break;
		}
		waited = 1;
		struct timespec ts = {(time_t)(deadline_ns / 1000000000),
				      (long)(deadline_ns % 1000000000)};
		pthread_cond_timedwait(&b->cv, &b->mu, &ts);
		atomic_fetch_sub(&b->waiters, 1);
	}
	if (!rc) {
		b->used += bytes;
		if (b->used > b->peak)
			b->peak = b->used;
	}
	b->waits += waited;
	pthread_mutex_unlock(&b->mu);
	return rc;
}

void budget_kick(struct ember_budget *b)
{
	if (!b || !atomic_load(&b->waiters))
		return;
	pthread_mutex_lock(&b->mu);
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
}

void budget_give(struct ember_budget *b, uint64_t bytes)
{
	if (!b || !bytes)
		return;
	pthread_mutex_lock(&b->mu);
	b->used -= bytes < b->used ? bytes : b->used;
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
}
