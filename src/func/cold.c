/* A cold start: one invocation run from the snapshot on disk, the snapshot then read whole (or
 * first, for REAP on KVM). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "func/func.h"
#include "cold/cold_read.h"

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

/* after a damaged cold start: the snapshot made again (the state leaves FUNC_COLD), the result
 * dropped, and the request dispatched again, warm from the new snapshot */
static int rebuilt(struct ember_function *fn, struct ember_result *res, const char *why)
{
	ember_result_free(res);
	func_rebuild(fn, why);
	return FUNC_AGAIN;
}

/* the figures of a start from cold_read_whole into res */
static void read_result(const struct cold_read *r, struct ember_result *res)
{
	res->prefetched_pages = r->ws_pages;
	res->prefetch_bytes = r->ws_bad ? 0 : r->ws_bytes;
	res->prefetch_us = r->wall_ns / 1000;
	res->prefetch_buffered = r->buffered;
	res->ws_read_us = r->read_ns / 1000;
	res->install_us = r->check_ns / 1000;
	res->outside_pages = r->outside;
	res->mispredicted = r->mispredicted;
	res->rerecorded = r->rerecorded;
}

/* after a whole read's run (finish.c): the virtine reset and pooled (with no_ready, dropped), the
 * memory file's copies of what the working set brought checked (a damaged one: the result
 * stood, the snapshot is made again, still FUNC_COLD as func_rebuild expects), the snapshot
 * into the domain's store, then warm starts */
static void read_finish(struct func_finish *f)
{
	struct ember_function *fn = f->fn;
	char err[EMBER_ERR_MAX] = "";
	uint64_t touched;
	cold_read_settle(&fn->snap, &f->r);
	if (f->broken || fn->no_ready || func_reset(fn, f->v, &touched) ||
	    pool_put(&fn->pool, f->v))
		virtine_destroy(f->v);
	int rc = cold_read_check_mem(&fn->snap, &f->r, fn->snap_dir, err, sizeof(err));
	cold_read_free(&f->r);
	if (rc) {
		func_rebuild(fn, err);
		return;
	}
	func_share_snapshot(fn);
	func_share_files(fn);
	/* warm starts only now: until here the snapshot's memory changes under them (its own copy
	 * freed for the store's), and a request that comes meanwhile waits in invoke_cold */
	func_move(fn, FUNC_COLD, FUNC_WARM);
}

/* after a lazy or prefetching start's run (finish.c): the snapshot's pages read and checked (one
 * damaged that the run did not touch: the result stood, the snapshot is made again), the
 * virtine filled, reset and pooled, warm starts from then on */
static void lazy_finish(struct func_finish *f)
{
	struct ember_function *fn = f->fn;
	char err[EMBER_ERR_MAX] = "";
	if (snap_load_pages(&fn->snap, fn->snap_dir, err, sizeof(err))) {
		virtine_destroy(f->v);
		func_rebuild(fn, err);
		return;
	}
	func_share_snapshot(fn);
	func_share_files(fn);
	uint64_t touched;
	if (f->broken || fn->no_ready || fill_missing(&fn->snap, f->v->vm) ||
	    func_reset(fn, f->v, &touched) || pool_put(&fn->pool, f->v))
		virtine_destroy(f->v);
	/* the snapshot is whole in memory: warm starts go, the first finding this virtine (an
	 * invocation that came meanwhile waited in invoke_cold, not in a restore of its own) */
	func_move(fn, FUNC_COLD, FUNC_WARM);
}

/* REAP on KVM: the snapshot read whole (the working set, then the pages it lacks), checked,
 * sealed in a memfd of its own and mapped into v copy-on-write as a warm restore maps it; no
 * fault server. After the run it moves into the domain's store (func_share_snapshot).
 * NOT_READ when the working set is unusable (v untouched: the caller starts lazily and records
 * it); else as func_invoke_cold. */
#define NOT_READ 2
static int invoke_read(struct ember_function *fn, struct virtine *v, const struct func_call *call,
		       struct ember_result *res)
{
	char err[EMBER_ERR_MAX] = "";
	struct func_finish *f = calloc(1, sizeof(*f));
	if (!f)
		return NOT_READ; /* the lazy start needs no more memory than before */
	f->fn = fn;
	uint64_t t1 = base_now_ns();
	int rc = cold_read_whole(&fn->snap, fn->snap_dir, &fn->plan, &f->r, err, sizeof(err));
	cold_read_plan_free(&fn->plan); /* one cold start per load */
	if (rc == 1) {
		free(f);
		return NOT_READ;
	}
	if (!rc && (rc = snap_restore(&fn->snap, v->vm, &v->st, fn->share)))
		snprintf(err, sizeof(err), "restoring the snapshot: %s",
			 strerror(rc < 0 ? -rc : EIO));
	if (rc) {
		cold_read_free(&f->r);
		free(f);
		virtine_destroy(v);
		return rebuilt(fn, res, err);
	}
	res->setup_us = base_us_since(t1);
	res->cold = 1;
	fn->whole = v->vm;
	func_run_invocation(fn, v, call, res);
	fn->whole = NULL;
	f->broken = v->st.outcome == SYS_ERROR;
	cold_read_missed(&fn->snap, v->vm, &f->r, fn->snap_dir, err, sizeof(err));
	read_result(&f->r, res);
	res->snapshot_us = fn->snap_load_us;
	/* the reset, the checks and the store after the response: a request that comes meanwhile
	 * waits for them in invoke_cold, as it waits for the checks */
	f->v = v;
	f->work = read_finish;
	func_finish_later(f);
	return 0;
}

int func_invoke_cold(struct ember_function *fn, const struct func_call *call,
		     struct ember_result *res)
{
	char err[EMBER_ERR_MAX] = "", why[EMBER_ERR_MAX];
	uint64_t t0 = base_now_ns();
	int kind;
	struct virtine *v = virtine_new(fn, NULL, 1, &kind, err, sizeof(err));
	if (!v) { /* still FUNC_COLD: the next invocation tries again */
		snprintf(why, sizeof(why), "cold start: %s", err);
		func_fail_result(res, why);
		return -1;
	}
	res->wait_us = base_us_since(t0);
	res->start = EMBER_START_COLD;
	fn->proc = fn->snap.proc;
	fn->proc.max_pids = fn->max_pids; /* the function's, not kept on disk */
	virtine_prepare(fn, v, &fn->proc);
	int record = fn->restore == SNAP_REAP && !cold_ws_exists(fn->snap_dir);
	if (fn->restore == SNAP_REAP && !record && vm_backend_of(v->vm) == VM_BACKEND_KVM &&
	    cold_read_pays(&fn->snap, fn->snap_dir)) {
		int rc = invoke_read(fn, v, call, res);
		if (rc != NOT_READ)
			return rc;
		record = 1; /* the working set was dropped: this start records it again */
	}
	struct cold c;
	uint64_t t1 = base_now_ns();
	if (cold_start(&c, &fn->snap, v->vm, &v->st, fn->snap_dir, fn->restore, record, err,
		       sizeof(err))) {
		virtine_destroy(v);
		snprintf(why, sizeof(why), "snapshot %.200s refused: %s", fn->snap_dir, err);
		return rebuilt(fn, res, why);
	}
	res->setup_us = base_us_since(t1);
	res->cold = 1;
	res->recorded = c.record == 1; /* also when a damaged working set was dropped */
	fn->serving = &c;
	func_run_invocation(fn, v, call, res);
	fn->serving = NULL;
	int broken = cold_finish(&c, fn->snap_dir, err, sizeof(err)) || v->st.outcome == SYS_ERROR;
	cold_result(&c, res); /* the prefetch ran beside the vCPU: its figures now */
	res->snapshot_us = fn->snap_load_us;
	if (c.damaged) { /* the run saw a poisoned page: its result is not the function's */
		virtine_destroy(v);
		snprintf(why, sizeof(why), "snapshot %.200s refused: page %#llx is damaged",
			 fn->snap_dir, (unsigned long long)(c.damaged - 1));
		return rebuilt(fn, res, why);
	}
	/* warm from then on, off the request: its pages read (mostly in the page cache by now) */
	struct func_finish *f = calloc(1, sizeof(*f));
	if (!f) {
		virtine_destroy(v);
		func_rebuild(fn, "out of memory after a cold start");
		return 0;
	}
	*f = (struct func_finish){.fn = fn, .work = lazy_finish, .v = v, .broken = broken};
	func_finish_later(f);
	return 0;
}
