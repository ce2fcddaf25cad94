/* A function's snapshot on disk: found or made at load, and cold starts from it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "func/func.h"

/* what init saw: a snapshot made with other arguments, environment or code is not reused */
static uint64_t config_hash(const struct ember_function *fn)
{
	XXH64_state_t *x = XXH64_createState();
	XXH64_reset(x, 1);
	for (char **v = fn->argv; v && *v; v++)
		XXH64_update(x, *v, strlen(*v) + 1);
	XXH64_update(x, "\0env", 4);
	for (char **v = fn->envp; v && *v; v++)
		XXH64_update(x, *v, strlen(*v) + 1);
	XXH64_update(x, fn->code ? (const void *)fn->code : "", fn->code_len);
	XXH64_update(x, fn->rt->name, 5); /* the runtime is part of the snapshot */
	uint64_t files = fn->bundle ? fn->bundle->digest : 0; /* what it may have opened */
	XXH64_update(x, &files, sizeof(files));
	if (fn->cwd) /* where it started (the root hashes as before) */
		XXH64_update(x, &fn->cwd, sizeof(fn->cwd));
	/* its threads are held by vCPUs: a snapshot is for as many as it was made with (a single
	 * vCPU hashes as before, so earlier snapshots of one still match) */
	if (fn->cpus > 1)
		XXH64_update(x, &fn->cpus, sizeof(fn->cpus));
	/* and what init could create: a snapshot holds its own limit, which a cold start restores
	 * (the default hashes as before) */
	if (fn->max_threads != PROC_THREADS_DEFAULT)
		XXH64_update(x, &fn->max_threads, sizeof(fn->max_threads));
	uint64_t h = XXH64_digest(x);
	XXH64_freeState(x);
	return h;
}

/* STATE/snapshots, made when missing; the folder for key in it goes to out */
static int make_dirs(const char *state, char *out, size_t outlen, uint64_t key)
{
	char d[4096];
	snprintf(d, sizeof(d), "%.4000s/" SNAP_DIR, state);
	if ((mkdir(state, 0700) < 0 && errno != EEXIST) || (mkdir(d, 0700) < 0 && errno != EEXIST))
		return -1;
	/* a state "folder" that is a file: the mkdir of snapshots says ENOTDIR; one we may not
	 * write into (not root, a read-only mount) is told now, not at the first save */
	if (access(d, W_OK | X_OK) < 0)
		return -1;
	snprintf(out, outlen, "%s/%016llx", d, (unsigned long long)key);
	return 0;
}

int ember_sweep(const char *state_dir)
{
	char d[4096];
	snprintf(d, sizeof(d), "%.4000s/" SNAP_DIR, state_dir);
	int n = snap_sweep(d);
	/* the images' site tables and the packed files, each written by base_replace */
	snprintf(d, sizeof(d), "%.4000s/sites", state_dir);
	n += base_sweep_tmp(d);
	snprintf(d, sizeof(d), "%.4000s/bundles", state_dir);
	return n + base_sweep_tmp(d);
}

int ember_snapshot_remove(struct ember_function *fn)
{
	return fn->snap_dir ? snap_remove(fn->snap_dir) : -1;
}

/* drops what is in memory and reads the state back from disk: the next start is cold */
static int go_cold(struct ember_function *fn, char *err, size_t errlen)
{
	pool_drain(&fn->pool);
	snap_free(&fn->snap);
	/* it was written a moment ago: not reading it back is the disk's failure */
	if (snap_load(&fn->snap, &fn->meta, fn->snap_dir, 0, err, errlen))
		return EMBER_ERR_IO;
	snap_drop_cache(fn->snap_dir);
	func_move(fn, FUNC_WARM, FUNC_COLD);
	return 0;
}

/* fn's snapshot folder for its meta (made when missing) into fn->snap_dir; 0 or a kind */
static int folder(struct ember_function *fn, const struct ember_config *cfg, char *err,
		  size_t errlen)
{
	fn->meta = (struct snap_meta){fn->img->digest, fn->vmcfg.mem_size, config_hash(fn)};
	char dir[4200];
	XXH64_hash_t key = XXH64(&fn->meta, sizeof(fn->meta), 0);
	if (make_dirs(cfg->state_dir, dir, sizeof(dir), key)) {
		int e = errno;
		snprintf(err, errlen, "%s: cannot create the state folder: %s", cfg->state_dir,
			 strerror(e));
		return vm_errno_kind(e, EMBER_ERR_IO); /* the folder's fault, whatever errno */
	}
	free(fn->snap_dir);
	if (!(fn->snap_dir = strdup(dir)))
		return snprintf(err, errlen, "out of memory"), EMBER_ERR_NOMEM;
	return 0;
}

/* what a start from disk takes, made ahead: a shell, and parked threads for its fault server
 * and its work after the response (each left for later starts when the snapshot is refused) */
static void start_ahead(struct ember_function *fn)
{
	pool_shell_want(&fn->vmcfg);
	base_park_prepare(2);
}

/* the state file of fn->snap_dir read and checked into fn->snap; 0 or SNAP_ */
static int state(struct ember_function *fn, const struct ember_config *cfg, char *why,
		 size_t whylen)
{
	if (cfg->cold)
		snap_drop_cache(fn->snap_dir); /* honest: the start reads the files from disk */
	cold_read_plan_free(&fn->plan);
	/* REAP on KVM: the working set read whole at once, the state taken from its copy when the
	 * state file is still the one copied (one request to the disk, not the state file's and
	 * then the working set's); the pages it lacks asked at once */
	if (fn->restore == SNAP_REAP && fn->vmcfg.backend == VM_BACKEND_KVM) {
		size_t len = 0;
		const char *no;
		const uint8_t *copy = cold_read_plan_whole(&fn->plan, fn->snap_dir, &len, &no);
		if (copy &&
		    !snap_load_from(&fn->snap, &fn->meta, fn->snap_dir, copy, len, why, whylen)) {
			cold_read_ask(&fn->snap, &fn->plan, fn->snap_dir);
			start_ahead(fn);
			fn->parts.state_from = "copy";
			return 0;
		}
		/* a copy there but not taken: the state file read, the copy written again after
		 * the start (a damaged one said) */
		fn->plan.recopy = len && fn->plan.whole;
		if (len && fn->plan.whole && strstr(no, "damaged") && !fn->damaged[0])
			snprintf(fn->damaged, sizeof(fn->damaged), "%s", no);
		fn->parts.damaged = fn->damaged[0] ? fn->damaged : NULL;
	}
	fn->parts.state_from = "file";
	/* while the disk reads it (100-300 us with the page cache dropped), what the start will
	 * want is made: 50-100 us that came after the read */
	if (snap_read_ahead(fn->snap_dir))
		start_ahead(fn);
	return snap_load(&fn->snap, &fn->meta, fn->snap_dir, 0, why, whylen);
}

int func_disk(struct ember_function *fn, const struct ember_config *cfg, char *err, size_t errlen)
{
	int rc = folder(fn, cfg, err, errlen);
	if (rc)
		return rc;
	char why[EMBER_ERR_MAX] = "";
	uint64_t t0 = base_now_ns();
	rc = state(fn, cfg, why, sizeof(why));
	if (rc) {
		/* a digest from the hint (the site table unread): with no snapshot under it, init
		 * needs the sites anyway, and they say the digest to trust */
		uint64_t hinted = fn->meta.image_digest;
		struct img_how how = {IMG_HINT, 0, 0};
		int k = img_sites_fill_how(fn->img, &how, err, errlen);
		if (k)
			return k;
		if (how.from != IMG_HINT) { /* what the load read after all */
			fn->parts.image_from = func_image_from(how.from);
			fn->parts.sites_us += how.sites_us;
		}
		if (fn->img->digest != hinted) { /* the hint was wrong: its folder is not ours */
			if ((k = folder(fn, cfg, err, errlen)))
				return k;
			rc = state(fn, cfg, why, sizeof(why));
		}
	}
	fn->parts.state_us = base_us_since(t0);
	uint64_t t1 = base_now_ns();
	/* REAP on KVM may read the snapshot whole: a loaded function's working set is known */
	if (rc == 0 && fn->restore == SNAP_REAP && fn->vmcfg.backend == VM_BACKEND_KVM &&
	    !fn->plan.meta)
		cold_read_plan(&fn->plan, fn->snap_dir);
	fn->parts.plan_us = base_us_since(t1);
	fn->snap_load_us = base_us_since(t0); /* read and checked once: every cold start keeps it */
	if (rc == 0) {
		fn->from_disk = 1;
		func_move(fn, FUNC_SCRATCH, FUNC_COLD);
		start_ahead(fn); /* done already, unless the state file came meanwhile */
		return 0;
	}
	cold_read_plan_free(&fn->plan); /* of a snapshot not used */
	fn->parts.state_from = NULL;
	if (rc != SNAP_MISSING) /* a first start is no rebuild */
		snprintf(fn->rebuilt, sizeof(fn->rebuilt), "%s", why);
	return 1; /* not usable: the caller runs init and calls func_disk_save */
}

int func_disk_save(struct ember_function *fn, int cold, char *err, size_t errlen)
{
	if (func_state(fn) != FUNC_WARM)
		return 0; /* no snapshot point: nothing to keep */
	/* what init left in /tmp, a umask it set, are not kept on disk */
	if (sys_tmp_saved_used(&fn->snap.sys) || fn->snap.sys.umask) {
		if (cold)
			return snprintf(err, errlen,
					"init wrote files in /tmp or set its umask, which a "
					"snapshot keeps in memory only: it cannot start cold "
					"from disk"),
			       EMBER_ERR_CONFIG;
		return 0;
	}
	int rc = snap_save(&fn->snap, &fn->meta, fn->snap_dir, err, errlen);
	if (rc)
		return rc;
	return cold ? go_cold(fn, err, errlen) : 0;
}

/* With cold_lock held, in FUNC_COLD. When it fails, fn is left without a snapshot (invocations
 * load from scratch) or with one only in memory, and rebuilt says so. */
void func_rebuild(struct ember_function *fn, const char *why)
{
	char err[EMBER_ERR_MAX] = "out of memory";
	struct vm *vm;
	pool_drain(&fn->pool);
	snap_free(&fn->snap);
	cold_read_plan_free(&fn->plan);
	fn->from_disk = 0;
	fn->init_us = fn->init_exits = 0;
	func_share_files(fn); /* before init, as at a load that runs it */
	if (pool_shell(&fn->vmcfg, &vm, err, sizeof(err)) != VM_OK ||
	    func_init(fn, vm, 1, err, sizeof(err)) || func_disk_save(fn, 0, err, sizeof(err)))
		snprintf(fn->rebuilt, sizeof(fn->rebuilt), "%.120s; rebuilding it failed: %s", why,
			 err);
	else
		snprintf(fn->rebuilt, sizeof(fn->rebuilt), "%s", why);
	/* the invocations waiting run in what init left (warm, first, scratch); an init that
	 * failed before either leaves no snapshot */
	func_move(fn, FUNC_COLD, FUNC_SCRATCH);
}
