/* The memory budget shared by functions: guest memory of every virtine, spares given up first. */
#ifndef EMBER_BUDGET_H
#define EMBER_BUDGET_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct pool;
struct ember_budget {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* memory given back */
	uint64_t limit, used, peak, waits, refused;
	atomic_int waiters;  /* in budget_take, waiting for memory */
	struct pool **pools; /* whose spares may be given up */
	size_t npools, cappools, next;
};

/* NULL budgets allow everything */
int budget_join(struct ember_budget *b, struct pool *p);
void budget_leave(struct ember_budget *b, struct pool *p);
/* Charges bytes: 0, or -1 when they do not fit. deadline_ns 0: at once (a spare); else spares
 * of any pool are given up, then it waits for memory until then. */
int budget_take(struct ember_budget *b, uint64_t bytes, uint64_t deadline_ns);
void budget_give(struct ember_budget *b, uint64_t bytes);
/* a virtine was put back ready: those waiting for memory may take it as a spare */
void budget_kick(struct ember_budget *b);
/* how many virtines of bytes each the budget can hold at most (max when it has no limit) */
unsigned budget_fits(const struct ember_budget *b, uint64_t bytes, unsigned max);

#endif
