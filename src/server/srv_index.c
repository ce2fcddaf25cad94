/* The function table's index by name: open addressing over the entries, remade on a change. */
#include <stdlib.h>
#include <string.h>

#include "server/srv_core.h"
#include "server/srv_registry.h"

static uint64_t hash(const char *name)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 1099511628211ULL;
	return h;
}

void index_rebuild(struct srv *s)
{
	size_t cap = 16;
	while (cap < 2 * s->nfns)
		cap *= 2;
	struct srv_entry **v = cap == s->index_cap ? s->index : calloc(cap, sizeof(*v));
	if (!v) { /* reg_find falls back to a scan */
		free(s->index);
		s->index = NULL;
		s->index_cap = 0;
		return;
	}
	if (v == s->index)
		memset(v, 0, cap * sizeof(*v));
	else
		free(s->index);
	for (size_t i = 0; i < s->nfns; i++) {
		size_t k = hash(s->fns[i]->spec->name) & (cap - 1);
		while (v[k])
			k = (k + 1) & (cap - 1);
		v[k] = s->fns[i];
	}
	s->index = v;
	s->index_cap = cap;
}

struct srv_entry *index_find(const struct srv *s, const char *name)
{
	for (size_t k = hash(name) & (s->index_cap - 1); s->index[k];
	     k = (k + 1) & (s->index_cap - 1))
		if (!strcmp(s->index[k]->spec->name, name))
			return s->index[k];
	return NULL;
}

void index_free(struct srv *s)
{
	free(s->index);
	s->index = NULL;
	s->index_cap = 0;
}
