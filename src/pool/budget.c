/* The memory budget shared by functions: guest memory of every virtine, spares given up first. */
#include <stdlib.h>
#include <time.h>

#include "ember/ember.h"
#include "pool/budget.h"
#include "pool/pool.h"

struct ember_budget *ember_budget_new(uint64_t bytes)
{
	struct ember_budget *b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	pthread_mutex_init(&b->mu, NULL);
	base_cond_init(&b->cv);
	b->limit = bytes;
	return b;
}

void ember_budget_free(struct ember_budget *b)
{
	if (!b)
		return;
	pthread_mutex_destroy(&b->mu);
	pthread_cond_destroy(&b->cv);
	free(b->pools);
	free(b);
}

void ember_budget_usage(struct ember_budget *b, struct ember_budget_usage *u)
{
	pthread_mutex_lock(&b->mu);
	*u = (struct ember_budget_usage){b->limit, b->used, b->peak, b->waits, b->refused};
	pthread_mutex_unlock(&b->mu);
}

int budget_join(struct ember_budget *b, struct pool *p)
{
	if (!b)
		return 0;
	pthread_mutex_lock(&b->mu);
	int rc = 0;
	if (b->npools == b->cappools) {
		size_t cap = b->cappools ? b->cappools * 2 : 16;
		struct pool **v = realloc(b->pools, cap * sizeof(*v));
		if (v) {
			b->pools = v;
			b->cappools = cap;
		} else {
			rc = -1;
		}
	}
	if (!rc)
		b->pools[b->npools++] = p;
	pthread_mutex_unlock(&b->mu);
	return rc;
}

void budget_leave(struct ember_budget *b, struct pool *p)
{
	if (!b)
		return;
	pthread_mutex_lock(&b->mu);
	for (size_t i = 0; i < b->npools; i++) {
		if (b->pools[i] == p) {
			b->pools[i] = b->pools[--b->npools];
			break;
		}
	}
	pthread_mutex_unlock(&b->mu);
}

/* with b->mu held: a ready virtine of some pool, taken out of it (round robin, so no one
 * function loses all its spares first); NULL when no pool has one. A pool stays joined, its
 * slots in place, until its function is unloaded (a cold start drains it, never remakes it). */
static struct virtine *spare(struct ember_budget *b)
{
	for (size_t k = 0; k < b->npools; k++) {
		struct virtine *v = pool_take(b->pools[(b->next + k) % b->npools]);
		if (v) {
			b->next = (b->next + k + 1) % b->npools;
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
		if (base_now_ns() >= deadline_ns) {
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

unsigned budget_fits(const struct ember_budget *b, uint64_t bytes, unsigned max)
{
	if (!b || !bytes || b->limit / bytes >= max)
		return max;
	return (unsigned)(b->limit / bytes);
}
