/* kvm_smoke [N]: checks that KVM runs guest code: real-mode `out` then `hlt` in a fresh VM. */
/* scripts/qemu-kvm.sh runs it in its guest before the command, so a broken nested KVM fails
 * loudly, never silently. With N it also times N more `out` exits and prints the mean cost. */
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>

static int fail(const char *what)
{
	perror(what);
	fprintf(stderr, "kvm_smoke: FAILED at %s\n", what);
	return 1;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 0;
	/* at 0x1000: mov $0x2a,%al; 1: out %al,$0x10; dec %ecx; jnz 1b; hlt (ecx = n + 1 outs) */
	static const unsigned char code[] = {0xb0, 0x2a, 0xe6, 0x10, 0x66, 0x49, 0x75, 0xfa, 0xf4};
	int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0)
		return fail("open /dev/kvm");
	if (ioctl(kvm, KVM_GET_API_VERSION, 0) != KVM_API_VERSION)
		return fail("KVM_GET_API_VERSION");
	int vm = ioctl(kvm, KVM_CREATE_VM, 0);
	if (vm < 0)
		return fail("KVM_CREATE_VM");
	unsigned char *mem =
	    mmap(NULL, 0x10000, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return fail("mmap");
	memcpy(mem + 0x1000, code, sizeof code);
	struct kvm_userspace_memory_region region = {.slot = 0,
						     .guest_phys_addr = 0,
						     .memory_size = 0x10000,
						     .userspace_addr = (unsigned long)mem};
	if (ioctl(vm, KVM_SET_USER_MEMORY_REGION, &region) < 0)
		return fail("KVM_SET_USER_MEMORY_REGION");
	int vcpu = ioctl(vm, KVM_CREATE_VCPU, 0);
	if (vcpu < 0)
		return fail("KVM_CREATE_VCPU");
	int size = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (size <= 0)
		return fail("KVM_GET_VCPU_MMAP_SIZE");
	struct kvm_run *run = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0);
	if (run == MAP_FAILED)
		return fail("mmap kvm_run");
	struct kvm_sregs sregs;
	if (ioctl(vcpu, KVM_GET_SREGS, &sregs) < 0)
		return fail("KVM_GET_SREGS");
	sregs.cs.base = 0;
	sregs.cs.selector = 0;
	if (ioctl(vcpu, KVM_SET_SREGS, &sregs) < 0)
		return fail("KVM_SET_SREGS");
	struct kvm_regs regs = {.rip = 0x1000, .rcx = n + 1, .rflags = 2};
	if (ioctl(vcpu, KVM_SET_REGS, &regs) < 0)
		return fail("KVM_SET_REGS");

	long outs = 0;
	double t0 = 0;
	for (;;) {
		if (ioctl(vcpu, KVM_RUN, 0) < 0)
			return fail("KVM_RUN");
		if (run->exit_reason == KVM_EXIT_HLT)
			break;
		if (run->exit_reason != KVM_EXIT_IO || run->io.direction != KVM_EXIT_IO_OUT ||
		    run->io.port != 0x10 || *((unsigned char *)run + run->io.data_offset) != 0x2a) {
			fprintf(
			    stderr, "kvm_smoke: FAILED: unexpected exit reason %u (port 0x%x)\n",
			    run->exit_reason, run->exit_reason == KVM_EXIT_IO ? run->io.port : 0);
			return 1;
		}
		if (outs++ == 0)
			t0 = now();
	}
	if (outs != n + 1) {
		fprintf(stderr, "kvm_smoke: FAILED: %ld out exits, expected %ld\n", outs, n + 1);
		return 1;
	}
	if (n > 0)
		printf("kvm_smoke: %ld exits, %.1f us per exit + re-entry\n", n,
		       (now() - t0) / n * 1e6);
	else
		printf("kvm_smoke: ok (KVM_EXIT_IO then KVM_EXIT_HLT)\n");
	return 0;
}
