/* Machine creation through the backend table, guest memory and the one checked accessor. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <x86intrin.h>

#include "vm/vm_impl.h"

static const struct {
	const char *name;
	enum vm_backend backend;
	const struct vm_ops *ops;
} backends[] = {
    {"kvm", VM_BACKEND_KVM, &vm_kvm_ops},
    {"ptrace", VM_BACKEND_PTRACE, &vm_ptrace_ops},
    {"auto", VM_BACKEND_AUTO, NULL},
};

const char *vm_backend_name(enum vm_backend b)
{
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
		if (backends[i].backend == b)
			return backends[i].name;
	return "?";
}

int vm_backend_parse(const char *s, enum vm_backend *out)
{
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++) {
		if (strcmp(backends[i].name, s) == 0) {
			*out = backends[i].backend;
			return 0;
		}
	}
	return -1;
}

static const struct {
	int errnum, kind;
} errno_kinds[] = {
    {ENOMEM, EMBER_ERR_NOMEM}, {EAGAIN, EMBER_ERR_NOMEM}, {ENOSPC, EMBER_ERR_IO},
    {EDQUOT, EMBER_ERR_IO},    {EIO, EMBER_ERR_IO},	  {EFBIG, EMBER_ERR_IO},
    {EROFS, EMBER_ERR_IO},     {EMFILE, EMBER_ERR_IO},	  {ENFILE, EMBER_ERR_IO},
};

int vm_errno_kind(int errnum, int otherwise)
{
	for (size_t i = 0; i < sizeof(errno_kinds) / sizeof(errno_kinds[0]); i++)
		if (errno_kinds[i].errnum == errnum)
			return errno_kinds[i].kind;
	return otherwise;
}

int vm_fail(struct vm_exit *e, const char *fmt, ...)
{
	va_list ap;
	e->kind = VM_EXIT_ERROR;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return -1;
}

static int try_create(struct vm *vm, enum vm_backend b, char *err, size_t errlen)
{
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++) {
		if (backends[i].backend == b && backends[i].ops) {
			vm->ops = backends[i].ops;
			vm->backend = b;
			int rc = vm->ops->create(vm, err, errlen);
			if (rc != VM_OK) { /* a failed backend cleans up before another is tried */
				vm->ops->destroy(vm);
				vm->ops = NULL;
			}
			return rc;
		}
	}
	snprintf(err, errlen, "unknown machine backend %d", (int)b);
	return EMBER_ERR_CONFIG;
}

int vm_create(const struct vm_config *cfg, struct vm **out, char *err, size_t errlen)
{
	if (cfg->mem_size < EMBER_MEM_MIN || cfg->mem_size % EMBER_MEM_ALIGN ||
	    cfg->mem_size > EMBER_MEM_MAX) {
		snprintf(err, errlen,
			 "guest memory must be a multiple of 2 MiB from %llu MiB to %llu GiB",
			 EMBER_MEM_MIN >> 20, EMBER_MEM_MAX >> 30);
		return EMBER_ERR_CONFIG;
	}
	struct vm *vm = calloc(1, sizeof(*vm));
	if (!vm) {
		snprintf(err, errlen, "out of memory");
		return EMBER_ERR_NOMEM;
	}
	vm->mem_size = cfg->mem_size;
	vm->host_uffd = -1;
	vm->image_fd = -1;
	vm->user_top = cfg->mem_size - vm_x86_pt_bytes(cfg->mem_size);
	vm->memfd = memfd_create("ember-guest", MFD_CLOEXEC);
	int rc = VM_ERR;
	if (vm->memfd < 0 || ftruncate(vm->memfd, (off_t)vm->mem_size) < 0) {
		rc = vm_errno_kind(errno, VM_ERR);
		snprintf(err, errlen, "guest memory: %s", strerror(errno));
		goto fail;
	}
	/* MAP_NORESERVE: untouched guest memory costs nothing */
	vm->mem = mmap(NULL, vm->mem_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE,
		       vm->memfd, 0);
	if (vm->mem == MAP_FAILED) {
		vm->mem = NULL;
		rc = vm_errno_kind(errno, VM_ERR);
		snprintf(err, errlen, "guest memory: %s", strerror(errno));
		goto fail;
	}
	madvise(vm->mem, vm->mem_size, MADV_DONTFORK); /* a fork's child has no use for it */
	if (cfg->backend == VM_BACKEND_AUTO) {
		rc = try_create(vm, VM_BACKEND_KVM, err, errlen);
		if (rc == VM_ENOKVM)
			rc = try_create(vm, VM_BACKEND_PTRACE, err, errlen);
	} else {
		rc = try_create(vm, cfg->backend, err, errlen);
	}
	if (rc == VM_OK && vm->ops->dirty_log && vm_track_init(vm)) {
		snprintf(err, errlen, "out of memory");
		rc = EMBER_ERR_NOMEM;
		vm->ops->destroy(vm);
	}
	if (rc != VM_OK) {
		vm->ops = NULL;
		vm_destroy(vm);
		return rc;
	}
	vm->ncpu = 1;
	while (vm->ncpu < cfg->cpus) {
		if (vm_add_cpu(vm, err, errlen) < 0) {
			vm_destroy(vm);
			return cfg->backend == VM_BACKEND_PTRACE || cfg->cpus > VM_CPUS_MAX
				   ? EMBER_ERR_CONFIG
				   : VM_ERR;
		}
	}
	*out = vm;
	return VM_OK;
fail:
	vm_destroy(vm);
	return rc;
}

void vm_destroy(struct vm *vm)
{
	if (!vm)
		return;
	vm_timer_forget(vm);
	if (vm->ops)
		vm->ops->destroy(vm);
	if (vm->mem)
		munmap(vm->mem, vm->mem_size);
	if (vm->memfd >= 0)
		close(vm->memfd);
	if (vm->host_uffd >= 0)
		close(vm->host_uffd);
	vm_track_free(vm);
	free(vm);
}

enum vm_backend vm_backend_of(const struct vm *vm)
{
	return vm->backend;
}

int vm_cpus(const struct vm *vm)
{
	return vm->ncpu;
}

int vm_add_cpu(struct vm *vm, char *err, size_t errlen)
{
	if (!vm->ops->add_cpu) {
		snprintf(err, errlen, "the %s backend runs one vCPU per virtine", vm->ops->name);
		return -1;
	}
	if (vm->ncpu >= VM_CPUS_MAX) {
		snprintf(err, errlen, "a virtine has at most %d vCPUs", VM_CPUS_MAX);
		return -1;
	}
	if (vm->ops->add_cpu(vm, err, errlen))
		return -1;
	return vm->ncpu++;
}

void vm_cpu_run(struct vm *vm, int cpu, uint64_t slice_ns, struct vm_exit *exit)
{
	memset(exit, 0, sizeof(*exit));
	if (cpu < 0 || cpu >= vm->ncpu) {
		vm_fail(exit, "no vCPU %d", cpu);
		return;
	}
	if (vm->expired) {
		exit->kind = VM_EXIT_TIMEOUT;
		return;
	}
	struct vm_cpu *c = &vm->cpu[cpu];
	c->driver = pthread_self();
	/* published before kicked is read: a kick either sees this thread driving (and signals
	 * it) or is seen here */
	atomic_store(&c->driving, 1);
	vm_timer_running(vm, cpu, slice_ns);
	if (atomic_load(&c->kicked))
		exit->kind = VM_EXIT_INTERRUPT;
	else
		vm->ops->run(vm, cpu, exit);
	atomic_store(&c->driving, 0);
	/* the caller looks at what the kick was for once this run is over */
	atomic_store(&c->kicked, 0);
	c->slice = 0;
	if (exit->kind != VM_EXIT_ERROR && vm->expired)
		exit->kind = VM_EXIT_TIMEOUT;
}

void vm_run(struct vm *vm, struct vm_exit *exit)
{
	vm_cpu_run(vm, 0, 0, exit);
}

void vm_cpu_kick(struct vm *vm, int cpu)
{
	if (cpu < 0 || cpu >= vm->ncpu)
		return;
	struct vm_cpu *c = &vm->cpu[cpu];
	atomic_store(&c->kicked, 1);
	if (atomic_load(&c->driving))
		pthread_kill(c->driver, vm_timer_signal());
}

uint64_t vm_thread_cpu_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint64_t vm_machine_cpu_ns(struct vm *vm)
{
	return vm->ops->machine_cpu_ns ? vm->ops->machine_cpu_ns(vm) : 0;
}

int vm_usable(const struct vm *vm)
{
	return vm->ops->usable(vm);
}

/* a vCPU number the caller may name: the ops index arrays with it */
static int cpu_ok(const struct vm *vm, int cpu)
{
	return cpu >= 0 && cpu < vm->ncpu;
}

int vm_get_regs(struct vm *vm, struct vm_regs *r)
{
	return vm->ops->get_regs(vm, 0, r);
}

int vm_set_regs(struct vm *vm, const struct vm_regs *r)
{
	return vm->ops->set_regs(vm, 0, r);
}

int vm_set_fs_base(struct vm *vm, uint64_t base)
{
	return vm->ops->set_fs_base(vm, 0, base);
}

int vm_get_fs_base(struct vm *vm, uint64_t *base)
{
	return vm->ops->get_fs_base(vm, 0, base);
}

int vm_cpu_get_regs(struct vm *vm, int cpu, struct vm_regs *r)
{
	return cpu_ok(vm, cpu) ? vm->ops->get_regs(vm, cpu, r) : -EINVAL;
}

int vm_cpu_set_regs(struct vm *vm, int cpu, const struct vm_regs *r)
{
	return cpu_ok(vm, cpu) ? vm->ops->set_regs(vm, cpu, r) : -EINVAL;
}

int vm_cpu_set_fs_base(struct vm *vm, int cpu, uint64_t base)
{
	return cpu_ok(vm, cpu) ? vm->ops->set_fs_base(vm, cpu, base) : -EINVAL;
}

int vm_cpu_get_fpu(struct vm *vm, int cpu, void *buf, size_t *len)
{
	return cpu_ok(vm, cpu) ? vm->ops->get_fpu(vm, cpu, buf, len) : -EINVAL;
}

int vm_cpu_set_fpu(struct vm *vm, int cpu, const void *buf, size_t len)
{
	return cpu_ok(vm, cpu) ? vm->ops->set_fpu(vm, cpu, buf, len) : -EINVAL;
}

int vm_get_fpu(struct vm *vm, void *buf, size_t *len)
{
	return vm->ops->get_fpu(vm, 0, buf, len);
}

int vm_set_fpu(struct vm *vm, const void *buf, size_t len)
{
	return vm->ops->set_fpu(vm, 0, buf, len);
}

void vm_call(struct vm *vm, void (*fn)(void *), void *arg)
{
	vm->ops->call(vm, fn, arg);
}

int vm_uffd_api(int fd)
{
	struct uffdio_api api = {.api = UFFD_API, .features = 0};
	return ioctl(fd, UFFDIO_API, &api) < 0 ? -errno : 0;
}

int vm_get_uffds(struct vm *vm, struct vm_uffds *u, char *err, size_t errlen)
{
	memset(u, 0, sizeof(*u));
	if (vm->host_uffd < 0) {
		int fd = vm_uffd_new();
		if (fd < 0 || vm_uffd_api(fd)) {
			snprintf(err, errlen, "userfaultfd: %s", strerror(errno));
			if (fd >= 0)
				close(fd);
			return -1;
		}
		vm->host_uffd = fd;
	}
	u->fd[u->n] = vm->host_uffd;
	u->off[u->n++] = (uint64_t)(uintptr_t)vm->mem;
	int g = vm->ops->guest_uffd ? vm->ops->guest_uffd(vm) : -1;
	if (g == -2) {
		snprintf(err, errlen, "cannot reach the guest's userfaultfd: %s", strerror(errno));
		return -1;
	}
	if (g >= 0) {
		u->fd[u->n] = g;
		u->off[u->n++] = 0; /* the stub maps guest memory at the guest's own addresses */
	}
	return 0;
}

void vm_drop_uffds(struct vm *vm)
{
	if (vm->host_uffd >= 0)
		close(vm->host_uffd);
	vm->host_uffd = -1;
	if (vm->ops->drop_uffd)
		vm->ops->drop_uffd(vm);
}

int vm_guest_tsc(struct vm *vm, uint64_t *tsc)
{
	if (vm->ops->guest_tsc)
		return vm->ops->guest_tsc(vm, tsc);
	*tsc = __rdtsc(); /* the guest runs on the host's TSC */
	return 0;
}
