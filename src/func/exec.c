/* What a function's processes are made of: machines charged to it, the programs execve loads. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "family/fam.h"
#include "func/func.h"
#include "func/exec_file.h"

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

/* the machine emptied and kept as a clean shell for the next fork or execve (the function's
 * charge goes back either way: a shell is nobody's) */
static void vm_free(void *ctx, struct vm *vm)
{
	struct ember_function *fn = ctx;
	pool_shell_return(vm);
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
	bnd_want(b, n->data_off, n->size); /* copied, hashed and scanned whole */
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

/* a program read for one execve, held by the family while a process runs it (fam_loader's
 * keep): its image and the path /proc/self/exe names */
struct exec_kept {
	struct img *img;
	char *path;
};

static void keep_free(void *ctx, void *keep)
{
	(void)ctx;
	struct exec_kept *k = keep;
	img_close(k->img);
	free(k->path);
	free(k);
}

/* what a program to exec is */
struct exec_plan {
	const struct img *img, *interp;
	const char *path; /* its /proc/self/exe */
	char *const *argv;
	char **owned_argv[EXEC_DEPTH];	/* each #! line's, freed by the caller (a deeper one's
					 * strings are those before it) */
	struct exec_kept *kept;		/* the program when it is no file of the function's */
	struct img *interp_own;		/* its interpreter, likewise: only for the load */
	char interp_path[BND_PATH_MAX]; /* a dynamic program's interpreter's path */
	char
	    execfn[BND_PATH_MAX + 16]; /* the path execve was given (AT_EXECFN, Linux's filename) */
	char comm[16];		       /* the new program's name ("": its file's, exe's) */
};

/* what the program is called (Linux's begin_new_exec): the last name of the path it was given;
 * an open file's (AT_EMPTY_PATH) the file it runs (an interpreter's for a script): "", its exe's */
static void name_it(struct exec_plan *p, const struct sys_exec_at *at, const char *name)
{
	snprintf(p->execfn, sizeof(p->execfn), "%s", name);
	const char *slash = strrchr(at->path, '/');
	snprintf(p->comm, sizeof(p->comm), "%s", slash ? slash + 1 : at->path);
}

static int is_self(const struct ember_function *fn, struct sys_state *from, const char *p)
{
	if (!strcmp(p, "/proc/self/exe"))
		return from->exe == fn->img->buf;
	/* by the name it was started with, when no file of the function has it (a host path) */
	struct exec_src src;
	const struct sys_exec_at at = {AT_FDCWD, p, 0};
	return (fn->exe_path && !strcmp(p, fn->exe_path)) ||
	       (fn->argv && fn->argv[0] && !strcmp(p, fn->argv[0]) &&
		(!from->bundle || exec_find(from, &at, &src) == -ENOENT));
}

/* bytes read for this load only (a /tmp file, the running program): checked as a bundle's are
 * (the copy is the image's, so a later write to the file changes nothing) */
static int image_read(const struct exec_src *src, struct img **out)
{
	char why[EMBER_ERR_MAX];
	int rc = img_from_bytes(src->data, src->size, out, why, sizeof(why));
	return rc ? (rc == EMBER_ERR_NOMEM ? -ENOMEM : -ENOEXEC) : 0;
}

/* a dynamic program's interpreter: from the function's files or /tmp, a static PIE as ld.so is */
static int plan_interp(struct ember_function *fn, struct sys_state *from, const char *path,
		       struct exec_plan *p)
{
	snprintf(p->interp_path, sizeof(p->interp_path), "%s", path);
	const struct sys_exec_at at = {AT_FDCWD, p->interp_path, 0};
	struct exec_src src;
	int rc = exec_find(from, &at, &src);
	if (rc == -EACCES)
		rc = -ENOENT; /* no regular file there (its execute bit is not asked for) */
	if (rc)
		return rc;
	const struct img *img;
	if (src.from_tmp) {
		if ((rc = image_read(&src, &p->interp_own)))
			return rc;
		img = p->interp_own;
	} else {
		const struct func_exec_img *ie;
		if ((rc = image_of(fn, from->bundle, src.node, path, &ie)))
			return rc;
		img = ie->img;
	}
	if (img->elf.interp[0] || !img->elf.pie)
		return -ELIBBAD;
	p->interp = img;
	return 0;
}

/* a program read now, kept by the family while it runs */
static int plan_read(const struct exec_src *src, struct exec_plan *p)
{
	struct exec_kept *k = calloc(1, sizeof(*k));
	const char *path = src->exe ? src->exe : src->abs[0] ? src->abs : src->name;
	if (!k || !(k->path = strdup(path)))
		return free(k), -ENOMEM;
	int rc = image_read(src, &k->img);
	if (rc)
		return free(k->path), free(k), rc;
	p->kept = k;
	p->img = k->img;
	p->path = k->path;
	return 0;
}

/* at resolved to a program to load, following #! lines */
static int plan_exec(struct ember_function *fn, struct sys_state *from,
		     const struct sys_exec_at *at, char *const *argv, struct exec_plan *p,
		     char (*interp)[EXEC_SHEBANG_MAX], char **args, int depth)
{
	p->argv = argv;
	if (!depth)
		name_it(p, at, at->path);
	if (at->dirfd == AT_FDCWD && is_self(fn, from, at->path)) {
		p->img = fn->img;
		p->interp = fn->interp;
		p->path = fn->exe_path ? fn->exe_path : "/";
		return 0;
	}
	struct exec_src src;
	int rc;
	if (at->dirfd == AT_FDCWD && !strcmp(at->path, "/proc/self/exe")) {
		/* a program an execve made: its bytes, as it runs them */
		memset(&src, 0, sizeof(src));
		snprintf(src.name, sizeof(src.name), "%s", at->path);
		src.data = from->exe;
		src.size = from->exe_len;
		src.from_tmp = 1;
		src.exe = from->exe_path ? from->exe_path : "/";
		if (!src.data)
			return -ENOENT;
	} else if (!from->bundle && !from->tmp && at->path[0])
		return -ENOENT; /* no files: the program itself is all there is */
	else if ((rc = exec_find(from, at, &src)))
		return rc;
	if (!depth)
		name_it(p, at, src.name);
	if (src.size >= 2 && src.data[0] == '#' && src.data[1] == '!') {
		if (depth >= EXEC_DEPTH)
			return -ELOOP;
		if (src.cloexec)
			return -ENOENT; /* its /dev/fd/N is gone once the exec is done, as Linux */
		char **v;
		if ((rc = exec_shebang(&src, argv, interp[depth], &args[depth], &v)))
			return rc;
		p->owned_argv[depth] = v;
		const struct sys_exec_at next = {AT_FDCWD, interp[depth], 0};
		return plan_exec(fn, from, &next, v, p, interp, args, depth + 1);
	}
	if (src.from_tmp) {
		if ((rc = plan_read(&src, p)))
			return rc;
	} else {
		const struct func_exec_img *e;
		if ((rc = image_of(fn, from->bundle, src.node, at->path, &e)))
			return rc;
		p->img = e->img;
		p->path = e->path;
	}
	p->interp = NULL;
	return p->img->elf.interp[0] ? plan_interp(fn, from, p->img->elf.interp, p) : 0;
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
	int rc = img_load_as(a->p->img, a->p->interp, a->vm, (const char *const *)a->p->argv,
			     (const char *const *)a->envp, a->p->execfn, fn->rt->guest, &l, err,
			     sizeof(err));
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
	size_t i = 0;
	struct proc_thread *t = a->rc ? NULL : proc_each(&a->st->pr, &i);
	if (t) /* its name as Linux's (comm): "" leaves it to its file's (sys_prctl.c) */
		memcpy(t->comm, a->p->comm, sizeof(t->comm));
}

static int exec_load(void *ctx, struct sys_state *from, const struct sys_exec_at *at,
		     char *const *argv, char *const *envp, struct vm *vm, struct sys_state *st,
		     void **keep)
{
	struct ember_function *fn = ctx;
	struct exec_plan p;
	memset(&p, 0, sizeof(p));
	char interp[EXEC_DEPTH][EXEC_SHEBANG_MAX];
	char *args[EXEC_DEPTH] = {0};
	int rc = plan_exec(fn, from, at, argv, &p, interp, args, 0);
	if (!rc) {
		struct load_args a = {fn, from, &p, envp, vm, st, 0};
		vm_call(vm, load, &a);
		rc = a.rc;
	}
	if (!rc && p.kept)
		*keep = p.kept;
	else if (p.kept)
		keep_free(ctx, p.kept);
	img_close(p.interp_own);
	for (int i = 0; i < EXEC_DEPTH; i++) {
		free(p.owned_argv[i]);
		free(args[i]);
	}
	return rc;
}

static const struct snap *base(void *ctx, const struct sys_state *st)
{
	struct ember_function *fn = ctx;
	/* a warm machine, or a start from disk's that read the snapshot whole: restored from it as
	 * a warm one is, it stays in place until the run's family is gone (cold.c read_finish) */
	int from = func_state(fn) == FUNC_WARM || (fn->whole && fn->whole == st->vm);
	return from && fn->snap.sealed ? &fn->snap : NULL;
}

static int settle(void *ctx, struct sys_state *st)
{
	struct ember_function *fn = ctx;
	/* the first process of a start from disk, in the machine its fault server serves (not
	 * one an execve made) */
	return fn->serving && fn->serving->vm == st->vm ? cold_fill(fn->serving) : 0;
}

const struct fam_loader func_fam_loader = {vm_new, vm_free, exec_load, keep_free, base, settle};
