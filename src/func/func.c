/* A loaded function: its image, the snapshot taken after its initialisation, its pool. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <xxhash.h>

#include "func/func.h"

#define DEFAULT_TIMEOUT 10.0

static char **dup_vec(const char *const *v, const char *fallback)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	char **d = calloc(n + 2, sizeof(*d));
	if (!d)
		return NULL;
	if (!v && fallback)
		v = &fallback, n = 1;
	for (size_t i = 0; i < n; i++) {
		if ((d[i] = strdup(v[i])))
			continue;
		while (i-- > 0) /* out of memory: none of it */
			free(d[i]);
		free(d);
		return NULL;
	}
	return d;
}

static void free_vec(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* a bad configuration: EMBER_ERR_CONFIG with the reason */
#define BAD_CONFIG(...) (snprintf(err, errlen, __VA_ARGS__), EMBER_ERR_CONFIG)

/* the function's files and its runtime's in one tree, packed once */
static int bundle(struct ember_function *fn, const struct ember_config *cfg, char *err,
		  size_t errlen)
{
	if (cfg->files && cfg->files_tar)
		return BAD_CONFIG("give files or files_tar, not both");
	if (!cfg->files && !cfg->files_tar && !cfg->runtime_files)
		return 0; /* the secrets alone come after a dynamic program's closure */
	const char *paths[] = {cfg->runtime_files, cfg->files};
	char why[EMBER_ERR_MAX] = "out of memory";
	static const char *const from[] = {
	    [BND_FROM_PACKED] = "packed", [BND_FROM_KEPT] = "kept", [BND_FROM_CHECKED] = "checked"};
	struct bnd_how how = {BND_FROM_PACKED, ""};
	uint64_t t0 = base_now_ns();
	/* kept packed in the state folder: a load of the same tree reads it back (bnd_cache.c);
	 * never with secrets, which are kept in memory only (and not in the cache's key) */
	fn->bundle = cfg->nsecret_files ? func_secrets_build(paths, 2, cfg, why, sizeof(why))
					: bnd_build(paths, 2, cfg->files_tar, cfg->files_tar_len,
						    cfg->state_dir, &how, why, sizeof(why));
	fn->parts.bundle_us = base_us_since(t0);
	fn->parts.bundle_from = from[how.from];
	snprintf(fn->damaged, sizeof(fn->damaged), "%s", how.damaged);
	fn->parts.damaged = fn->damaged[0] ? fn->damaged : NULL;
	if (!fn->bundle)
		return BAD_CONFIG("%s%s", cfg->files_tar ? "files: " : "", why);
	return 0;
}

/* the folder the program starts in: one of the function's files' folders */
static int workdir(struct ember_function *fn, const struct ember_config *cfg, char *err,
		   size_t errlen)
{
	fn->cwd = 0;
	if (!cfg->workdir || !strcmp(cfg->workdir, "/"))
		return 0;
	if (cfg->workdir[0] != '/')
		return BAD_CONFIG("workdir must be an absolute path, not '%s'", cfg->workdir);
	if (!fn->bundle)
		return BAD_CONFIG("workdir '%s' needs the function's files", cfg->workdir);
	uint32_t node;
	if (bnd_lookup(fn->bundle, 0, cfg->workdir, 1, &node, NULL) ||
	    !bnd_is(fn->bundle, node, S_IFDIR))
		return BAD_CONFIG("workdir '%s' is no folder of the function's files",
				  cfg->workdir);
	fn->cwd = node;
	return 0;
}

static int configure(struct ember_function *fn, const struct ember_config *cfg, char *err,
		     size_t errlen)
{
	fn->vmcfg.mem_size = cfg->mem_bytes ? cfg->mem_bytes : EMBER_MEM_DEFAULT;
	if (fn->vmcfg.mem_size < EMBER_MEM_MIN || fn->vmcfg.mem_size > EMBER_MEM_MAX ||
	    fn->vmcfg.mem_size % EMBER_MEM_ALIGN)
		return BAD_CONFIG("guest memory must be a multiple of 2 MiB from %llu MiB to %llu "
				  "GiB, not %llu bytes",
				  EMBER_MEM_MIN >> 20, EMBER_MEM_MAX >> 30,
				  (unsigned long long)fn->vmcfg.mem_size);
	fn->vmcfg.backend = VM_BACKEND_KVM;
	if (cfg->backend && vm_backend_parse(cfg->backend, &fn->vmcfg.backend))
		return BAD_CONFIG("unknown backend '%s' (kvm, ptrace or auto)", cfg->backend);
	fn->cpus = cfg->cpus ? (int)cfg->cpus : 1;
	if (cfg->cpus > EMBER_CPUS_MAX)
		return BAD_CONFIG("cpus must be 1 to %d, not %u", EMBER_CPUS_MAX, cfg->cpus);
	if (fn->cpus > 1 && fn->vmcfg.backend == VM_BACKEND_PTRACE)
		return BAD_CONFIG("the ptrace backend runs one vCPU per virtine: cpus must be 1");
	fn->vmcfg.cpus = fn->cpus;
	fn->max_threads = cfg->threads ? (int)cfg->threads : PROC_THREADS_DEFAULT;
	if (cfg->threads > PROC_THREADS_MAX)
		return BAD_CONFIG("threads must be 1 to %d, not %u", PROC_THREADS_MAX,
				  cfg->threads);
	fn->max_pids = cfg->pids ? (int)cfg->pids : SYS_PIDS_DEFAULT;
	if (cfg->pids > SYS_PIDS_MAX)
		return BAD_CONFIG("pids must be 1 to %d, not %u", SYS_PIDS_MAX, cfg->pids);
	double t = cfg->timeout_s > 0 ? cfg->timeout_s : DEFAULT_TIMEOUT;
	if (t > 86400)
		return BAD_CONFIG("timeout must be at most 86400 seconds");
	fn->timeout_ns = (uint64_t)(t * 1e9);
	fn->output_limit = cfg->output_limit ? cfg->output_limit : EMBER_OUTPUT_DEFAULT;
	fn->no_ready = cfg->no_ready != 0;
	fn->pool_size = fn->no_ready ? 0 : cfg->pool_size ? cfg->pool_size : 1;
	fn->refill.on = !fn->no_ready && cfg->pool_max > fn->pool_size;
	fn->pool_slots = fn->refill.on ? cfg->pool_max : fn->pool_size ? fn->pool_size : 1;
	fn->budget = cfg->budget;
	if (cfg->keep_alive_s < 0)
		return BAD_CONFIG("keep_alive_s must not be negative");
	fn->strict_init = cfg->strict_init;
	/* by default the in-guest runtime serves the common calls, wherever page 0 can be its */
	const char *mode = cfg->syscalls		  ? cfg->syscalls
			   : vm_low_ok(fn->vmcfg.backend) ? "guest"
							  : "trap";
	if (!(fn->rt = sys_rt_named(mode)))
		return BAD_CONFIG("syscalls must be trap or guest, not '%s'", mode);
	fn->share = SNAP_SHARE_UPM;
	if (cfg->sharing && snap_share_parse(cfg->sharing, &fn->share))
		return BAD_CONFIG("sharing must be upm, off or ksm, not '%s'", cfg->sharing);
	if (cfg->sharing_domain && strlen(cfg->sharing_domain) >= 128)
		return BAD_CONFIG("a sharing domain's name has at most 127 bytes");
	int rc = func_share_open(fn, cfg->sharing_domain, err, errlen);
	if (rc)
		return rc;
	fn->rt->prepare(); /* the runtime's clock calibration runs now, not in the first request */
	fn->restore = SNAP_REAP;
	if (cfg->restore && !strcmp(cfg->restore, "lazy"))
		fn->restore = SNAP_LAZY;
	else if (cfg->restore && strcmp(cfg->restore, "reap"))
		return BAD_CONFIG("restore must be lazy or reap, not '%s'", cfg->restore);
	if (cfg->cold && (!cfg->state_dir || cfg->no_snapshot))
		return BAD_CONFIG("a cold start needs a state folder and a snapshot");
	if (!cfg->image)
		return BAD_CONFIG("no image given");
	fn->argv = dup_vec(cfg->argv, cfg->image);
	fn->envp = dup_vec(cfg->envp, NULL);
	if (cfg->code_len && (fn->code = malloc(cfg->code_len)))
		memcpy(fn->code, cfg->code, cfg->code_len);
	fn->code_len = cfg->code_len;
	if (!fn->argv || !fn->envp || (cfg->code_len && !fn->code))
		return snprintf(err, errlen, "out of memory"), EMBER_ERR_NOMEM;
	rc = bundle(fn, cfg, err, errlen);
	return rc ? rc : workdir(fn, cfg, err, errlen);
}

const char *func_image_from(enum img_from from)
{
	static const char *const names[] = {[IMG_SCANNED] = "scanned",
					    [IMG_TABLE] = "table",
					    [IMG_SHARED] = "shared",
					    [IMG_HINT] = "hint"};
	return names[from];
}

/* The program: a file of the function's own files where its path names one (a root filesystem's
 * /usr/bin/python3), else the host's; with image_in_files, only the former */
static int open_image(struct ember_function *fn, const struct ember_config *cfg, char *err,
		      size_t errlen)
{
	const struct bnd *b = fn->bundle;
	uint32_t node;
	struct img_how how;
	int rc;
	if (b && cfg->image[0] == '/' && !bnd_lookup(b, 0, cfg->image, 1, &node, NULL) &&
	    bnd_is(b, node, S_IFREG)) {
		char why[EMBER_ERR_MAX - 64];
		rc = img_from_bytes_kept(b->data + b->nodes[node].data_off, b->nodes[node].size,
					 func_file_id(b, node), fn->img_dir, &fn->img, &how, why,
					 sizeof(why));
		if (rc)
			return snprintf(err, errlen, "%s (of its files): %s", cfg->image, why), rc;
	} else if (cfg->image_in_files) {
		return snprintf(err, errlen, "%s: no such program in the function's files",
				cfg->image),
		       EMBER_ERR_IMAGE;
	} else if ((rc = img_open_hinted(cfg->image, fn->img_dir, &fn->img, &how, err, errlen))) {
		return rc;
	}
	fn->parts.image_us = how.read_us;
	fn->parts.sites_us = how.sites_us;
	fn->parts.image_from = func_image_from(how.from);
	return 0;
}

uint64_t func_file_id(const struct bnd *b, uint32_t node)
{
	uint64_t k[3] = {b->digest, b->nodes[node].data_off, b->nodes[node].size};
	return XXH3_64bits(k, sizeof(k));
}

/* the steps of ember_load after the configuration; 0 or a kind of failure */
static int load(struct ember_function *fn, const struct ember_config *cfg, char *err, size_t errlen)
{
	/* the images' site tables beside the snapshots, in STATE/sites: not in STATE/images, a
	 * server's uploads, whose names a user picks. A state folder that cannot be made: the
	 * images are scanned, and func_disk says why */
	if (cfg->state_dir && (mkdir(cfg->state_dir, 0700) == 0 || errno == EEXIST) &&
	    asprintf(&fn->img_dir, "%s/sites", cfg->state_dir) < 0)
		fn->img_dir = NULL;
	int rc = open_image(fn, cfg, err, errlen);
	if (rc || (rc = func_dynamic(fn, cfg, err, errlen)) ||
	    (rc = func_secrets_only(fn, cfg, err, errlen)))
		return rc;
	const char *a0 = fn->argv[0] ? fn->argv[0] : cfg->image, *base = strrchr(a0, '/');
	if (asprintf(&fn->exe_path, "%s%s", a0[0] == '/' ? "" : "/",
		     a0[0] == '/' ? a0
		     : base	  ? base + 1
				  : a0) < 0) {
		fn->exe_path = NULL;
		return snprintf(err, errlen, "out of memory"), EMBER_ERR_NOMEM;
	}
	if (fn->img->elf.go && !cfg->mem_bytes)
		fn->vmcfg.mem_size = EMBER_MEM_GO;
	if (pool_init(&fn->pool, fn->pool_slots))
		return snprintf(err, errlen, "out of memory"), EMBER_ERR_NOMEM;
	/* the backend is settled here ("auto" picks one) and a missing KVM is told apart; a kind
	 * of machine this process has ready shells of needs no proof (a start from disk then
	 * takes no shell here only to drop it) */
	struct vm *vm = NULL;
	if (fn->vmcfg.backend == VM_BACKEND_AUTO || !pool_shell_ready(&fn->vmcfg)) {
		if ((rc = pool_shell(&fn->vmcfg, &vm, err, errlen)) != VM_OK)
			return rc;
		fn->vmcfg.backend = vm_backend_of(vm);
	}
	int snapshot = !cfg->no_snapshot;
	int on_disk = cfg->state_dir && snapshot ? func_disk(fn, cfg, err, errlen) : 1;
	/* before init: its mappings of files come from the store (a start from disk reads none of
	 * them now: after its response) */
	if (on_disk > 0) {
		func_sites_ahead(fn); /* on the second CPU while the files go to the store */
		func_share_files(fn);
	}
	if (on_disk <= 0) { /* found on disk (the first invocation starts cold from it), or not */
		if (vm)
			vm_destroy(vm);
		if (on_disk < 0)
			return on_disk;
	} else if ((!vm && (rc = pool_shell(&fn->vmcfg, &vm, err, errlen)) != VM_OK) ||
		   (rc = func_init(fn, vm, snapshot, err, errlen)) ||
		   (cfg->state_dir && (rc = func_disk_save(fn, cfg->cold, err, errlen)))) {
		return rc;
	}
	rc = func_warm(fn, fn->pool_size, err, errlen);
	if (rc < 0)
		return rc;
	unsigned cap = budget_fits(fn->budget, fn->vmcfg.mem_size, (unsigned)fn->pool.cap);
	uint64_t window = cfg->keep_alive_s > 0 ? (uint64_t)(cfg->keep_alive_s * 1e9) : 0;
	if (budget_join(fn->budget, &fn->pool))
		return snprintf(err, errlen, "out of memory"), EMBER_ERR_NOMEM;
	if (pool_refiller_start(&fn->refill, fn->pool_size, cap, window))
		return snprintf(err, errlen, "cannot start the refiller thread"), EMBER_ERR_NOMEM;
	if (fn->no_ready) {
		atomic_store(&fn->refill.target, 0); /* not even the spare a demand keeps */
		func_drops_start(&fn->drops);
	}
	return 0;
}

int ember_load(const struct ember_config *cfg, struct ember_function **out, char *err,
	       size_t errlen)
{
	struct ember_function *fn = calloc(1, sizeof(*fn));
	if (!fn)
		return snprintf(err, errlen, "out of memory"), EMBER_ERR_NOMEM;
	pthread_mutex_init(&fn->exec_lock, NULL);
	pthread_mutex_init(&fn->sites_lock, NULL);
	base_cond_init(&fn->sites_done);
	pthread_mutex_init(&fn->cold_lock, NULL);
	base_cond_init(&fn->cold_done);
	pool_refiller_init(&fn->refill, &fn->pool, &func_refill_ops, fn);
	func_drops_init(&fn->drops);
	uint64_t t0 = base_now_ns();
	int rc = configure(fn, cfg, err, errlen);
	if (!rc)
		rc = load(fn, cfg, err, errlen);
	fn->parts.total_us = base_us_since(t0);
	if (rc) {
		ember_unload(fn);
		return rc;
	}
	*out = fn;
	return 0;
}

void ember_unload(struct ember_function *fn)
{
	if (!fn)
		return;
	func_finish_join(fn); /* its virtine goes into the pool: before the pool goes */
	func_sites_join(fn);
	pool_refiller_stop(&fn->refill);
	func_drops_fini(&fn->drops); /* their memory back to the budget, their pages to the store */
	budget_leave(fn->budget, &fn->pool); /* no one gives up its spares any more */
	pool_fini(&fn->pool);
	if (func_has_snapshot(fn))
		snap_free(&fn->snap);
	func_share_close(fn);
	ember_result_free(&fn->first);
	img_close(fn->img);
	img_close(fn->interp);
	func_exec_free(fn);
	func_sites_free(fn);
	free(fn->exe_path);
	free(fn->snap_dir);
	free(fn->img_dir);
	cold_read_plan_free(&fn->plan);
	pthread_mutex_destroy(&fn->cold_lock);
	pthread_cond_destroy(&fn->cold_done);
	pool_refiller_fini(&fn->refill);
	free_vec(fn->argv);
	free_vec(fn->envp);
	free(fn->code);
	bnd_free(fn->bundle);
	free(fn);
}

/* the sites of im given padding: those alone reach the in-guest runtime in a Go program, which
 * has no page 0 (image/load.c copy_in) */
static size_t padded_sites(const struct img *im)
{
	size_t n = 0;
	for (size_t i = 0; i < im->sites.n; i++)
		n += im->sites.callable[i] >= IMG_PAD_MIN;
	return n;
}

void ember_info(const struct ember_function *fn, struct ember_info *info)
{
	memset(info, 0, sizeof(*info));
	info->backend = vm_backend_name(fn->vmcfg.backend);
	/* the sites of a dynamic program's interpreter are rewritten as its own are */
	const struct img *ims[] = {fn->img, fn->interp};
	size_t callable = 0;
	for (size_t i = 0; i < sizeof(ims) / sizeof(ims[0]); i++) {
		size_t n = 0, c = 0; /* none yet where a start from disk left them unread */
		if (ims[i])
			img_sites_counts(ims[i], &n, &c);
		info->rewritten_sites += n;
		/* a Go program's: only those given padding, once they are read */
		callable += n && fn->img->elf.go ? padded_sites(ims[i]) : c;
	}
	info->syscalls = fn->rt->name;
	info->sites_call = fn->rt->guest ? callable : 0;
	info->sites_trap = info->rewritten_sites - info->sites_call;
	info->image_bytes = fn->img->len;
	info->mem_bytes = fn->vmcfg.mem_size;
	info->cpus = (unsigned)fn->vmcfg.cpus;
	info->snapshot = func_has_snapshot(fn);
	info->init_us = fn->init_us;
	info->init_exits = fn->init_exits;
	info->snapshot_pages = info->snapshot ? fn->snap.npages : 0;
	info->ready = (unsigned)atomic_load(&fn->pool.ready);
	info->snapshot_path = fn->snap_dir;
	info->rebuilt = fn->rebuilt[0] ? fn->rebuilt : NULL;
	info->from_disk = fn->from_disk;
	info->cold_pending = func_state(fn) == FUNC_COLD;
	struct pool_refiller *dm = (struct pool_refiller *)&fn->refill; /* atomics read only */
	info->in_use = atomic_load(&dm->in_use);
	info->target = atomic_load(&dm->target);
	info->peak = atomic_load(&dm->peak);
	info->capacity = dm->capacity;
	info->refills = atomic_load(&dm->refills);
	info->trims = atomic_load(&dm->trims);
	info->restores = atomic_load(&dm->restores);
	info->load = fn->parts;
}

void ember_result_free(struct ember_result *res)
{
	free(res->out);
	free(res->log);
	free(res->head);
	free(res->syscalls);
	memset(res, 0, sizeof(*res));
}
