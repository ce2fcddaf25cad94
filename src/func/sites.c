/* The syscall sites of a function's library files, found once per file for the emulation, which
 * rewrites them where the program maps them executable (src/sys/sys_sites.c). */
#include <stdlib.h>

#include "func/func.h"

/* one file's sites (none: no ELF file, or out of memory when it was read) */
struct func_lib_sites {
	uint32_t node;
	struct img_sites found;
	struct sys_file_sites view;
};

void func_sites_free(struct ember_function *fn)
{
	for (size_t i = 0; i < fn->nlib_sites; i++) {
		img_sites_free(&fn->lib_sites[i]->found);
		free(fn->lib_sites[i]);
	}
	free(fn->lib_sites);
	fn->lib_sites = NULL;
	fn->nlib_sites = 0;
	pthread_mutex_destroy(&fn->sites_lock);
}

/* node's entry (under sites_lock), or NULL; entries never move nor go before the function does */
static const struct func_lib_sites *cached(const struct ember_function *fn, uint32_t node)
{
	for (size_t i = 0; i < fn->nlib_sites; i++)
		if (fn->lib_sites[i]->node == node)
			return fn->lib_sites[i];
	return NULL;
}

/* the hook of sys_state.file_sites: the function's bundle is b, kept as long as fn */
static const struct sys_file_sites *file_sites(void *ctx, const struct bnd *b, uint32_t node)
{
	struct ember_function *fn = ctx;
	pthread_mutex_lock(&fn->sites_lock);
	const struct func_lib_sites *e = cached(fn, node);
	pthread_mutex_unlock(&fn->sites_lock);
	if (e)
		return &e->view;
	/* a library is disassembled here once, at the first run that maps it (init, before the
	 * snapshot): the invocations after it start with its sites rewritten in guest memory */
	struct func_lib_sites *n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->node = node;
	if (img_file_sites(b->data + b->nodes[node].data_off, b->nodes[node].size, &n->found))
		img_sites_free(&n->found); /* none: ld.so maps no such file executable */
	n->view = (struct sys_file_sites){n->found.addr, n->found.callable, n->found.n};
	pthread_mutex_lock(&fn->sites_lock);
	/* another virtine may have read it meanwhile: its entry stays the one */
	e = cached(fn, node);
	struct func_lib_sites **v =
	    e ? NULL : realloc(fn->lib_sites, (fn->nlib_sites + 1) * sizeof(*fn->lib_sites));
	if (v) {
		fn->lib_sites = v;
		v[fn->nlib_sites++] = n;
		e = n;
	}
	pthread_mutex_unlock(&fn->sites_lock);
	if (e != n) {
		img_sites_free(&n->found);
		free(n);
	}
	return e ? &e->view : NULL;
}

void func_sites_virtine(struct ember_function *fn, struct sys_state *st)
{
	st->file_sites = fn->bundle ? file_sites : NULL;
	st->file_sites_ctx = fn;
}
