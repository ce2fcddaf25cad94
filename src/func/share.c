/* A function's page sharing: its domain's store, its snapshot held there, its virtines' merges. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "func/func.h"

int func_share_open(struct ember_function *fn, const char *domain, char *err, size_t errlen)
{
	if (fn->share != SNAP_SHARE_UPM)
		return 0;
	fn->store = share_store_get(domain ? domain : "");
	if (fn->store)
		return 0;
	snprintf(err, errlen, "the sharing domain's page store: %s", strerror(errno));
	return vm_errno_kind(errno, EMBER_ERR_NOMEM);
}

void func_share_snapshot(struct ember_function *fn)
{
	/* without room in the store the snapshot keeps its own sealed copy: shared by the
	 * function's virtines still, not with other functions */
	if (fn->store) /* called once the snapshot is whole in memory */
		share_snap_share(fn->store, &fn->snap, &fn->snap_refs);
}

void func_share_files(struct ember_function *fn)
{
	/* only where guest memory maps files (KVM); without room in the store the bundle maps its
	 * own block: shared by the function's virtines still, not with other functions. Once: at
	 * a load that runs init, or after a cold start's response; a virtine mapping them
	 * meanwhile sees the store's pages or the bundle's own (published last, atomically) */
	if (fn->store && fn->bundle && fn->vmcfg.backend == VM_BACKEND_KVM && !fn->files_shared) {
		share_bnd_share(fn->store, fn->bundle, &fn->file_refs);
		fn->files_shared = 1;
	}
}

static int merge(void *ctx, struct vm *vm, uint64_t start, uint64_t len)
{
	struct virtine *v = ctx;
	return share_merge(&v->merged, vm, start, len);
}

void func_share_virtine(struct ember_function *fn, struct virtine *v)
{
	v->merged.st = fn->store;
	v->st.merge = fn->store ? merge : NULL;
	v->st.merge_ctx = v;
}

void func_share_close(struct ember_function *fn)
{
	share_refs_release(&fn->snap_refs); /* after snap_free: nothing maps them any more */
	share_bnd_unshare(fn->bundle, &fn->file_refs); /* after pool_fini: its virtines are gone */
	share_store_put(fn->store);
	fn->store = NULL;
}
