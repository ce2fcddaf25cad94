/* A function's initialisation: its image loaded into a machine and run to the snapshot point. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "func/func.h"

int func_start_program(struct sys_state *st, struct vm *vm, const struct img_layout *l, char *err,
		       size_t errlen)
{
	for (int i = 0; i < l->nmaps; i++)
		if (sys_vma_map(st, l->maps[i].start, l->maps[i].end, l->maps[i].prot))
			return snprintf(err, errlen, "out of memory"), EMBER_ERR_NOMEM;
	if (st->rt->setup(st))
		return snprintf(err, errlen, "cannot set up the in-guest runtime's memory"),
		       EMBER_ERR;
	struct vm_regs r;
	memset(&r, 0, sizeof(r));
	r.rip = l->entry;
	r.rsp = l->sp;
	r.rflags = 0x2;
	int rc;
	if ((rc = vm_set_regs(vm, &r)) || (rc = vm_set_fs_base(vm, 0)))
		return snprintf(err, errlen, "cannot set the vCPU registers: %s", strerror(-rc)),
		       EMBER_ERR;
	return 0;
}

struct sys_process func_process_of(const struct img_layout *l, int cpus, int threads, int pids)
{
	return (struct sys_process){.brk_start = l->brk_start,
				    .mmap_hi = l->mmap_hi,
				    .stack_lo = l->stack_lo,
				    .stack_hi = l->stack_hi,
				    .stack_size = l->stack_size,
				    .arg_start = l->arg_start,
				    .arg_end = l->arg_end,
				    .guest = l->guest,
				    .cpus = cpus,
				    .max_threads = threads,
				    .max_pids = pids};
}

/* Loads the image into a clean machine and sets up the start of the program; 0 or a kind. */
int func_load_image(struct ember_function *fn, struct virtine *v, char *err, size_t errlen)
{
	struct img_layout l;
	int rc = img_load(fn->img, fn->interp, v->vm, (const char *const *)fn->argv,
			  (const char *const *)fn->envp, fn->rt->guest, &l, err, errlen);
	if (rc)
		return rc;
	struct sys_process proc = func_process_of(&l, fn->cpus, fn->max_threads, fn->max_pids);
	fn->sites_call = l.sites_call;
	fn->sites_trap = l.sites_trap;
	fn->proc = proc;
	virtine_prepare(fn, v, &proc);
	return func_start_program(&v->st, v->vm, &l, err, errlen);
}

/* Why an init failed: a runtime's own last line on its log (its error, such as
 * "handler.js:3: SyntaxError ..."); otherwise the outcome, with that line when there is one. */
static void init_error(const struct ember_result *r, int runtime, char *err, size_t errlen)
{
	size_t end = r->log_len;
	while (end > 0 && (r->log[end - 1] == '\n' || r->log[end - 1] == '\r'))
		end--;
	size_t start = end;
	while (start > 0 && r->log[start - 1] != '\n')
		start--;
	int n = (int)(end - start);
	const char *line = (const char *)r->log + start;
	if (runtime && n > 0) {
		snprintf(err, errlen, "%.*s", n, line);
		return;
	}
	char what[EMBER_ERR_MAX];
	if (r->outcome == EMBER_OK)
		snprintf(what, sizeof(what), "it exited with status %d before reading a request",
			 r->status);
	else
		snprintf(what, sizeof(what), "%.200s (exit code %d)",
			 r->message[0] ? r->message : "no message", r->exit_code);
	snprintf(err, errlen, "%s%s%.*s", what, n > 0 ? "; its last line on stderr: " : "", n,
		 line);
}

/* init ended without reading its request: that run is its first result, and every later
 * invocation starts from scratch */
static int ended_early(struct ember_function *fn, enum func_state from, struct virtine *v,
		       char *err, size_t errlen)
{
	func_fill_result(&fn->first, &v->st);
	fn->first.run_us = fn->init_us;
	virtine_destroy(v);
	func_move(fn, from, FUNC_FIRST);
	if ((fn->code || fn->strict_init) &&
	    (fn->first.outcome != EMBER_OK || fn->first.status != 0)) {
		/* a runtime that failed before reading the request: the user's source is wrong,
		 * and the runtime said why on its log; a machine that failed under it is Ember's
		 * failure, not the function's */
		init_error(&fn->first, fn->code != NULL, err, errlen);
		return fn->first.outcome == EMBER_ERROR ? EMBER_ERR : EMBER_ERR_INIT;
	}
	return 0;
}

int func_init(struct ember_function *fn, struct vm *vm, int snapshot, char *err, size_t errlen)
{
	enum func_state from = func_state(fn); /* a load's FUNC_SCRATCH, a rebuild's FUNC_COLD */
	int rc;
	struct virtine *v = virtine_new(fn, vm, 1, &rc, err, errlen);
	if (!v)
		return rc == FUNC_BUDGET_FULL ? EMBER_ERR_NOMEM : rc;
	uint64_t t0 = base_now_ns();
	if ((rc = func_load_image(fn, v, err, errlen)) || !snapshot)
		goto out;
	v->st.snap_armed = 1;
	func_run_init(fn, v);
	fn->init_us = base_us_since(t0);
	for (int k = 0; k < VM_EXIT_KINDS; k++)
		fn->init_exits += v->st.stats.exits[k];
	if (v->st.init_forked) { /* processes before its snapshot point: from scratch, always */
		if (from != FUNC_SCRATCH)
			func_move(fn, from, FUNC_SCRATCH);
		rc = 0;
		goto out;
	}
	if (v->st.outcome != SYS_SNAPSHOT)
		return ended_early(fn, from, v, err, errlen);
	if ((rc = snap_capture(&fn->snap, v->vm, &v->st))) {
		snprintf(err, errlen, "cannot capture the snapshot: %s", strerror(-rc));
		rc = vm_errno_kind(-rc, EMBER_ERR);
		goto out;
	}
	func_share_snapshot(fn);
	/* the program's bytes are in the snapshot now: read again only by a new initialisation */
	img_let_go(fn->img);
	img_let_go(fn->interp);
	/* upm on KVM: its image, which a virtine maps with one mapping (without, run by run) */
	if (fn->share == SNAP_SHARE_UPM)
		snap_image_build(&fn->snap, v->vm);
	/* disarmed, counters cleared: ready for a request; a virtine that cannot be is not kept */
	int kept = !fn->no_ready && !sys_restore(&v->st, &fn->snap.sys);
	func_move(fn, from, FUNC_WARM);
	if (kept && !snap_adopt(&fn->snap, v->vm, fn->share)) /* a full map count: not kept */
		vm_drop_uffds(v->vm); /* its shell's, for a cold start it will not make */
	else
		kept = 0;
	if (!kept || pool_put(&fn->pool, v))
		virtine_destroy(v);
	return 0;
out:
	virtine_destroy(v);
	return rc;
}
