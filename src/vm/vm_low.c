/* Whether a backend's machines can give the program page 0 (the in-guest runtime's sled). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vm/vm.h"

/* the rest of the first line of path that starts with key, in buf; 0 when found */
static int read_field(const char *path, const char *key, char *buf, size_t len)
{
	char text[4096];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	text[n] = 0;
	size_t k = strlen(key);
	for (char *line = text; line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		if (strncmp(line, key, k))
			continue;
		snprintf(buf, len, "%.*s", (int)strcspn(line + k, "\n"), line + k);
		return 0;
	}
	return -1;
}

/* A ptrace stub is this process's child, started from a memfd, and maps guest memory from
 * address 0. Linux lets a process map below vm.mmap_min_addr with CAP_SYS_RAWIO in the first user
 * namespace (root has it, `ember serve --user` gave it up, a user namespace's root has it only
 * there); a capability of the ember file does not follow into the stub. So: this process can map
 * page 0 itself (a PROT_NONE probe, which a null pointer still faults on, gone at once), and it
 * is root or the minimum is 0. */
static int ptrace_low_ok(void)
{
	void *p =
	    mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p == MAP_FAILED)
		return 0;
	munmap(p, 4096);
	if (p != NULL)
		return 0;
	char v[64];
	if (!read_field("/proc/sys/vm/mmap_min_addr", "", v, sizeof(v)) &&
	    strtoull(v, NULL, 10) == 0)
		return 1;
	/* Uid: real, effective, saved, fs */
	unsigned long uid[2];
	return !read_field("/proc/self/status", "Uid:", v, sizeof(v)) &&
	       sscanf(v, "%lu %lu", &uid[0], &uid[1]) == 2 && uid[1] == 0;
}

int vm_low_ok(enum vm_backend b)
{
	if (b == VM_BACKEND_KVM)
		return 1; /* the guest's own page tables */
	/* auto takes KVM where /dev/kvm opens: the descriptor kept from the start, root's (--user)
	 */
	if (b == VM_BACKEND_AUTO && vm_dev_kvm() >= 0)
		return 1;
	return ptrace_low_ok();
}
