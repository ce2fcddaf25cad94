/* A snapshot's memory held once, in a sealed memfd, and mapped into machines in one of the sharing
 * modes. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "snap/snap.h"

#define PAGE EMBER_PAGE_SIZE

static const struct {
	const char *name;
	enum snap_share mode;
} shares[] = {
    {"upm", SNAP_SHARE_UPM},
    {"off", SNAP_SHARE_OFF},
    {"ksm", SNAP_SHARE_KSM},
};

int snap_share_parse(const char *s, enum snap_share *out)
{
	for (size_t i = 0; i < sizeof(shares) / sizeof(shares[0]); i++)
		if (strcmp(shares[i].name, s) == 0)
			return *out = shares[i].mode, 0;
	return -1;
}

const char *snap_share_name(enum snap_share m)
{
	for (size_t i = 0; i < sizeof(shares) / sizeof(shares[0]); i++)
		if (shares[i].mode == m)
			return shares[i].name;
	return "?";
}

int snap_seal(struct snap *s)
{
	if (s->sealed || !s->npages || !s->data)
		return 0;
	size_t len = s->npages * PAGE;
	int fd = memfd_create("ember-snapshot", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	int rc = base_pwrite_all(fd, s->data, len, 0);
	if (!rc && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL))
		rc = -errno;
	void *m = rc ? MAP_FAILED : mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (!rc && m == MAP_FAILED)
		rc = -errno;
	if (rc) {
		close(fd);
		return rc;
	}
	free(s->data);
	s->data = m;
	s->memfd = fd;
	s->sealed = 1;
	return 0;
}

uint8_t *snap_view(int fd, const uint64_t *offs, size_t n)
{
	uint8_t *v =
	    mmap(NULL, n * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (v == MAP_FAILED)
		return NULL;
	for (size_t i = 0, k; i < n; i += k) {
		for (k = 1; i + k < n && offs[i + k] == offs[i] + k * PAGE; k++)
			;
		if (mmap(v + i * PAGE, k * PAGE, PROT_READ, MAP_SHARED | MAP_FIXED, fd,
			 (off_t)offs[i]) == MAP_FAILED) {
			munmap(v, n * PAGE);
			return NULL;
		}
	}
	return v;
}

void snap_data_free(struct snap *s)
{
	if (s->sealed) {
		munmap(s->data, s->npages * PAGE);
		if (!s->store_fd)
			close(s->memfd);
	} else {
		free(s->data);
	}
	free(s->offs);
	s->offs = NULL;
	s->data = NULL;
	s->sealed = s->store_fd = 0;
}

static uint64_t off_of(const struct snap *s, size_t i)
{
	return s->offs ? s->offs[i] : i * PAGE;
}

/* the run of snapshot pages from index i consecutive in the guest and in the file: its length */
static size_t run_at(const struct snap *s, size_t i, uint64_t end)
{
	size_t n = 1;
	while (i + n < s->npages && s->pages[i + n] == s->pages[i] + n * PAGE &&
	       s->pages[i + n] < end && off_of(s, i + n) == off_of(s, i) + n * PAGE)
		n++;
	return n;
}

/* one run into the machine: mapped from the sealed memfd (upm), or copied into private
 * anonymous memory (ksm) or into the machine's own memfd (off, and wherever a mapping fails:
 * the ptrace backend, a full map count) */
static void put_run(const struct snap *s, struct vm *vm, size_t i, size_t n, enum snap_share m)
{
	uint64_t addr = s->pages[i], len = n * PAGE;
	if (m == SNAP_SHARE_UPM && s->sealed && !vm_map_cow(vm, addr, len, s->memfd, off_of(s, i)))
		return;
	if (m == SNAP_SHARE_KSM)
		vm_map_cow(vm, addr, len, -1, 0);
	vm_copy_to(vm, addr, s->data + i * PAGE, len);
}

int snap_put_memory(const struct snap *s, struct vm *vm, uint64_t start, uint64_t end,
		    enum snap_share m)
{
	for (size_t i = snap_page_index(s, start); i < s->npages && s->pages[i] < end;) {
		size_t n = run_at(s, i, end);
		put_run(s, vm, i, n, m);
		i += n;
	}
	return 0;
}

int snap_adopt(const struct snap *s, struct vm *vm, enum snap_share m)
{
	if (m != SNAP_SHARE_UPM || !s->sealed)
		return 0;
	if (s->has_image) {
		int rc = snap_image_map(s, vm, 0);
		if (rc != -EOPNOTSUPP) {
			if (!rc)
				vm_forget_written(vm);
			return rc;
		}
	}
	for (size_t i = 0; i < s->npages;) {
		size_t n = run_at(s, i, UINT64_MAX);
		int rc = vm_map_cow(vm, s->pages[i], n * PAGE, s->memfd, off_of(s, i));
		if (rc == -EOPNOTSUPP)
			return 0;
		if (rc)
			return rc;
		i += n;
	}
	vm_forget_written(vm);
	return 0;
}
