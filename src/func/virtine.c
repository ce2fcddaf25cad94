/* Building a function's virtines: a charged machine, its emulation state, the snapshot restored. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "func/func.h"

struct virtine *virtine_new(struct ember_function *fn, struct vm *vm, int wait, int *kind,
			    char *err, size_t errlen)
{
	struct virtine *v = calloc(1, sizeof(*v));
	if (!v) {
		vm_destroy(vm);
		*kind = EMBER_ERR_NOMEM;
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	v->vm = vm;
	uint64_t bytes = fn->vmcfg.mem_size;
	if (budget_take(fn->budget, bytes, wait ? base_now_ns() + fn->timeout_ns : 0)) {
		virtine_destroy(v); /* charged nothing yet: destroys only the machine given */
		*kind = FUNC_BUDGET_FULL;
		snprintf(err, errlen, "the memory budget is full: no virtine ended in time");
		return NULL;
	}
	v->budget = fn->budget;
	v->charged = bytes;
	if (vm)
		return v;
	*kind = pool_shell(&fn->vmcfg, &v->vm, err, errlen);
	if (*kind != VM_OK) {
		virtine_destroy(v); /* no machine: gives the memory back */
		return NULL;
	}
	return v;
}

void virtine_prepare(struct ember_function *fn, struct virtine *v, const struct sys_process *proc)
{
	sys_init(&v->st, v->vm, proc);
	func_share_virtine(fn, v);
	v->st.out_limit = fn->output_limit;
	if (fn->code)
		sys_set_code(&v->st, fn->code, fn->code_len);
	sys_set_bundle(&v->st, fn->bundle);
	v->st.cwd = fn->cwd;
	func_sites_virtine(fn, &v->st);
	sys_set_exe(&v->st, fn->img->buf, fn->img->len, fn->exe_path);
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

struct virtine *func_restored(struct ember_function *fn, int wait, int *kind, char *err,
			      size_t errlen)
{
	struct virtine *v = virtine_new(fn, NULL, wait, kind, err, errlen);
	if (!v)
		return NULL;
	virtine_prepare(fn, v, &fn->proc);
	int rc = reset(fn, v, 1, NULL);
	if (rc) {
		virtine_destroy(v);
		int e = rc < 0 ? -rc : EIO;
		snprintf(err, errlen, "cannot restore the snapshot: %s", strerror(e));
		*kind = vm_errno_kind(e, EMBER_ERR);
		return NULL;
	}
	vm_drop_uffds(v->vm); /* a shell's, made for a cold start this is not */
	return v;
}
