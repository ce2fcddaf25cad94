/* A cold start: one invocation run from the snapshot on disk, the snapshot then read whole. */
#include <stdio.h>
#include <string.h>

#include "func/func.h"

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
	virtine_prepare(fn, v, &fn->proc);
	int record = fn->restore == SNAP_REAP && !snap_ws_exists(fn->snap_dir);
	struct snap_cold c;
	uint64_t t1 = base_now_ns();
	if (snap_cold_start(&c, &fn->snap, v->vm, &v->st, fn->snap_dir, fn->restore, record, err,
			    sizeof(err))) {
		virtine_destroy(v);
		snprintf(why, sizeof(why), "snapshot %.200s refused: %s", fn->snap_dir, err);
		return rebuilt(fn, res, why);
	}
	res->setup_us = base_us_since(t1);
	res->cold = 1;
	res->recorded = c.record == 1; /* also when a damaged working set was dropped */
	func_run_invocation(fn, v, call, res);
	int broken =
	    snap_cold_finish(&c, fn->snap_dir, err, sizeof(err)) || v->st.outcome == SYS_ERROR;
	snap_cold_result(&c, res); /* the prefetch ran beside the vCPU: its figures now */
	res->snapshot_us = fn->snap_load_us;
	if (c.damaged) { /* the run saw a poisoned page: its result is not the function's */
		virtine_destroy(v);
		snprintf(why, sizeof(why), "snapshot %.200s refused: page %#llx is damaged",
			 fn->snap_dir, (unsigned long long)(c.damaged - 1));
		return rebuilt(fn, res, why);
	}
	/* warm from now on: the snapshot's pages in memory (mostly in the page cache by now); a
	 * page damaged on disk that this run did not touch is found here: the result stands,
	 * the snapshot is made again */
	if (snap_load_pages(&fn->snap, fn->snap_dir, err, sizeof(err))) {
		virtine_destroy(v);
		func_rebuild(fn, err);
		return 0;
	}
	func_share_snapshot(fn);
	func_move(fn, FUNC_COLD, FUNC_WARM); /* the snapshot is whole in memory: warm starts go */
	uint64_t t2 = base_now_ns();
	broken = broken || fill_missing(&fn->snap, v->vm) || func_reset(fn, v, &res->pages_touched);
	res->reset_us = base_us_since(t2);
	if (broken || pool_put(&fn->pool, v))
		virtine_destroy(v);
	return 0;
}
