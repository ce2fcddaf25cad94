/* The clean-shell cache: machines created ahead of time, so loading a function never waits. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pool/pool.h"

#define SHELL_KINDS 8
#define SHELL_MAX   16
/* emptied machines kept beyond the target (ember run's is 0): a fork + execve round frees two */
#define SHELL_SPARE 2
/* a kind whose machines cannot be made is tried again after a wait that doubles per failure */
#define BACKOFF_MIN_NS (50ULL * 1000 * 1000)
#define BACKOFF_MAX_NS (30ULL * 1000 * 1000 * 1000)

struct shell_kind {
	struct vm_config cfg;
	struct vm *vms[SHELL_MAX];
	int n;
	uint64_t retry_ns;   /* after a failure: not made again before this (0: not failed) */
	uint64_t backoff_ns; /* the wait after the last failure */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static struct shell_kind kinds[SHELL_KINDS];
static int nkinds;
static unsigned target = 2;
static int refiller_started;

void pool_shell_target(unsigned n)
{
	pthread_mutex_lock(&mu);
	target = n > SHELL_MAX ? SHELL_MAX : n;
	pthread_mutex_unlock(&mu);
}

/* with mu held: cfg's kind, or NULL */
static struct shell_kind *find_kind(const struct vm_config *cfg)
{
	for (int i = 0; i < nkinds; i++)
		if (kinds[i].cfg.mem_size == cfg->mem_size &&
		    kinds[i].cfg.backend == cfg->backend && kinds[i].cfg.cpus == cfg->cpus)
			return &kinds[i];
	return NULL;
}

/* with mu held: cfg's kind, added when new; NULL when every slot is taken */
static struct shell_kind *kind_of(const struct vm_config *cfg)
{
	struct shell_kind *k = find_kind(cfg);
	if (k || nkinds == SHELL_KINDS)
		return k;
	kinds[nkinds].cfg = *cfg;
	return &kinds[nkinds++];
}

/* with mu held: a kind below its target that may be made now; else NULL, and *wake_ns the
 * earliest retry of a failed one (0: none) */
static struct shell_kind *next_kind(uint64_t now, uint64_t *wake_ns)
{
	*wake_ns = 0;
	for (int i = 0; i < nkinds; i++) {
		struct shell_kind *k = &kinds[i];
		if (k->n >= (int)target)
			continue;
		if (k->retry_ns <= now)
			return k;
		if (!*wake_ns || k->retry_ns < *wake_ns)
			*wake_ns = k->retry_ns;
	}
	return NULL;
}

static void wait_until(uint64_t wake_ns)
{
	if (!wake_ns) {
		pthread_cond_wait(&cv, &mu);
		return;
	}
	struct timespec ts = {(time_t)(wake_ns / 1000000000), (long)(wake_ns % 1000000000)};
	pthread_cond_clockwait(&cv, &mu, CLOCK_MONOTONIC, &ts); /* base_now_ns's clock */
}

/* keeps every kind asked for at its target, creating machines outside the lock; a kind that
 * fails waits (BACKOFF_*), so a host that refuses machines costs no CPU */
static void *refill(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "ember-shells");
	pthread_mutex_lock(&mu);
	for (;;) {
		uint64_t wake_ns;
		struct shell_kind *k = next_kind(base_now_ns(), &wake_ns);
		if (!k) {
			wait_until(wake_ns);
			continue;
		}
		struct vm_config cfg = k->cfg;
		pthread_mutex_unlock(&mu);
		struct vm *vm = NULL;
		char err[EMBER_ERR_MAX];
		int rc = vm_create(&cfg, &vm, err, sizeof(err));
		struct vm_uffds
		    u; /* made now, kept by the machine: a cold start finds them ready */
		if (rc == VM_OK)
			vm_get_uffds(vm, &u, err, sizeof(err));
		pthread_mutex_lock(&mu);
		if (rc != VM_OK) {
			k->backoff_ns = k->backoff_ns ? k->backoff_ns * 2 : BACKOFF_MIN_NS;
			if (k->backoff_ns > BACKOFF_MAX_NS)
				k->backoff_ns = BACKOFF_MAX_NS;
			k->retry_ns = base_now_ns() + k->backoff_ns;
			continue;
		}
		k->retry_ns = k->backoff_ns = 0;
		if (k->n < SHELL_MAX)
			k->vms[k->n++] = vm;
		else
			vm_destroy(vm);
	}
	return NULL;
}

/* with mu held: cfg's kind (NULL for auto or when every slot is taken), the refiller started */
static struct shell_kind *wanted(const struct vm_config *cfg)
{
	struct shell_kind *k = cfg->backend == VM_BACKEND_AUTO ? NULL : kind_of(cfg);
	if (k && !refiller_started) {
		pthread_t th;
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		refiller_started = pthread_create(&th, &attr, refill, NULL) == 0;
		pthread_attr_destroy(&attr);
	}
	pthread_cond_signal(&cv);
	return k;
}

void pool_shell_want(const struct vm_config *cfg)
{
	pthread_mutex_lock(&mu);
	wanted(cfg);
	pthread_mutex_unlock(&mu);
}

int pool_shell(const struct vm_config *cfg, struct vm **out, char *err, size_t errlen)
{
	struct vm *vm = NULL;
	pthread_mutex_lock(&mu);
	struct shell_kind *k = wanted(cfg);
	if (k && k->n > 0)
		vm = k->vms[--k->n];
	pthread_mutex_unlock(&mu);
	if (vm) {
		*out = vm;
		return VM_OK;
	}
	int rc = vm_create(cfg, out, err, errlen);
	if (rc == VM_OK && k) { /* the kind can be made again: no need to wait for its retry */
		pthread_mutex_lock(&mu);
		if (k->retry_ns) {
			k->retry_ns = k->backoff_ns = 0;
			pthread_cond_signal(&cv);
		}
		pthread_mutex_unlock(&mu);
	}
	return rc;
}

/* with mu held: cfg's kind when it exists (a kind nobody asked for, as a child that grew
 * vCPUs would make, is not made one: the refiller would keep machines of it for nothing) and
 * has room for a machine given back */
static struct shell_kind *room_for(const struct vm_config *cfg)
{
	struct shell_kind *k = find_kind(cfg);
	return k && k->n < (int)target + SHELL_SPARE && k->n < SHELL_MAX ? k : NULL;
}

void pool_shell_return(struct vm *vm)
{
	const struct vm_config own = {vm_mem_size(vm), vm_backend_of(vm), vm_cpus(vm)};
	const struct vm_config *cfg = &own;
	pthread_mutex_lock(&mu);
	int wanted = room_for(cfg) != NULL;
	pthread_mutex_unlock(&mu);
	if (!wanted || vm_empty(vm)) { /* emptied outside the lock */
		vm_destroy(vm);
		return;
	}
	pthread_mutex_lock(&mu);
	struct shell_kind *k = room_for(cfg);
	if (k) {
		k->vms[k->n++] = vm;
		vm = NULL;
	}
	pthread_mutex_unlock(&mu);
	vm_destroy(vm);
}

void pool_shell_drain(void)
{
	for (;;) {
		struct vm *vm = NULL;
		pthread_mutex_lock(&mu);
		for (int i = 0; i < nkinds && !vm; i++)
			if (kinds[i].n > 0)
				vm = kinds[i].vms[--kinds[i].n];
		pthread_mutex_unlock(&mu);
		if (!vm)
			return;
		vm_destroy(vm);
	}
}

unsigned pool_shell_ready(const struct vm_config *cfg)
{
	pthread_mutex_lock(&mu);
	struct shell_kind *k = find_kind(cfg);
	unsigned n = k ? (unsigned)k->n : 0;
	pthread_mutex_unlock(&mu);
	return n;
}
