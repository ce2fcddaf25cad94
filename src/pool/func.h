/* The function structure behind the public API, shared by loading and invoking. */
#ifndef EMBER_FUNC_H
#define EMBER_FUNC_H

#include "ember/ember.h"
#include "image/img.h"
#include "pool/pool.h"
#include "snap/snap.h"

struct ember_function {
	struct img *img;
	struct vm_config vmcfg;
	uint64_t timeout_ns;
	uint64_t output_limit;
	unsigned pool_size;
	int use_snapshot; /* asked for */
	int snapshot;     /* taken: invocations restore from snap */
	char **argv, **envp;
	uint8_t *code;
	size_t code_len;
	struct snap snap;
	struct sys_process proc; /* where the image put things */
	struct pool pool;
	uint64_t init_us, init_exits;
	/* a function that ended during init (it never read its request) has its first result here */
	struct ember_result first;
	int first_pending;
	atomic_int first_taken;
};

/* Loads the image into vm and runs the initialisation up to the snapshot point. */
int func_init(struct ember_function *fn, struct vm *vm, char *err, size_t errlen);

#endif
