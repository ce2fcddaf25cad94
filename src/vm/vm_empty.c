/* A used machine made clean again, as vm_create leaves one, so that a fork need not make one. */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vm/vm_impl.h"

/* Making a machine under PVM is ~0.5-0.7 ms of host CPU (KVM_CREATE_VM with its debugfs files and
 * MMU notifier, the memory slot's reverse maps, a vCPU, KVM_SET_CPUID2) and destroying one as
 * much again; every fork and execve inside an invocation paid both. Emptying keeps the VM, its
 * slot and its vCPUs: guest memory is mapped afresh from its own memfd over everything the
 * program had (copy-on-write runs, shared memory, an image), which drops every KVM mapping of
 * it through the MMU notifier, the memfd is punched whole (zero), the page tables and
 * descriptor tables are built again, and each vCPU gets its state of creation back. */
int vm_empty(struct vm *vm)
{
	if (!vm->ops->empty || vm->memfd < 0 || !vm->host_w || !vm->ops->usable(vm))
		return -EOPNOTSUPP;
	vm_timer_forget(vm);
	if (vm->logging && vm->ops->log_writes && vm->ops->log_writes(vm, 0))
		return -EIO;
	vm->logging = 0;
	/* its userfaultfds were registered on the mapping replaced below: gone with it */
	vm_drop_uffds(vm);
	if (mmap(vm->mem, vm->mem_size, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED | MAP_NORESERVE, vm->memfd, 0) == MAP_FAILED)
		return -errno;
	madvise(vm->mem, vm->mem_size, MADV_DONTFORK);
	if (fallocate(vm->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
		      (off_t)vm->mem_size) < 0)
		return -errno;
	vm_track_clear(vm);
	vm->image_fd = -1; /* the snapshot's descriptor, never the machine's own */
	vm->deadline = 0;
	vm->expired = 0;
	for (int i = 0; i < VM_CPUS_MAX; i++) {
		vm->cpu[i].kicked = 0;
		vm->cpu[i].slice = 0;
	}
	vm_x86_build(vm);
	return vm->ops->empty(vm);
}
