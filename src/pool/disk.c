/* A function's snapshot on disk: found or made at load, and cold starts from it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "pool/func.h"

static uint64_t us_since(uint64_t t0)
{
	return (vm_now_ns() - t0) / 1000;
}

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
	uint64_t h = XXH64_digest(x);
	XXH64_freeState(x);
	return h;
}

static int make_dirs(const char *state, char *out, size_t outlen, uint64_t key)
{
	char d[4096];
	snprintf(d, sizeof(d), "%.4000s/snapshots", state);
	if ((mkdir(state, 0700) < 0 && errno != EEXIST) || (mkdir(d, 0700) < 0 && errno != EEXIST))
		return -1;
	snprintf(out, outlen, "%s/%016llx", d, (unsigned long long)key);
	return 0;
}

/* drops what is in memory and reads the state back from disk: the next start is cold */
static int go_cold(struct ember_function *fn, char *err, size_t errlen)
{
	pool_fini(&fn->pool);
	if (pool_init(&fn->pool, fn->pool_size))
		return snprintf(err, errlen, "out of memory"), -1;
	snap_free(&fn->snap);
	if (snap_load(&fn->snap, &fn->meta, fn->snap_dir, 0, err, errlen))
		return -1;
	snap_drop_cache(fn->snap_dir);
	atomic_store(&fn->cold_pending, 1);
	return 0;
}

int func_disk(struct ember_function *fn, const struct ember_config *cfg, char *err, size_t errlen)
{
	fn->meta = (struct snap_meta){fn->img->digest, fn->vmcfg.mem_size, config_hash(fn)};
	char dir[4200];
	XXH64_hash_t key = XXH64(&fn->meta, sizeof(fn->meta), 0);
	if (make_dirs(cfg->state_dir, dir, sizeof(dir), key) || !(fn->snap_dir = strdup(dir)))
		return snprintf(err, errlen, "%s: cannot create the state folder: %s",
				cfg->state_dir, strerror(errno)),
		       -1;
	char why[256] = "";
	if (cfg->cold)
		snap_drop_cache(fn->snap_dir); /* honest: the start reads the files from disk */
	if (snap_load(&fn->snap, &fn->meta, fn->snap_dir, 0, why, sizeof(why)) == 0) {
		fn->snapshot = fn->from_disk = 1;
		atomic_store(&fn->cold_pending, 1);
		return 0;
	}
	if (strncmp(why, "no snapshot", 11))
		snprintf(fn->rebuilt, sizeof(fn->rebuilt), "%s", why);
	return 1; /* not usable: the caller runs init and calls func_disk_save */
}

int func_disk_save(struct ember_function *fn, int cold, char *err, size_t errlen)
{
	if (!fn->snapshot)
		return 0; /* no snapshot point: nothing to keep */
	if (snap_save(&fn->snap, &fn->meta, fn->snap_dir, err, errlen))
		return -1;
	return cold ? go_cold(fn, err, errlen) : 0;
}

int func_invoke_cold(struct ember_function *fn, const void *in, size_t len,
		     struct ember_result *res)
{
	char err[256] = "";
	uint64_t t0 = vm_now_ns();
	struct virtine *v = calloc(1, sizeof(*v));
	if (!v || pool_shell(&fn->vmcfg, &v->vm, err, sizeof(err)) != VM_OK) {
		free(v);
		goto fail;
	}
	res->wait_us = us_since(t0);
	fn->proc = fn->snap.proc;
	sys_init(&v->st, v->vm, &fn->proc);
	v->st.out_limit = fn->output_limit;
	if (fn->code)
		sys_set_code(&v->st, fn->code, fn->code_len);
	int record = fn->restore == SNAP_REAP && !snap_ws_exists(fn->snap_dir);
	struct snap_cold c;
	uint64_t t1 = vm_now_ns();
	if (snap_cold_start(&c, &fn->snap, v->vm, &v->st, fn->snap_dir, fn->restore, record, err,
			    sizeof(err))) {
		virtine_destroy(v);
		goto fail;
	}
	res->setup_us = us_since(t1);
	res->cold = 1;
	res->prefetched_pages = c.prefetched;
	res->prefetch_bytes = c.prefetch_bytes;
	res->prefetch_us = c.prefetch_us;
	res->recorded = record;
	func_run_invocation(fn, v, in, len, res);
	res->faults = c.faults;
	int broken = snap_cold_finish(&c, fn->snap_dir, err, sizeof(err)) ||
		     v->st.outcome == SYS_ERROR;
	/* warm from now on: the snapshot's pages in memory (mostly in the page cache by now) */
	if (snap_load_pages(&fn->snap, fn->snap_dir, err, sizeof(err))) {
		virtine_destroy(v);
		atomic_store(&fn->cold_pending, 1);
		return 0;
	}
	uint64_t t2 = vm_now_ns();
	broken = broken || func_reset(fn, v, &res->pages_touched);
	res->reset_us = us_since(t2);
	if (broken || pool_put(&fn->pool, v))
		virtine_destroy(v);
	return 0;
fail:
	res->outcome = EMBER_ERROR;
	res->exit_code = 125;
	snprintf(res->message, sizeof(res->message), "cold start: %s", err);
	atomic_store(&fn->cold_pending, 1);
	return -1;
}
