/* A snapshot laid out at its guest addresses in one sealed memfd (its image): a machine maps it
 * over its guest memory with one mapping, copy-on-write, instead of a mapping per run. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "snap/snap.h"

#define PAGE EMBER_PAGE_SIZE

static int zero_page(const uint8_t *p)
{
	static const uint8_t zero[PAGE];
	return !memcmp(p, zero, PAGE);
}

struct host_copy {
	struct vm *vm;
	int fd;
};

static int copy_page(void *ctx, uint64_t addr)
{
	struct host_copy *c = ctx;
	uint8_t page[PAGE];
	if (vm_copy_from(c->vm, page, addr, PAGE))
		return -EFAULT;
	return zero_page(page) ? 0 : base_pwrite_all(c->fd, page, PAGE, (off_t)addr);
}

/* the host's own structures of vm (descriptor tables, CPL0 code and stacks: data outside the
 * program's memory, below user_top) into the image at their places */
static int copy_host(int fd, struct vm *vm, const struct sys_saved *sys)
{
	struct host_copy c = {vm, fd};
	uint64_t a = 0;
	int rc = 0;
	for (size_t i = 0; i <= sys->nvma && !rc; i++) {
		uint64_t end = i < sys->nvma ? sys->vmas[i].start : vm_user_top(vm);
		if (end > a)
			rc = snap_each_data(vm, a, end, copy_page, &c);
		if (i < sys->nvma && sys->vmas[i].end > a)
			a = sys->vmas[i].end;
	}
	return rc;
}

/* The snapshot's own sealed copy of its pages (not a page store's) goes: the image holds each of
 * them at its guest address (a page of zeros as a hole, which reads the same), so the snapshot
 * reads and maps them there, as from a store. Node.js's 97 MB were held twice. Kept as it is
 * when anything fails. */
static void data_from_image(struct snap *s)
{
	if (!s->sealed || s->store_fd || s->offs || s->overlay)
		return;
	uint64_t *offs = malloc(s->npages * sizeof(*offs));
	int fd = offs ? fcntl(s->image_fd, F_DUPFD_CLOEXEC, 0) : -1;
	uint8_t *view = fd >= 0 ? snap_view(fd, s->pages, s->npages) : NULL;
	if (!view) {
		free(offs);
		if (fd >= 0)
			close(fd);
		return;
	}
	memcpy(offs, s->pages, s->npages * sizeof(*offs));
	snap_data_free(s);
	s->data = view;
	s->offs = offs;
	s->memfd = fd;
	s->sealed = 1;
}

int snap_image_build(struct snap *s, struct vm *vm)
{
	if (s->has_image || !s->npages || !s->data || vm_backend_of(vm) != VM_BACKEND_KVM)
		return 0;
	int fd = memfd_create("ember-image", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	int rc = ftruncate(fd, (off_t)vm_user_top(vm)) ? -errno : copy_host(fd, vm, &s->sys);
	for (size_t i = 0; !rc && i < s->npages; i++) {
		const uint8_t *p = s->data + i * PAGE;
		if (s->pages[i] >= vm_user_top(vm))
			rc = -EINVAL;
		else if (!(s->overlay && s->overlay[i]) && !zero_page(p))
			rc = base_pwrite_all(fd, p, PAGE, (off_t)s->pages[i]);
	}
	if (!rc && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL))
		rc = -errno;
	if (rc) {
		close(fd);
		return rc;
	}
	s->image_fd = fd;
	s->has_image = 1;
	data_from_image(s);
	return 0;
}

void snap_image_free(struct snap *s)
{
	if (s->has_image)
		close(s->image_fd);
	free(s->overlay);
	s->overlay = NULL;
	s->has_image = 0;
}

int snap_image_map(const struct snap *s, struct vm *vm, int keep_memfd)
{
	if (!s->has_image)
		return -EOPNOTSUPP;
	int rc = vm_map_image(vm, s->image_fd, keep_memfd);
	if (rc)
		return rc;
	/* the long runs other holders share too, from the page store over it */
	for (size_t i = 0; i < s->npages; i++) {
		if (!s->overlay || !s->overlay[i])
			continue;
		size_t n = 1;
		while (i + n < s->npages && s->overlay[i + n] &&
		       s->pages[i + n] == s->pages[i] + n * PAGE &&
		       s->offs[i + n] == s->offs[i] + n * PAGE)
			n++;
		if (vm_map_cow(vm, s->pages[i], n * PAGE, s->memfd, s->offs[i]))
			vm_copy_to(vm, s->pages[i], s->data + i * PAGE, n * PAGE);
		i += n - 1;
	}
	return 0;
}
