/* What a function's processes are made of: machines charged to it, the programs execve loads. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "family/fam.h"
#include "func/func.h"
#include "fs/fs_tmp.h"

#define SHEBANG_MAX   256 /* a #! line's bytes, as Linux's BINPRM_BUF_SIZE */
#define SHEBANG_DEPTH 4	  /* interpreters of interpreters, as Linux's */

/* a program of the function's files, read and checked once (by its node) */
struct func_exec_img {
	uint32_t node;
	struct img *img;
	char *path; /* what /proc/self/exe names for it */
};

void func_exec_free(struct ember_function *fn)
{
	for (size_t i = 0; i < fn->nexec_imgs; i++) {
		img_close(fn->exec_imgs[i]->img);
		free(fn->exec_imgs[i]->path);
		free(fn->exec_imgs[i]);
	}
	free(fn->exec_imgs);
	fn->exec_imgs = NULL;
	fn->nexec_imgs = 0;
	pthread_mutex_destroy(&fn->exec_lock);
}

static int vm_new(void *ctx, int cpus, struct vm **out, char *err, size_t errlen)
{
	struct ember_function *fn = ctx;
	if (budget_take(fn->budget, fn->vmcfg.mem_size, 0))
		return snprintf(err, errlen, "the memory budget is full"), EMBER_ERR_NOMEM;
	struct vm_config cfg = fn->vmcfg;
	cfg.cpus = cpus;
	int rc = pool_shell(&cfg, out, err, errlen);
	if (rc != VM_OK)
		budget_give(fn->budget, fn->vmcfg.mem_size);
	return rc;
}

static void vm_free(void *ctx, struct vm *vm)
{
	struct ember_function *fn = ctx;
	vm_destroy(vm);
	budget_give(fn->budget, fn->vmcfg.mem_size);
}

/* node's entry in the cache (under exec_lock), or NULL; entries never move nor go before the
 * function does */
static const struct func_exec_img *cached(struct ember_function *fn, uint32_t node)
{
	for (size_t i = 0; i < fn->nexec_imgs; i++)
		if (fn->exec_imgs[i]->node == node)
			return fn->exec_imgs[i];
	return NULL;
}

/* the checked program of node: from the cache, else read now (-ENOEXEC: not one) */
static int image_of(struct ember_function *fn, const struct bnd *b, uint32_t node, const char *path,
		    const struct func_exec_img **out)
{
	pthread_mutex_lock(&fn->exec_lock);
	*out = cached(fn, node);
	pthread_mutex_unlock(&fn->exec_lock);
	if (*out)
		return 0;
	const struct bnd_node *n = &b->nodes[node];
	struct img *img;
	char why[EMBER_ERR_MAX];
	int rc = img_from_bytes(b->data + n->data_off, n->size, &img, why, sizeof(why));
	if (rc)
		return rc == EMBER_ERR_NOMEM ? -ENOMEM : -ENOEXEC;
	/* its /proc/self/exe: the file's own absolute path, as Linux gives it (links resolved, a
	 * relative path made whole) */
	char abs[BND_PATH_MAX];
	char *p = strdup(bnd_path_of(b, node, abs, sizeof(abs)) > 0 ? abs
			 : path[0] == '/'			    ? path
								    : "/");
	struct func_exec_img *e = malloc(sizeof(*e));
	pthread_mutex_lock(&fn->exec_lock);
	/* another invocation may have read it meanwhile: its entry stays the one */
	const struct func_exec_img *had = cached(fn, node);
	struct func_exec_img **v =
	    had ? NULL : realloc(fn->exec_imgs, (fn->nexec_imgs + 1) * sizeof(*fn->exec_imgs));
	if (had || !v || !p || !e) {
		pthread_mutex_unlock(&fn->exec_lock);
		img_close(img);
		free(p);
		free(e);
		return had ? (*out = had, 0) : -ENOMEM;
	}
	fn->exec_imgs = v;
	*e = (struct func_exec_img){node, img, p};
	v[fn->nexec_imgs++] = e;
	*out = e;
	pthread_mutex_unlock(&fn->exec_lock);
	return 0;
}

/* what a program to exec is */
struct exec_plan {
	const struct img *img, *interp;
	const char *path; /* its /proc/self/exe */
	char *const *argv;
	char **owned_argv; /* a #! line's, freed by the caller */
};

/* path in from's files, from its cwd, or where a link of /tmp's leads in them; a relative path
 * from a /tmp cwd names nothing there (nothing in /tmp runs) */
static int exec_lookup(const struct sys_state *from, const char *path, uint32_t *node)
{
	struct sys_tmp_at at;
	/* with a tree there, the walk only reads it (the cast: it would make one where none is) */
	if (from->tmp &&
	    !sys_tmp_walk((struct sys_state *)from, (uint64_t)(int64_t)AT_FDCWD, path,
			  SYS_TMP_FOLLOW, &at) &&
	    at.outside[0])
		return bnd_lookup(from->bundle, 0, at.outside, 1, node, NULL);
	if ((from->cwd & SYS_CWD_TMP) && path[0] != '/')
		return -ENOENT;
	return bnd_lookup(from->bundle, from->cwd & ~SYS_CWD_TMP, path, 1, node, NULL);
}

static int is_self(const struct ember_function *fn, const struct sys_state *from, const char *p)
{
	if (!strcmp(p, "/proc/self/exe"))
		return from->exe == fn->img->buf;
	/* by the name it was started with, when no file of the function has it (a host path) */
	uint32_t node;
	return (fn->exe_path && !strcmp(p, fn->exe_path)) ||
	       (fn->argv && fn->argv[0] && !strcmp(p, fn->argv[0]) &&
		(!from->bundle || exec_lookup(from, p, &node)));
}

/* argv for a #! line of file: the interpreter, its one argument, the script, the rest */
static int shebang(const uint8_t *data, size_t size, const char *path, char *const *argv,
		   char *interp, char **arg, char ***out)
{
	size_t n = size < SHEBANG_MAX ? size : SHEBANG_MAX, i = 2, j;
	while (i < n && (data[i] == ' ' || data[i] == '\t'))
		i++;
	for (j = i; j < n && data[j] != '\n' && data[j] != ' ' && data[j] != '\t'; j++)
		;
	if (j == i || j == n)
		return -ENOEXEC;
	memcpy(interp, data + i, j - i);
	interp[j - i] = 0;
	size_t k = j;
	while (k < n && (data[k] == ' ' || data[k] == '\t'))
		k++;
	size_t e = k;
	while (e < n && data[e] != '\n')
		e++;
	while (e > k && (data[e - 1] == ' ' || data[e - 1] == '\t' || data[e - 1] == '\r'))
		e--;
	*arg = e > k ? strndup((const char *)data + k, e - k) : NULL;
	size_t argc = 0;
	while (argv[argc])
		argc++;
	char **v = calloc(argc + 4, sizeof(*v));
	if (!v || (e > k && !*arg))
		return free(v), free(*arg), -ENOMEM;
	size_t m = 0;
	v[m++] = interp;
	if (*arg)
		v[m++] = *arg;
	v[m++] = (char *)path;
	for (size_t a = 1; a < argc; a++)
		v[m++] = argv[a];
	*out = v;
	return 0;
}

/* path resolved to a program to load, following #! lines */
static int plan_exec(struct ember_function *fn, const struct sys_state *from, const char *path,
		     char *const *argv, struct exec_plan *p, char (*interp)[SHEBANG_MAX],
		     char **args, int depth)
{
	const struct bnd *b = from->bundle;
	if (!strcmp(path, "/proc/self/exe") && from->exe != fn->img->buf) {
		/* a program an execve made: the cache has it */
		pthread_mutex_lock(&fn->exec_lock);
		for (size_t i = 0; i < fn->nexec_imgs && !p->img; i++)
			if (fn->exec_imgs[i]->img->buf == from->exe) {
				p->img = fn->exec_imgs[i]->img;
				p->path = fn->exec_imgs[i]->path;
			}
		pthread_mutex_unlock(&fn->exec_lock);
		p->argv = argv;
		p->interp = NULL;
		return p->img && !p->img->elf.interp[0] ? 0 : -ENOEXEC;
	}
	if (is_self(fn, from, path)) {
		p->img = fn->img;
		p->interp = fn->interp;
		p->path = fn->exe_path ? fn->exe_path : "/";
		p->argv = argv;
		return 0;
	}
	uint32_t node;
	if (!b)
		return -ENOENT; /* no files: the program itself is all there is */
	int rc = exec_lookup(from, path, &node);
	if (rc)
		return rc;
	const struct bnd_node *n = &b->nodes[node];
	if (bnd_is(b, node, S_IFDIR) || !bnd_is(b, node, S_IFREG) || !(n->mode & 0111))
		return -EACCES;
	const uint8_t *data = b->data + n->data_off;
	if (n->size >= 2 && data[0] == '#' && data[1] == '!') {
		if (depth >= SHEBANG_DEPTH)
			return -ELOOP;
		char **v;
		if ((rc = shebang(data, n->size, path, argv, interp[depth], &args[depth], &v)))
			return rc;
		free(p->owned_argv);
		p->owned_argv = v;
		return plan_exec(fn, from, interp[depth], v, p, interp, args, depth + 1);
	}
	const struct func_exec_img *e;
	if ((rc = image_of(fn, b, node, path, &e)))
		return rc;
	p->img = e->img;
	p->path = e->path;
	p->argv = argv;
	p->interp = NULL;
	if (!e->img->elf.interp[0])
		return 0;
	/* a dynamic program: its interpreter from the same files, a static PIE as ld.so is */
	uint32_t in;
	if (bnd_lookup(b, 0, e->img->elf.interp, 1, &in, NULL) || !bnd_is(b, in, S_IFREG))
		return -ENOENT;
	const struct func_exec_img *ie;
	if ((rc = image_of(fn, b, in, e->img->elf.interp, &ie)))
		return rc;
	if (ie->img->elf.interp[0] || !ie->img->elf.pie)
		return -ELIBBAD;
	p->interp = ie->img;
	return 0;
}

struct load_args {
	struct ember_function *fn;
	const struct sys_state *from;
	const struct exec_plan *p;
	char *const *envp;
	struct vm *vm;
	struct sys_state *st;
	int rc;
};

/* on the machine's thread: the program loaded and started, as a first run is */
static void load(void *arg)
{
	struct load_args *a = arg;
	struct ember_function *fn = a->fn;
	struct img_layout l;
	char err[EMBER_ERR_MAX];
	int rc = img_load(a->p->img, a->p->interp, a->vm, (const char *const *)a->p->argv,
			  (const char *const *)a->envp, fn->rt->guest, &l, err, sizeof(err));
	if (rc) {
		a->rc = rc == EMBER_ERR_NOMEM	 ? -ENOMEM
			: rc == EMBER_ERR_CONFIG ? -E2BIG
						 : -ENOEXEC;
		return;
	}
	struct sys_process proc =
	    func_process_of(&l, 1, a->from->proc.max_threads, a->from->proc.max_pids);
	if (sys_init(a->st, a->vm, &proc)) {
		a->rc = -ENOMEM;
		return;
	}
	sys_set_exe(a->st, a->p->img->buf, a->p->img->len, a->p->path);
	a->rc = func_start_program(a->st, a->vm, &l, err, sizeof(err)) ? -ENOMEM : 0;
}

static int exec_load(void *ctx, const struct sys_state *from, const char *path, char *const *argv,
		     char *const *envp, struct vm *vm, struct sys_state *st)
{
	struct ember_function *fn = ctx;
	struct exec_plan p;
	memset(&p, 0, sizeof(p));
	char interp[SHEBANG_DEPTH][SHEBANG_MAX];
	char *args[SHEBANG_DEPTH] = {0};
	int rc = plan_exec(fn, from, path, argv, &p, interp, args, 0);
	if (!rc) {
		struct load_args a = {fn, from, &p, envp, vm, st, 0};
		vm_call(vm, load, &a);
		rc = a.rc;
	}
	free(p.owned_argv);
	for (int i = 0; i < SHEBANG_DEPTH; i++)
		free(args[i]);
	return rc;
}

static const struct snap *base(void *ctx)
{
	struct ember_function *fn = ctx;
	return func_state(fn) == FUNC_WARM && fn->snap.sealed ? &fn->snap : NULL;
}

const struct fam_loader func_fam_loader = {vm_new, vm_free, exec_load, base};
