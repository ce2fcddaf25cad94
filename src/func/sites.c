/* The syscall sites of a function's library files, found once per file for the emulation, which
 * rewrites them where the program maps them executable (src/sys/sys_sites.c). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "func/func.h"

/* one file's sites (none: no ELF file, or out of memory when it was read) */
struct func_lib_sites {
	uint32_t node;
	int busy; /* being found by the thread ahead (func_sites_ahead): view not yet filled */
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
	pthread_cond_destroy(&fn->sites_done);
}

/* node's entry (under sites_lock), or NULL; entries never move nor go before the function does */
static const struct func_lib_sites *cached(const struct ember_function *fn, uint32_t node)
{
	for (size_t i = 0; i < fn->nlib_sites; i++)
		if (fn->lib_sites[i]->node == node)
			return fn->lib_sites[i];
	return NULL;
}

/* node's entry once it is whole (under sites_lock): the thread ahead's result is waited for,
 * not found a second time */
static const struct func_lib_sites *found(struct ember_function *fn, uint32_t node)
{
	const struct func_lib_sites *e;
	while ((e = cached(fn, node)) && e->busy)
		pthread_cond_wait(&fn->sites_done, &fn->sites_lock);
	return e;
}

/* the hook of sys_state.file_sites: the function's bundle is b, kept as long as fn */
static const struct sys_file_sites *file_sites(void *ctx, const struct bnd *b, uint32_t node)
{
	struct ember_function *fn = ctx;
	pthread_mutex_lock(&fn->sites_lock);
	const struct func_lib_sites *e = found(fn, node);
	pthread_mutex_unlock(&fn->sites_lock);
	if (e)
		return &e->view;
	/* a library is disassembled here once, at the first run that maps it (init, before the
	 * snapshot): the invocations after it start with its sites rewritten in guest memory */
	struct func_lib_sites *n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->node = node;
	bnd_want(b, b->nodes[node].data_off, b->nodes[node].size);
	if (img_file_sites(b->data + b->nodes[node].data_off, b->nodes[node].size, &n->found))
		img_sites_free(&n->found); /* none: ld.so maps no such file executable */
	n->view = (struct sys_file_sites){n->found.addr, n->found.callable, n->found.n};
	pthread_mutex_lock(&fn->sites_lock);
	/* another virtine (or the thread ahead) may have read it meanwhile: its entry stays */
	e = found(fn, node);
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

/* node's sites found ahead: its entry made busy first, so that a run mapping it waits */
static void find_ahead(struct ember_function *fn, const struct bnd *b, uint32_t node)
{
	struct func_lib_sites *n = calloc(1, sizeof(*n)), **v = NULL;
	if (!n)
		return;
	n->node = node;
	n->busy = 1;
	pthread_mutex_lock(&fn->sites_lock);
	if (!cached(fn, node) &&
	    (v = realloc(fn->lib_sites, (fn->nlib_sites + 1) * sizeof(*fn->lib_sites)))) {
		fn->lib_sites = v;
		v[fn->nlib_sites++] = n;
	}
	pthread_mutex_unlock(&fn->sites_lock);
	if (!v) {
		free(n);
		return;
	}
	bnd_want(b, b->nodes[node].data_off, b->nodes[node].size);
	if (img_file_sites(b->data + b->nodes[node].data_off, b->nodes[node].size, &n->found))
		img_sites_free(&n->found);
	pthread_mutex_lock(&fn->sites_lock);
	n->view = (struct sys_file_sites){n->found.addr, n->found.callable, n->found.n};
	n->busy = 0;
	pthread_cond_broadcast(&fn->sites_done);
	pthread_mutex_unlock(&fn->sites_lock);
}

static void *ahead_main(void *arg)
{
	struct ember_function *fn = arg;
	for (int i = 0; i < fn->nahead; i++)
		find_ahead(fn, fn->bundle, fn->ahead_node[i]);
	return NULL;
}

/* where ld.so finds a library named without a path, first (its cache names these too) */
static const char *const lib_dirs[] = {"/lib/x86_64-linux-gnu",
				       "/usr/lib/x86_64-linux-gnu",
				       "/lib64",
				       "/usr/lib64",
				       "/lib",
				       "/usr/lib"};

/* the node of a library ld.so would load by that name from the function's files, or -1 */
static long lib_node(const struct bnd *b, const char *name)
{
	char path[IMG_NEEDED_NAME + 32];
	uint32_t node;
	for (size_t i = 0; i < sizeof(lib_dirs) / sizeof(lib_dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", lib_dirs[i], name);
		if (!bnd_lookup(b, 0, path, 1, &node, NULL) && bnd_is(b, node, S_IFREG))
			return node;
	}
	return -1;
}

void func_sites_ahead(struct ember_function *fn)
{
	enum { NAMES = sizeof(fn->ahead_node) / sizeof(fn->ahead_node[0]) };
	char(*names)[IMG_NEEDED_NAME] = malloc(NAMES * sizeof(*names)), why[128];
	int n = 0;
	const struct bnd *b = fn->bundle;
	fn->nahead = 0;
	/* only a program in guest mode rewrites its libraries' sites */
	if (!names || !b || !fn->rt->guest ||
	    img_needed(fn->img->buf, fn->img->len, names, NAMES, &n, why, sizeof(why)))
		n = 0;
	for (int i = 0; i < n; i++) {
		long node = lib_node(b, names[i]);
		if (node < 0)
			continue;
		int k = fn->nahead++; /* the largest first: libc's before libm's */
		for (; k > 0 && b->nodes[fn->ahead_node[k - 1]].size < b->nodes[node].size; k--)
			fn->ahead_node[k] = fn->ahead_node[k - 1];
		fn->ahead_node[k] = (uint32_t)node;
	}
	free(names);
	if (fn->nahead && !pthread_create(&fn->ahead, NULL, ahead_main, fn))
		fn->ahead_on = 1;
}

void func_sites_join(struct ember_function *fn)
{
	if (fn->ahead_on)
		pthread_join(fn->ahead, NULL);
	fn->ahead_on = 0;
}

void func_sites_read(struct ember_function *fn)
{
	img_sites_fill(fn->img, NULL, 0);
	if (fn->interp)
		img_sites_fill(fn->interp, NULL, 0);
}

void ember_info_sites(struct ember_function *fn, struct ember_info *info)
{
	func_sites_read(fn);
	ember_info(fn, info);
}
