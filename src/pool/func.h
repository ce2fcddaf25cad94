/* The function structure behind the public API, shared by loading and invoking. */
#ifndef EMBER_FUNC_H
#define EMBER_FUNC_H

#include "ember/ember.h"
#include "image/img.h"
#include "pool/pool.h"
#include <pthread.h>

#include "snap/snap.h"
#include "snap/snap_cold.h"
#include "snap/snap_file.h"

struct ember_function {
	struct img *img;
	struct vm_config vmcfg;
	uint64_t timeout_ns;
	uint64_t output_limit;
	unsigned pool_size;
	int use_snapshot; /* asked for */
	int strict_init;  /* a failed init fails the load (ember_config.strict_init) */
	int guest;	  /* syscalls=guest: the in-guest runtime serves the common ones */
	size_t sites_call, sites_trap;
	int snapshot; /* taken: invocations restore from snap */
	char **argv, **envp;
	uint8_t *code;
	size_t code_len;
	struct snap snap;
	/* on disk */
	char *snap_dir;
	struct snap_meta meta;
	enum snap_restore_mode restore;
	int from_disk;
	atomic_int cold_pending;   /* the next invocation starts from disk */
	pthread_mutex_t cold_lock; /* invocations wait while one cold start runs */
	char rebuilt[200];
	struct sys_process proc; /* where the image put things */
	struct pool pool;
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
/* The cold start of one invocation from the snapshot on disk. */
int func_invoke_cold(struct ember_function *fn, const void *in, size_t len, const char *meta,
		     size_t meta_len, struct ember_result *res);

#endif
