/* A function's snapshot on disk: found or made at load, and cold starts from it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "func/func.h"

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
	XXH64_update(x, fn->rt->name, 5); /* the runtime is part of the snapshot */
	uint64_t files = fn->bundle ? fn->bundle->digest : 0; /* what it may have opened */
	XXH64_update(x, &files, sizeof(files));
	uint64_t h = XXH64_digest(x);
	XXH64_freeState(x);
	return h;
}

/* STATE/snapshots, made when missing; the folder for key in it goes to out */
static int make_dirs(const char *state, char *out, size_t outlen, uint64_t key)
{
	char d[4096];
	snprintf(d, sizeof(d), "%.4000s/snapshots", state);
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
	snprintf(d, sizeof(d), "%.4000s/snapshots", state_dir);
	return snap_sweep(d);
}

int ember_snapshot_remove(struct ember_function *fn)
{
	return fn->snap_dir ? snap_remove(fn->snap_dir) : -1;
}

/* drops what is in memory and reads the state back from disk: the next start is cold */
static int go_cold(struct ember_function *fn, char *err, size_t errlen)
{
	pool_fini(&fn->pool);
	if (pool_init(&fn->pool, fn->pool_slots))
		return snprintf(err, errlen, "out of memory"), EMBER_ERR_NOMEM;
	snap_free(&fn->snap);
	/* it was written a moment ago: not reading it back is the disk's failure */
	if (snap_load(&fn->snap, &fn->meta, fn->snap_dir, 0, err, errlen))
		return EMBER_ERR_IO;
	snap_drop_cache(fn->snap_dir);
	atomic_store(&fn->cold_pending, 1);
	return 0;
}

int func_disk(struct ember_function *fn, const struct ember_config *cfg, char *err, size_t errlen)
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
	if (!(fn->snap_dir = strdup(dir)))
		return snprintf(err, errlen, "out of memory"), EMBER_ERR_NOMEM;
	char why[256] = "";
	if (cfg->cold)
		snap_drop_cache(fn->snap_dir); /* honest: the start reads the files from disk */
	uint64_t t0 = vm_now_ns();
	int rc = snap_load(&fn->snap, &fn->meta, fn->snap_dir, 0, why, sizeof(why));
	fn->snap_load_us = us_since(t0); /* read and checked once: every cold start keeps it */
	if (rc == 0) {
		fn->snapshot = fn->from_disk = 1;
		atomic_store(&fn->cold_pending, 1);
		pool_shell_want(&fn->vmcfg); /* the cold start takes a shell made meanwhile */
		return 0;
	}
	if (rc != SNAP_MISSING) /* a first start is no rebuild */
		snprintf(fn->rebuilt, sizeof(fn->rebuilt), "%s", why);
	return 1; /* not usable: the caller runs init and calls func_disk_save */
}

int func_disk_save(struct ember_function *fn, int cold, char *err, size_t errlen)
{
	if (!fn->snapshot)
		return 0; /* no snapshot point: nothing to keep */
	int rc = snap_save(&fn->snap, &fn->meta, fn->snap_dir, err, errlen);
	if (rc)
		return rc;
	return cold ? go_cold(fn, err, errlen) : 0;
}

/* After a cold start the pages it never brought in are holes, zero once the fault server is
 * gone; the reset puts back only what the run could have changed, so the snapshot's content
 * goes into them first. */
static int fill_missing(const struct snap *s, struct vm *vm)
{
	uint8_t in[256];
	for (size_t i = 0; i < s->npages;) {
		size_t n = 1; /* a run of consecutive pages: one residency query */
		while (i + n < s->npages && n < sizeof(in) &&
		       s->pages[i + n] == s->pages[i] + n * EMBER_PAGE_SIZE)
			n++;
		if (vm_resident(vm, s->pages[i], n * EMBER_PAGE_SIZE, in))
			return -1;
		for (size_t k = 0; k < n; k++)
			if (!(in[k] & 1) &&
			    vm_copy_to(vm, s->pages[i + k], s->data + (i + k) * EMBER_PAGE_SIZE,
				       EMBER_PAGE_SIZE))
				return -1;
		i += n;
	}
	return 0;
}

/* The snapshot on disk proved damaged during a cold start (why says how): runs init again in a
 * new machine and writes a new snapshot over it. When that fails, fn is left without a snapshot
 * (invocations load from scratch) or with one only in memory, and rebuilt says so. */
static void rebuild(struct ember_function *fn, const char *why)
{
	char err[256] = "out of memory";
	struct vm *vm;
	pool_fini(&fn->pool);
	snap_free(&fn->snap);
	fn->snapshot = fn->from_disk = 0;
	fn->init_us = fn->init_exits = 0;
	if (pool_init(&fn->pool, fn->pool_slots) ||
	    pool_shell(&fn->vmcfg, &vm, err, sizeof(err)) != VM_OK ||
	    func_init(fn, vm, err, sizeof(err)) || func_disk_save(fn, 0, err, sizeof(err)))
		snprintf(fn->rebuilt, sizeof(fn->rebuilt), "%.120s; rebuilding it failed: %s", why,
			 err);
	else
		snprintf(fn->rebuilt, sizeof(fn->rebuilt), "%s", why);
	atomic_store(&fn->cold_pending, 0); /* the invocations waiting run warm (or shell) now */
}

/* after a damaged cold start: the snapshot made again, the request run warm from it */
static int invoke_rebuilt(struct ember_function *fn, const void *in, size_t len, const char *meta,
			  size_t meta_len, struct ember_result *res, const char *why)
{
	ember_result_free(res);
	rebuild(fn, why);
	/* cold_pending is clear: not cold again */
	return ember_invoke_meta(fn, in, len, meta, meta_len, res);
}

int func_invoke_cold(struct ember_function *fn, const void *in, size_t len, const char *meta,
		     size_t meta_len, struct ember_result *res)
{
	char err[256] = "";
	uint64_t t0 = vm_now_ns();
	int kind;
	struct virtine *v = func_new_virtine(fn, 1, &kind, err, sizeof(err));
	if (!v)
		goto fail;
	res->wait_us = us_since(t0);
	res->start = EMBER_START_COLD;
	fn->proc = fn->snap.proc;
	sys_init(&v->st, v->vm, &fn->proc);
	func_share_virtine(fn, v);
	v->st.out_limit = fn->output_limit;
	if (fn->code)
		sys_set_code(&v->st, fn->code, fn->code_len);
	sys_set_bundle(&v->st, fn->bundle);
	int record = fn->restore == SNAP_REAP && !snap_ws_exists(fn->snap_dir);
	struct snap_cold c;
	uint64_t t1 = vm_now_ns();
	if (snap_cold_start(&c, &fn->snap, v->vm, &v->st, fn->snap_dir, fn->restore, record, err,
			    sizeof(err))) {
		virtine_destroy(v);
		char why[300];
		snprintf(why, sizeof(why), "snapshot %.200s refused: %s", fn->snap_dir, err);
		return invoke_rebuilt(fn, in, len, meta, meta_len, res, why);
	}
	res->setup_us = us_since(t1);
	res->cold = 1;
	res->recorded = c.record == 1; /* also when a damaged working set was dropped */
	func_run_invocation(fn, v, in, len, meta, meta_len, res);
	int broken =
	    snap_cold_finish(&c, fn->snap_dir, err, sizeof(err)) || v->st.outcome == SYS_ERROR;
	snap_cold_result(&c, res); /* the prefetch ran beside the vCPU: its figures now */
	res->snapshot_us = fn->snap_load_us;
	if (c.damaged) { /* the run saw a poisoned page: its result is not the function's */
		virtine_destroy(v);
		snprintf(err, sizeof(err), "snapshot %.200s refused: page %#llx is damaged",
			 fn->snap_dir, (unsigned long long)(c.damaged - 1));
		return invoke_rebuilt(fn, in, len, meta, meta_len, res, err);
	}
	/* warm from now on: the snapshot's pages in memory (mostly in the page cache by now); a
	 * page damaged on disk that this run did not touch is found here: the result stands,
	 * the snapshot is made again */
	if (snap_load_pages(&fn->snap, fn->snap_dir, err, sizeof(err))) {
		virtine_destroy(v);
		rebuild(fn, err);
		return 0;
	}
	func_share_snapshot(fn);
	atomic_store(&fn->cold_pending,
		     0); /* the snapshot is whole in memory: warm starts can go */
	uint64_t t2 = vm_now_ns();
	broken = broken || fill_missing(&fn->snap, v->vm) || func_reset(fn, v, &res->pages_touched);
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
