/* MAP_SHARED anonymous memory (and /dev/zero's): one memfd's pages in a process and its forks. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sys/sys.h"

/* A fork child is a virtine of its own whose memory is a copy of its parent's: a shared
 * mapping is the one thing it must not copy. Such a mapping is a memfd's pages mapped into
 * guest memory (vm_map_shared, KVM only), and a child maps the same pages at the same place.
 * Each process holds its own descriptor of the memfd; the pages go with the last mapping. The
 * machine treats the run as a file's: munmap, a mapping over it and the reset put private
 * memory in its place, so nothing of it outlives the invocation, and a snapshot holds a copy
 * (a mapping made by init is private from the first reset on). On ptrace the memory is the
 * process's own, private, as before. */

static int add(struct sys_state *st, uint64_t start, uint64_t end, uint64_t off, int fd)
{
	if (st->nshmem == st->shmem_cap) {
		size_t cap = st->shmem_cap ? st->shmem_cap * 2 : 8;
		struct sys_shmem *s = realloc(st->shmem, cap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		st->shmem = s;
		st->shmem_cap = cap;
	}
	st->shmem[st->nshmem++] = (struct sys_shmem){start, end, off, fd};
	return 0;
}

int sys_shmem_map(struct sys_state *st, uint64_t addr, uint64_t len)
{
	if (vm_backend_of(st->vm) != VM_BACKEND_KVM)
		return 0; /* private memory: the ptrace stub maps guest memory from one memfd */
	int fd = memfd_create("ember-shared", MFD_CLOEXEC);
	if (fd < 0)
		return -ENOMEM;
	int rc = ftruncate(fd, (off_t)len) ? -ENOMEM : vm_map_shared(st->vm, addr, len, fd, 0);
	if (!rc)
		rc = add(st, addr, addr + len, 0, fd);
	if (rc) {
		close(fd);
		sys_shmem_cut(st, addr, addr + len);
		vm_discard(st->vm, addr, len); /* private zero memory again */
		/* over the budget of runs, or a machine that cannot: private */
		return rc == -ENOSPC || rc == -EOPNOTSUPP ? 0 : -ENOMEM;
	}
	return 0;
}

void sys_shmem_cut(struct sys_state *st, uint64_t lo, uint64_t hi)
{
	for (size_t i = 0; i < st->nshmem;) {
		struct sys_shmem *s = &st->shmem[i];
		if (s->start >= hi || s->end <= lo) {
			i++;
			continue;
		}
		if (s->start < lo && s->end > hi) { /* the middle goes: two remain */
			int fd = fcntl(s->fd, F_DUPFD_CLOEXEC, 0);
			struct sys_shmem right = {hi, s->end, s->off + (hi - s->start), fd};
			s->end = lo;
			if (right.fd >= 0 && add(st, right.start, right.end, right.off, right.fd))
				close(right.fd);
			i++;
			continue;
		}
		if (s->start < lo) {
			s->end = lo;
		} else if (s->end > hi) {
			s->off += hi - s->start;
			s->start = hi;
		} else {
			close(s->fd);
			*s = st->shmem[--st->nshmem];
			continue;
		}
		i++;
	}
}

int sys_shmem_covers(const struct sys_state *st, uint64_t addr)
{
	for (size_t i = 0; i < st->nshmem; i++)
		if (st->shmem[i].start <= addr && addr < st->shmem[i].end)
			return 1;
	return 0;
}

int sys_shmem_inherit(struct sys_state *to, const struct sys_state *from)
{
	for (size_t i = 0; i < from->nshmem; i++) {
		const struct sys_shmem *s = &from->shmem[i];
		int fd = fcntl(s->fd, F_DUPFD_CLOEXEC, 0);
		if (fd < 0)
			return -ENOMEM;
		if (add(to, s->start, s->end, s->off, fd)) {
			close(fd);
			return -ENOMEM;
		}
	}
	return 0;
}

int sys_shmem_remap(struct sys_state *st)
{
	for (size_t i = 0; i < st->nshmem; i++) {
		const struct sys_shmem *s = &st->shmem[i];
		int rc = vm_map_shared(st->vm, s->start, s->end - s->start, s->fd, s->off);
		if (rc)
			return rc;
	}
	return 0;
}

void sys_shmem_free(struct sys_state *st)
{
	for (size_t i = 0; i < st->nshmem; i++)
		close(st->shmem[i].fd);
	free(st->shmem);
	st->shmem = NULL;
	st->nshmem = st->shmem_cap = 0;
}
