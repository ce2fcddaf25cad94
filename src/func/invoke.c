/* Running a function: init to the snapshot point once, then invocations from pooled virtines. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "func/func.h"

static uint64_t us_since(uint64_t t0)
{
	return (vm_now_ns() - t0) / 1000;
}

/* Loads the image into a clean machine and sets up the start of the program; 0 or a kind. */
static int load_image(struct ember_function *fn, struct virtine *v, char *err, size_t errlen)
{
	struct img_layout l;
	int rc = img_load(fn->img, v->vm, (const char *const *)fn->argv,
			  (const char *const *)fn->envp, fn->rt->guest, &l, err, errlen);
	if (rc)
		return rc;
	struct sys_process proc = {.brk_start = l.brk_start,
				   .mmap_hi = l.mmap_hi,
				   .stack_lo = l.stack_lo,
				   .stack_hi = l.stack_hi,
				   .stack_size = l.stack_size,
				   .guest = l.guest};
	fn->sites_call = l.sites_call;
	fn->sites_trap = l.sites_trap;
	fn->proc = proc;
	sys_init(&v->st, v->vm, &proc);
	func_share_virtine(fn, v);
	v->st.out_limit = fn->output_limit;
	for (int i = 0; i < l.nmaps; i++)
		if (sys_vma_map(&v->st, l.maps[i].start, l.maps[i].end, l.maps[i].prot))
			return snprintf(err, errlen, "out of memory"), EMBER_ERR_NOMEM;
	if (v->st.rt->setup(&v->st))
		return snprintf(err, errlen, "cannot set up the in-guest runtime's memory"),
		       EMBER_ERR;
	if (fn->code)
		sys_set_code(&v->st, fn->code, fn->code_len);
	sys_set_bundle(&v->st, fn->bundle);
	struct vm_regs r;
	memset(&r, 0, sizeof(r));
	r.rip = l.entry;
	r.rsp = l.sp;
	r.rflags = 0x2;
	if ((rc = vm_set_regs(v->vm, &r)) || (rc = vm_set_fs_base(v->vm, 0)))
		return snprintf(err, errlen, "cannot set the vCPU registers: %s", strerror(-rc)),
		       EMBER_ERR;
	return 0;
}

struct run_args {
	struct virtine *v;
	uint64_t timeout_ns;
	uint64_t machine_ns; /* out: CPU time of the backend's own processes (vm_machine_cpu_ns) */
};

/* the whole run on the machine's own thread: one hop per invocation, not one per exit */
static void run_on_vcpu(void *p)
{
	struct run_args *a = p;
	struct sys_state *st = &a->v->st;
	st->start_ns = vm_now_ns();
	uint64_t cpu0 = vm_machine_cpu_ns(a->v->vm);
	/* the in-guest runtime gets its clocks, entropy and first piece of the request */
	if (vm_set_deadline(a->v->vm, st->start_ns + a->timeout_ns))
		sys_stop(st, SYS_ERROR, 0, "cannot arm the invocation's deadline timer");
	else if (st->rt->begin(st))
		sys_stop(st, SYS_ERROR, 0, "cannot prepare the in-guest runtime");
	else
		sys_run(st);
	vm_set_deadline(a->v->vm, 0);
	uint64_t cpu1 = vm_machine_cpu_ns(a->v->vm);
	a->machine_ns = cpu1 > cpu0 ? cpu1 - cpu0 : 0;
}

/* returns the CPU time of the backend's own processes meanwhile, ns */
static uint64_t run(struct ember_function *fn, struct virtine *v)
{
	struct run_args a = {v, fn->timeout_ns, 0};
	vm_call(v->vm, run_on_vcpu, &a);
	return a.machine_ns;
}

static const struct {
	enum sys_outcome sys;
	enum ember_outcome outcome;
	int code;
} outcomes[] = {
    {SYS_EXITED, EMBER_OK, 0},	       {SYS_SIGNALED, EMBER_CRASH, 128},
    {SYS_TIMEOUT, EMBER_TIMEOUT, 124}, {SYS_LIMIT, EMBER_LIMIT, 126},
    {SYS_ERROR, EMBER_ERROR, 125},     {SYS_RUNNING, EMBER_ERROR, 125},
    {SYS_SNAPSHOT, EMBER_ERROR, 125},
};

static void fill_result(struct ember_result *res, struct sys_state *st)
{
	for (size_t i = 0; i < sizeof(outcomes) / sizeof(outcomes[0]); i++) {
		if (outcomes[i].sys != st->outcome)
			continue;
		res->outcome = outcomes[i].outcome;
		res->exit_code = outcomes[i].code;
	}
	snprintf(res->message, sizeof(res->message), "%s", st->msg);
	if (res->outcome == EMBER_OK)
		res->status = res->exit_code = st->status;
	if (res->outcome == EMBER_CRASH) {
		res->signal = st->status;
		res->exit_code = 128 + st->status;
	}
	/* the buffers move to the result; the virtine starts new ones */
	res->out = st->out.data;
	res->out_len = st->out.len;
	res->log = st->log.data;
	res->log_len = st->log.len;
	memset(&st->out, 0, sizeof(st->out));
	memset(&st->log, 0, sizeof(st->log));
	for (int k = 0; k < 4; k++) {
		res->exits_by_reason[k] = st->stats.exits[k];
		res->exits += st->stats.exits[k];
	}
	size_t n = 0;
	for (int i = 0; i <= SYS_NR_MAX; i++)
		n += st->stats.served[i] || st->stats.denied[i];
	res->syscalls = calloc(n ? n : 1, sizeof(*res->syscalls));
	for (int i = 0; res->syscalls && i <= SYS_NR_MAX; i++) {
		if (!st->stats.served[i] && !st->stats.denied[i])
			continue;
		res->syscalls[res->nsyscalls++] =
		    (struct ember_syscall_count){i, sys_name(i), st->stats.served[i],
						 st->stats.denied[i], st->stats.in_guest[i]};
	}
}

static void fail_result(struct ember_result *res, const char *msg)
{
	res->outcome = EMBER_ERROR;
	res->exit_code = 125;
	snprintf(res->message, sizeof(res->message), "%s", msg);
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
	char what[300];
	if (r->outcome == EMBER_OK)
		snprintf(what, sizeof(what), "it exited with status %d before reading a request",
			 r->status);
	else
		snprintf(what, sizeof(what), "%s (exit code %d)",
			 r->message[0] ? r->message : "no message", r->exit_code);
	snprintf(err, errlen, "%s%s%.*s", what, n > 0 ? "; its last line on stderr: " : "", n,
		 line);
}

int func_init(struct ember_function *fn, struct vm *vm, char *err, size_t errlen)
{
	struct virtine *v = calloc(1, sizeof(*v));
	if (!v) {
		vm_destroy(vm);
		return snprintf(err, errlen, "out of memory"), EMBER_ERR_NOMEM;
	}
	v->vm = vm;
	if (budget_take(fn->budget, fn->vmcfg.mem_size, vm_now_ns() + fn->timeout_ns)) {
		virtine_destroy(v);
		return snprintf(err, errlen, "the memory budget is full: no virtine ended in time"),
		       EMBER_ERR_NOMEM;
	}
	v->budget = fn->budget;
	v->charged = fn->vmcfg.mem_size;
	uint64_t t0 = vm_now_ns();
	int rc = load_image(fn, v, err, errlen);
	if (rc)
		goto fail;
	if (!fn->use_snapshot) {
		virtine_destroy(v);
		return 0;
	}
	v->st.snap_armed = 1;
	run(fn, v);
	fn->init_us = us_since(t0);
	for (int k = 0; k < VM_EXIT_KINDS; k++)
		fn->init_exits += v->st.stats.exits[k];
	if (v->st.outcome != SYS_SNAPSHOT) {
		/* it ended without reading its request: that run is its first result, and every
		 * later invocation starts from scratch */
		fill_result(&fn->first, &v->st);
		fn->first.run_us = fn->init_us;
		fn->first_pending = 1;
		virtine_destroy(v);
		if ((fn->code || fn->strict_init) &&
		    (fn->first.outcome != EMBER_OK || fn->first.status != 0)) {
			/* a runtime that failed before reading the request: the user's source is
			 * wrong, and the runtime said why on its log; a machine that failed under
			 * it is Ember's failure, not the function's */
			init_error(&fn->first, fn->code != NULL, err, errlen);
			return fn->first.outcome == EMBER_ERROR ? EMBER_ERR : EMBER_ERR_INIT;
		}
		return 0;
	}
	if ((rc = snap_capture(&fn->snap, vm, &v->st))) {
		snprintf(err, errlen, "cannot capture the snapshot: %s", strerror(-rc));
		rc = vm_errno_kind(-rc, EMBER_ERR);
		goto fail;
	}
	fn->snapshot = 1;
	func_share_snapshot(fn);
	sys_restore(&v->st, &fn->snap.sys); /* disarmed, counters cleared: ready for a request */
	if (snap_adopt(&fn->snap, vm, fn->share)) { /* a full map count: this one is not kept */
		virtine_destroy(v);
		return 0;
	}
	if (pool_put(&fn->pool, v))
		virtine_destroy(v);
	return 0;
fail:
	virtine_destroy(v);
	return rc;
}

struct reset_args {
	const struct snap *snap;
	struct virtine *v;
	int restore; /* 1: a clean shell to restore into; 0: a used virtine to reset */
	enum snap_share share;
	int rc;
	size_t touched; /* a reset: the pages it put back */
};

static void reset_on_vcpu(void *p)
{
	struct reset_args *a = p;
	a->rc = a->restore ? snap_restore(a->snap, a->v->vm, &a->v->st, a->share)
			   : snap_reset(a->snap, a->v->vm, &a->v->st, &a->touched);
}

/* *touched (may be NULL) gets the pages a reset put back */
static int reset(struct ember_function *fn, struct virtine *v, int restore, uint64_t *touched)
{
	struct reset_args a = {&fn->snap, v, restore, fn->share, 0, 0};
	vm_call(v->vm, reset_on_vcpu, &a);
	if (touched)
		*touched = a.touched;
	return a.rc;
}

int func_reset(struct ember_function *fn, struct virtine *v, uint64_t *touched)
{
	return reset(fn, v, 0, touched);
}

struct virtine *func_new_virtine(struct ember_function *fn, int wait, int *kind, char *err,
				 size_t errlen)
{
	struct virtine *v = calloc(1, sizeof(*v));
	if (!v) {
		*kind = EMBER_ERR_NOMEM;
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	uint64_t bytes = fn->vmcfg.mem_size;
	if (budget_take(fn->budget, bytes, wait ? vm_now_ns() + fn->timeout_ns : 0)) {
		free(v);
		*kind = FUNC_BUDGET_FULL;
		snprintf(err, errlen, "the memory budget is full: no virtine ended in time");
		return NULL;
	}
	v->budget = fn->budget;
	v->charged = bytes;
	*kind = pool_shell(&fn->vmcfg, &v->vm, err, errlen);
	if (*kind != VM_OK) {
		virtine_destroy(v); /* no machine: gives the memory back */
		return NULL;
	}
	return v;
}

struct virtine *func_restored(struct ember_function *fn, int wait, int *kind, char *err,
			      size_t errlen)
{
	struct virtine *v = func_new_virtine(fn, wait, kind, err, errlen);
	if (!v)
		return NULL;
	sys_init(&v->st, v->vm, &fn->proc);
	func_share_virtine(fn, v);
	v->st.out_limit = fn->output_limit;
	if (fn->code)
		sys_set_code(&v->st, fn->code, fn->code_len);
	sys_set_bundle(&v->st, fn->bundle);
	int rc = reset(fn, v, 1, NULL);
	if (rc) {
		virtine_destroy(v);
		snprintf(err, errlen, "cannot restore the snapshot: %s",
			 strerror(rc < 0 ? -rc : EIO));
		*kind = vm_errno_kind(rc < 0 ? -rc : EIO, EMBER_ERR);
		return NULL;
	}
	return v;
}

/* a virtine at the snapshot state: from the pool, else restored into a clean shell on the
 * request's own path (what the refiller is there to spare it) */
static struct virtine *get_warm(struct ember_function *fn, struct ember_result *res)
{
	uint64_t t0 = vm_now_ns();
	struct virtine *v = pool_take(&fn->pool);
	res->wait_us = us_since(t0);
	if (v) {
		res->warm = 1;
		res->start = EMBER_START_WARM;
		func_demand_took(fn, atomic_fetch_add(&fn->dm.in_use, 1) + 1);
		return v;
	}
	res->start = EMBER_START_RESTORE;
	atomic_fetch_add(&fn->dm.restores, 1);
	func_demand_took(fn, atomic_fetch_add(&fn->dm.in_use, 1) + 1);
	uint64_t t1 = vm_now_ns();
	char err[200];
	int kind;
	v = func_restored(fn, 1, &kind, err, sizeof(err));
	res->setup_us = us_since(t1);
	if (!v) {
		atomic_fetch_sub(&fn->dm.in_use, 1);
		fail_result(res, err);
	}
	return v;
}

int func_warm(struct ember_function *fn, unsigned n, char *err, size_t errlen)
{
	if (!fn->snapshot || atomic_load(&fn->cold_pending))
		return 0;
	if (n > fn->pool.cap)
		n = (unsigned)fn->pool.cap;
	int added = 0, kind;
	while (atomic_load(&fn->pool.ready) < n) {
		struct virtine *v = func_restored(fn, 0, &kind, err, errlen);
		if (!v)
			return kind == FUNC_BUDGET_FULL ? added : kind; /* spares are optional */
		if (pool_put(&fn->pool, v)) {
			virtine_destroy(v);
			break;
		}
		added++;
	}
	return added;
}

int ember_warm(struct ember_function *fn, unsigned n)
{
	char err[200];
	int rc = func_warm(fn, n, err, sizeof(err));
	return rc < 0 ? -1 : rc;
}

int ember_trim(struct ember_function *fn, unsigned n)
{
	int dropped = 0;
	struct virtine *v;
	while (atomic_load(&fn->pool.ready) > n && (v = pool_take(&fn->pool))) {
		virtine_destroy(v);
		dropped++;
	}
	return dropped;
}

static int invoke_shell(struct ember_function *fn, const void *in, size_t len, const char *meta,
			size_t meta_len, struct ember_result *res)
{
	uint64_t t0 = vm_now_ns();
	char err[200];
	int kind;
	struct virtine *v = func_new_virtine(fn, 1, &kind, err, sizeof(err));
	res->wait_us = us_since(t0);
	res->start = EMBER_START_INIT;
	if (!v) {
		fail_result(res, err);
		return -1;
	}
	uint64_t t1 = vm_now_ns();
	if (load_image(fn, v, err, sizeof(err))) {
		virtine_destroy(v);
		fail_result(res, err);
		return -1;
	}
	res->load_us = us_since(t1);
	sys_set_input(&v->st, in, len);
	sys_set_meta(&v->st, meta, meta_len);
	uint64_t t2 = vm_now_ns();
	res->cpu_us += run(fn, v) / 1000;
	res->run_us = us_since(t2);
	fill_result(res, &v->st);
	virtine_destroy(v);
	return 0;
}

void func_run_invocation(struct ember_function *fn, struct virtine *v, const void *in, size_t len,
			 const char *meta, size_t meta_len, struct ember_result *res)
{
	sys_set_input(&v->st, in, len);
	sys_set_meta(&v->st, meta, meta_len);
	uint64_t t0 = vm_now_ns();
	res->cpu_us += run(fn, v) / 1000;
	res->run_us = us_since(t0);
	fill_result(res, &v->st);
}

int ember_invoke(struct ember_function *fn, const void *in, size_t len, struct ember_result *res)
{
	return ember_invoke_meta(fn, in, len, NULL, 0, res);
}

struct warm_args {
	struct ember_function *fn;
	struct virtine *v;
	struct ember_result *res;
	int broken;
};

/* A warm invocation on the vCPU's thread: the run, its result, and at once the reset back to
 * the snapshot, so the next request finds the virtine ready; a machine that failed is not
 * trusted again. */
static void warm_on_vcpu(void *p)
{
	struct warm_args *a = p;
	struct virtine *v = a->v;
	struct run_args r = {v, a->fn->timeout_ns, 0};
	uint64_t t0 = vm_now_ns();
	run_on_vcpu(&r);
	a->res->cpu_us += r.machine_ns / 1000;
	a->res->run_us = us_since(t0);
	fill_result(a->res, &v->st);
	uint64_t t1 = vm_now_ns();
	/* a crash leaves the machine usable (the reset puts it back), unless it shut down */
	size_t touched = 0;
	a->res->dirty_log = vm_logging(v->vm);
	a->broken = v->st.outcome == SYS_ERROR || !vm_usable(v->vm) ||
		    snap_reset(&a->fn->snap, v->vm, &v->st, &touched);
	a->res->pages_touched = touched;
	a->res->reset_us = us_since(t1);
}

int func_run_warm(struct ember_function *fn, struct virtine *v, const void *in, size_t len,
		  const char *meta, size_t meta_len, struct ember_result *res)
{
	sys_set_input(&v->st, in, len);
	sys_set_meta(&v->st, meta, meta_len);
	struct warm_args a = {fn, v, res, 0};
	vm_call(v->vm, warm_on_vcpu, &a); /* one hop to the vCPU's thread for run and reset */
	return a.broken;
}

static int invoke_any(struct ember_function *fn, const void *in, size_t len, const char *meta,
		      size_t meta_len, struct ember_result *res)
{
	if (fn->first_pending && !atomic_exchange(&fn->first_taken, 1)) {
		*res = fn->first;
		res->start = EMBER_START_INIT;
		memset(&fn->first, 0, sizeof(fn->first));
		return 0;
	}
	if (!fn->snapshot)
		return invoke_shell(fn, in, len, meta, meta_len, res);
	if (atomic_load(&fn->cold_pending)) {
		/* one cold start at a time; the others wait for it and then run warm */
		pthread_mutex_lock(&fn->cold_lock);
		/* still set until the cold start has the snapshot in memory (func_invoke_cold
		 * clears it): whoever comes meanwhile waits here, not in a restore from it */
		int rc = 0, cold = atomic_load(&fn->cold_pending);
		if (cold)
			rc = func_invoke_cold(fn, in, len, meta, meta_len, res);
		pthread_mutex_unlock(&fn->cold_lock);
		if (cold)
			return rc;
	}
	struct virtine *v = get_warm(fn, res);
	if (!v)
		return -1;
	if (func_run_warm(fn, v, in, len, meta, meta_len, res) || pool_put(&fn->pool, v))
		virtine_destroy(v);
	else
		budget_kick(fn->budget);
	atomic_fetch_sub(&fn->dm.in_use, 1); /* after the put: ready + in use never undercounts */
	return 0;
}

/* cpu_us: what the invoking thread spent (on KVM the guest's run, its faults and the reset are
 * all here), and what the backend's own processes did for it */
int ember_invoke_meta(struct ember_function *fn, const void *in, size_t len, const char *meta,
		      size_t meta_len, struct ember_result *res)
{
	memset(res, 0, sizeof(*res));
	uint64_t t0 = vm_thread_cpu_ns();
	int rc = invoke_any(fn, in, len, meta, meta_len, res);
	uint64_t t1 = vm_thread_cpu_ns();
	res->cpu_us += t1 > t0 ? (t1 - t0) / 1000 : 0;
	return rc;
}
