/* What a machine holds of the host besides memory: its mappings and its descriptors, counted. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "vm/vm_impl.h"

int vm_maps_read(struct vm_maps *m)
{
	m->r = NULL;
	m->n = 0;
	FILE *f = fopen("/proc/self/maps", "re");
	if (!f)
		return -errno;
	size_t cap = 0;
	unsigned long lo, hi;
	char line[512];
	int rc = 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx", &lo, &hi) != 2)
			continue;
		if (m->n == cap) {
			cap = cap ? cap * 2 : 1024;
			uint64_t(*r)[2] = realloc(m->r, cap * sizeof(*r));
			if (!r) {
				rc = -ENOMEM;
				break;
			}
			m->r = r;
		}
		m->r[m->n][0] = lo;
		m->r[m->n++][1] = hi;
	}
	fclose(f);
	if (rc)
		vm_maps_free(m);
	return rc;
}

void vm_maps_free(struct vm_maps *m)
{
	free(m->r);
	m->r = NULL;
	m->n = 0;
}

/* the mappings of m meeting [lo, hi): the kernel lists them sorted and apart */
static unsigned maps_within(const struct vm_maps *m, uint64_t lo, uint64_t hi)
{
	size_t a = 0, b = m->n;
	while (a < b) { /* the first one ending above lo */
		size_t mid = (a + b) / 2;
		if (m->r[mid][1] <= lo)
			a = mid + 1;
		else
			b = mid;
	}
	unsigned n = 0;
	for (; a < m->n && m->r[a][0] < hi; a++)
		n++;
	return n;
}

void vm_host_hold(const struct vm *vm, const struct vm_maps *m, struct vm_hold *h)
{
	uintptr_t base = (uintptr_t)vm->mem;
	h->maps = vm->mem ? maps_within(m, base, base + vm->mem_size) : 0;
	h->fds = (vm->memfd >= 0) + (vm->host_uffd >= 0);
	h->slot_bytes = 0;
	if (vm->ops && vm->ops->hold)
		vm->ops->hold(vm, h);
}
