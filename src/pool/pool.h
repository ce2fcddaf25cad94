/* Ready virtines per function (a lock-free set of slots) and a cache of clean shells. */
#ifndef EMBER_POOL_H
#define EMBER_POOL_H

#include <stdatomic.h>
#include <stddef.h>

#include "pool/virtine.h"

struct pool_slot {
	atomic_int state; /* POOL_EMPTY, POOL_READY or POOL_BUSY */
	struct virtine *v;
};

enum { POOL_EMPTY, POOL_READY, POOL_BUSY };

struct pool {
	size_t cap;
	struct pool_slot *slots;
	atomic_size_t ready; /* virtines waiting in the pool */
};

int pool_init(struct pool *p, size_t cap);
/* Empties the pool, destroying every virtine in it. */
void pool_fini(struct pool *p);
/* A ready virtine, or NULL when none is free. Never hands one virtine to two callers. */
struct virtine *pool_take(struct pool *p);
/* Gives a virtine back; returns -1 (and leaves it to the caller) when the pool is full. */
int pool_put(struct pool *p, struct virtine *v);
/* fn(v, ctx) for each ready virtine, held meanwhile (a pool_take passes it by); a non-zero
 * return from fn drops v from the pool, destroyed. Returns how many were visited. */
size_t pool_visit(struct pool *p, int (*fn)(struct virtine *v, void *ctx), void *ctx);
/* destroys every ready virtine, the slots kept (a pool_take meanwhile finds none) */
void pool_drain(struct pool *p);

/* A clean machine of the given configuration: from the shell cache when one is there (which is
 * then refilled in the background), otherwise created now. */
int pool_shell(const struct vm_config *cfg, struct vm **out, char *err, size_t errlen);
/* A machine a process used and left (a fork's child, the program an execve replaced), emptied
 * (vm_empty) and kept as a clean shell of its kind for the next pool_shell, up to the target
 * plus SHELL_SPARE; destroyed where it cannot be emptied or is not wanted. Its kind is read
 * from the machine itself (memory size, backend, vCPUs as it has them now), never taken from
 * the caller: a machine is never handed to a function that asked for another kind. */
void pool_shell_return(struct vm *vm);
/* Destroys every clean shell in the cache now (ember run, before it counts the descriptors a
 * function left: machines kept for the next fork are nobody's). */
void pool_shell_drain(void);
/* How many clean shells to keep per configuration (default 2). A configuration whose machines
 * cannot be made is tried again after a wait that doubles per failure (50 ms to 30 s), or at
 * once when a pool_shell of it succeeds. */
void pool_shell_target(unsigned n);
/* clean shells of this configuration in the cache now */
unsigned pool_shell_ready(const struct vm_config *cfg);
/* clean shells of cfg's kind made ahead from now on (a function whose next start is cold wants
 * one ready before its request) */
void pool_shell_want(const struct vm_config *cfg);

#endif
