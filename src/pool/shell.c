/* The clean-shell cache: machines created ahead of time, so loading a function never waits. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "pool/pool.h"

#define SHELL_KINDS 8
#define SHELL_MAX   16

struct shell_kind {
	struct vm_config cfg;
	struct vm *vms[SHELL_MAX];
	int n;
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

static struct shell_kind *kind_of(const struct vm_config *cfg)
{
	for (int i = 0; i < nkinds; i++)
		if (kinds[i].cfg.mem_size == cfg->mem_size && kinds[i].cfg.backend == cfg->backend)
			return &kinds[i];
	if (nkinds == SHELL_KINDS)
		return NULL;
	kinds[nkinds].cfg = *cfg;
	return &kinds[nkinds++];
}

/* keeps every kind asked for at its target, creating machines outside the lock */
static void *refill(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	for (;;) {
		struct shell_kind *k = NULL;
		for (int i = 0; i < nkinds && !k; i++)
			if (kinds[i].n < (int)target)
				k = &kinds[i];
		if (!k) {
			pthread_cond_wait(&cv, &mu);
			continue;
		}
		struct vm_config cfg = k->cfg;
		pthread_mutex_unlock(&mu);
		struct vm *vm = NULL;
		char err[160];
		int rc = vm_create(&cfg, &vm, err, sizeof(err));
		pthread_mutex_lock(&mu);
		if (rc != VM_OK) {
			k->cfg.mem_size = 0; /* this kind cannot be made: stop trying */
			continue;
		}
		if (k->n < SHELL_MAX)
			k->vms[k->n++] = vm;
		else
			vm_destroy(vm);
	}
	return NULL;
}

int pool_shell(const struct vm_config *cfg, struct vm **out, char *err, size_t errlen)
{
	struct vm *vm = NULL;
	pthread_mutex_lock(&mu);
	struct shell_kind *k = cfg->backend == VM_BACKEND_AUTO ? NULL : kind_of(cfg);
	if (k && k->n > 0)
		vm = k->vms[--k->n];
	if (k && !refiller_started) {
		pthread_t th;
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		refiller_started = pthread_create(&th, &attr, refill, NULL) == 0;
		pthread_attr_destroy(&attr);
	}
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
	if (vm) {
		*out = vm;
		return VM_OK;
	}
	return vm_create(cfg, out, err, errlen);
}
