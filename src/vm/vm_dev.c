/* The devices a process opens once and keeps: /dev/kvm and /dev/userfaultfd, so that machines
 * and cold starts still work after the process gives up root (ember serve --user). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "vm/vm.h"
#include "vm/vm_ptrace.h"

static pthread_mutex_t dev_mu = PTHREAD_MUTEX_INITIALIZER;
static int kvm_fd = -1, uffd_dev = -1;

/* the fd of path, opened at the first call that succeeds and kept for the process */
static int keep_open(int *fd, const char *path)
{
	pthread_mutex_lock(&dev_mu);
	if (*fd < 0)
		*fd = open(path, O_RDWR | O_CLOEXEC);
	int rc = *fd >= 0 ? *fd : -errno;
	pthread_mutex_unlock(&dev_mu);
	return rc;
}

int vm_dev_kvm(void)
{
	return keep_open(&kvm_fd, "/dev/kvm");
}

void vm_dev_open(void)
{
	vm_dev_kvm();
	keep_open(&uffd_dev, "/dev/userfaultfd");
}

void vm_dev_prepare(void)
{
	char err[EMBER_ERR_MAX];
	vm_dev_open();
	pt_setup(err, sizeof(err)); /* where it cannot be made, no ptrace machine will be */
}

/* The syscall needs root (or vm.unprivileged_userfaultfd) to see the faults the kernel takes on
 * our behalf (KVM's, a read(2) into guest memory); /dev/userfaultfd, opened while we were root,
 * makes the same kind of descriptor for whoever holds it. */
int vm_uffd_new(void)
{
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (fd >= 0 || errno != EPERM)
		return fd;
	pthread_mutex_lock(&dev_mu);
	int dev = uffd_dev;
	pthread_mutex_unlock(&dev_mu);
	if (dev < 0)
		return errno = EPERM, -1;
	return ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC | O_NONBLOCK);
}
