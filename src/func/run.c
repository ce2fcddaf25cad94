/* Running a function's virtine: the run on the vCPU's thread, its result, the warm reset. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family/fam.h"
#include "func/func.h"

struct run_args {
	struct ember_function *fn;
	struct virtine *v;
	uint64_t timeout_ns;
	uint64_t machine_ns; /* out: CPU time of the backend's own processes (vm_machine_cpu_ns) */
};

/* the whole run on the machine's own thread: one hop per invocation, not one per exit */
static void run_on_vcpu(void *p)
{
	struct run_args *a = p;
	struct sys_state *st = &a->v->st;
	st->start_ns = base_now_ns();
	uint64_t cpu0 = vm_machine_cpu_ns(a->v->vm);
	/* the in-guest runtime gets its clocks, entropy and first piece of the request */
	/* its processes, from its first fork on; all of them gone when it ends */
	struct fam *fam = fam_new(st, &func_fam_loader, a->fn);
	if (vm_set_deadline(a->v->vm, st->start_ns + a->timeout_ns))
		sys_stop(st, SYS_ERROR, 0, "cannot arm the invocation's deadline timer");
	else if (st->rt->begin(st))
		sys_stop(st, SYS_ERROR, 0, "cannot prepare the in-guest runtime");
	else
		sys_run(st);
	fam_finish(fam);
	fam_free(fam);
	st->kin = NULL;
	st->kin_ctx = NULL;
	vm_set_deadline(a->v->vm, 0);
	uint64_t cpu1 = vm_machine_cpu_ns(a->v->vm);
	a->machine_ns = cpu1 > cpu0 ? cpu1 - cpu0 : 0;
}

/* returns the CPU time of the backend's own processes meanwhile, ns */
static uint64_t run(struct ember_function *fn, struct virtine *v)
{
	struct run_args a = {fn, v, fn->timeout_ns, 0};
	vm_call(v->vm, run_on_vcpu, &a);
	return a.machine_ns;
}

void func_run_init(struct ember_function *fn, struct virtine *v)
{
	run(fn, v);
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

void func_fill_result(struct ember_result *res, struct sys_state *st)
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
	res->head = st->head.data;
	res->head_len = st->head.len;
	memset(&st->out, 0, sizeof(st->out));
	memset(&st->log, 0, sizeof(st->log));
	memset(&st->head, 0, sizeof(st->head));
	for (int k = 0; k < EMBER_EXIT_KINDS; k++) {
		res->exits_by_reason[k] = st->stats.exits[k];
		res->exits += st->stats.exits[k];
	}
	const struct sys_stats *ss = &st->stats;
	size_t n = 0;
	for (int i = sys_stats_next(ss, 0); i >= 0; i = sys_stats_next(ss, i + 1))
		n += ss->served[i] || ss->denied[i];
	res->syscalls = calloc(n ? n : 1, sizeof(*res->syscalls));
	for (int i = sys_stats_next(ss, 0); res->syscalls && i >= 0;
	     i = sys_stats_next(ss, i + 1)) {
		if (!ss->served[i] && !ss->denied[i])
			continue;
		res->syscalls[res->nsyscalls++] =
		    (struct ember_syscall_count){i, sys_name(i), st->stats.served[i],
						 st->stats.denied[i], st->stats.in_guest[i]};
	}
}

void func_fail_result(struct ember_result *res, const char *msg)
{
	res->outcome = EMBER_ERROR;
	res->exit_code = 125;
	snprintf(res->message, sizeof(res->message), "%s", msg);
}

void func_run_invocation(struct ember_function *fn, struct virtine *v, const struct func_call *c,
			 struct ember_result *res)
{
	sys_set_input(&v->st, c->in, c->len);
	sys_set_meta(&v->st, c->meta, c->meta_len);
	uint64_t t0 = base_now_ns();
	res->cpu_us += run(fn, v) / 1000;
	res->run_us = base_us_since(t0);
	func_fill_result(res, &v->st);
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
	struct run_args r = {a->fn, v, a->fn->timeout_ns, 0};
	uint64_t t0 = base_now_ns();
	run_on_vcpu(&r);
	a->res->cpu_us += r.machine_ns / 1000;
	a->res->run_us = base_us_since(t0);
	func_fill_result(a->res, &v->st);
	uint64_t t1 = base_now_ns();
	/* a crash leaves the machine usable (the reset puts it back), unless it shut down */
	size_t touched = 0;
	a->res->dirty_log = vm_logging(v->vm);
	a->broken = v->st.outcome == SYS_ERROR || !vm_usable(v->vm) ||
		    snap_reset(&a->fn->snap, v->vm, &v->st, &touched);
	a->res->pages_touched = touched;
	a->res->reset_us = base_us_since(t1);
}

int func_run_warm(struct ember_function *fn, struct virtine *v, const struct func_call *c,
		  struct ember_result *res)
{
	sys_set_input(&v->st, c->in, c->len);
	sys_set_meta(&v->st, c->meta, c->meta_len);
	struct warm_args a = {fn, v, res, 0};
	vm_call(v->vm, warm_on_vcpu, &a); /* one hop to the vCPU's thread for run and reset */
	return a.broken;
}
