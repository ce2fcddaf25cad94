/* The function structure behind the public API, shared by loading and invoking. */
#ifndef EMBER_FUNC_H
#define EMBER_FUNC_H

#include "ember/ember.h"
#include "image/img.h"
#include "pool/pool.h"
#include <pthread.h>

#include "pool/demand.h"
#include "snap/snap.h"
#include "snap/snap_cold.h"
#include "snap/snap_file.h"

struct ember_budget {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* memory given back */
	uint64_t limit, used, peak, waits, refused;
	atomic_int waiters;	     /* in budget_take, waiting for memory */
	struct ember_function **fns; /* whose spares may be given up */
	size_t nfns, capfns, next;
};

/* A function's capacity following demand: counters the invoke path keeps without a lock, and
 * the refiller thread's state under mu. */
struct fn_demand {
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
};

struct ember_function {
	struct img *img;
	struct vm_config vmcfg;
	uint64_t timeout_ns;
	uint64_t output_limit;
	unsigned pool_size;
	/* the pool's capacity: pool_size, or pool_max when it follows demand */
	unsigned pool_slots;
	int use_snapshot; /* asked for */
	int strict_init;  /* a failed init fails the load (ember_config.strict_init) */
	/* the syscall mode: trap, or guest (the in-guest runtime serves the common ones) */
	const struct sys_rt_ops *rt;
	size_t sites_call, sites_trap;
	int snapshot; /* taken: invocations restore from snap */
	char **argv, **envp;
	uint8_t *code;
	size_t code_len;
	struct bnd *bundle; /* its files, shared by its virtines; NULL: none */
	struct snap snap;
	/* on disk */
	char *snap_dir;
	struct snap_meta meta;
	enum snap_restore_mode restore;
	enum snap_share share;	 /* ember_config.sharing */
	struct mem_store *store; /* upm: the domain's page store, which holds the snapshot */
	struct mem_refs snap_refs;
	int from_disk;
	uint64_t snap_load_us;	   /* reading and checking the state file on disk, at load */
	atomic_int cold_pending;   /* the next invocation starts from disk */
	pthread_mutex_t cold_lock; /* invocations wait while one cold start runs */
	char rebuilt[200];
	struct sys_process proc; /* where the image put things */
	struct pool pool;
	struct ember_budget *budget;
	struct fn_demand dm;
	uint64_t init_us, init_exits;
	/* a function that ended during init (it never read its request) has its first result here
	 */
	struct ember_result first;
	int first_pending;
	atomic_int first_taken;
};

/* The functions below that return int give 0 or a kind of failure of ember.h (EMBER_ERR_*),
 * with the reason in err. */

/* Loads the image into vm and runs the initialisation up to the snapshot point. */
int func_init(struct ember_function *fn, struct vm *vm, char *err, size_t errlen);
/* Finds the snapshot on disk: 0 when it is there and usable, 1 when not (the caller runs init
 * and calls func_disk_save), or a kind of failure (the state folder cannot be made). */
int func_disk(struct ember_function *fn, const struct ember_config *cfg, char *err, size_t errlen);
int func_disk_save(struct ember_function *fn, int cold, char *err, size_t errlen);
/* ember_warm with the reason of a failure: how many virtines were added, or a kind of failure */
int func_warm(struct ember_function *fn, unsigned n, char *err, size_t errlen);
/* runs one invocation in v (at the snapshot state) and fills res */
void func_run_invocation(struct ember_function *fn, struct virtine *v, const void *in, size_t len,
			 const char *meta, size_t meta_len, struct ember_result *res);
/* puts v back to the snapshot; 0 on success */
int func_reset(struct ember_function *fn, struct virtine *v, uint64_t *touched);
/* a kind of failure of func_new_virtine beside ember.h's: the budget had no room */
#define FUNC_BUDGET_FULL 1
/* a clean shell with its emulation state prepared for this function, charged to its budget;
 * NULL with *kind and the reason in err */
struct virtine *func_new_virtine(struct ember_function *fn, int wait, int *kind, char *err,
				 size_t errlen);
/* refill.c: the refiller of a function whose capacity follows demand */
int func_refiller_start(struct ember_function *fn, const struct ember_config *cfg);
void func_refiller_stop(struct ember_function *fn);
/* the invoke path took a virtine (in_use is now n): wakes the refiller when demand grew */
void func_demand_took(struct ember_function *fn, unsigned n);
/* a virtine at the snapshot state, made now; wait: may wait for the budget (a request, a load)
 * rather than give up at once (a spare). NULL with *kind and the reason in err. */
struct virtine *func_restored(struct ember_function *fn, int wait, int *kind, char *err,
			      size_t errlen);

/* budget.c: NULL budgets allow everything */
int budget_join(struct ember_budget *b, struct ember_function *fn);
void budget_leave(struct ember_budget *b, struct ember_function *fn);
/* Charges bytes: 0, or -1 when they do not fit. deadline_ns 0: at once (a spare); else spares
 * of any function are given up, then it waits for memory until then. */
int budget_take(struct ember_budget *b, uint64_t bytes, uint64_t deadline_ns);
void budget_give(struct ember_budget *b, uint64_t bytes);
/* a virtine was put back ready: those waiting for memory may take it as a spare */
void budget_kick(struct ember_budget *b);

/* The cold start of one invocation from the snapshot on disk. */
int func_invoke_cold(struct ember_function *fn, const void *in, size_t len, const char *meta,
		     size_t meta_len, struct ember_result *res);

/* One invocation in the ready (or restored) virtine v, reset afterwards; 1 when v is broken and
 * must be destroyed. */
int func_run_warm(struct ember_function *fn, struct virtine *v, const void *in, size_t len,
		  const char *meta, size_t meta_len, struct ember_result *res);

/* share.c: the domain's store (upm), the snapshot moved into it once taken or loaded, a virtine's
 * madvise(MADV_MERGEABLE) served by it, and all of it given back at unload */
int func_share_open(struct ember_function *fn, const char *domain, char *err, size_t errlen);
void func_share_snapshot(struct ember_function *fn);
void func_share_virtine(struct ember_function *fn, struct virtine *v);
void func_share_close(struct ember_function *fn);

#endif
