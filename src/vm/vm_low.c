/* Whether a backend's machines can give the program page 0 (the in-guest runtime's sled). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vm/vm.h"

#define CAP_SYS_RAWIO 17

/* the first line of path that starts with key, its rest in buf; 0 when found */
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

/* A ptrace stub is this process's child and maps guest memory from address 0, which Linux
 * allows below vm.mmap_min_addr only with CAP_SYS_RAWIO (root has it; `ember serve --user`
 * gives it up). */
static int ptrace_low_ok(void)
{
	char v[64];
	if (!read_field("/proc/sys/vm/mmap_min_addr", "", v, sizeof(v)) &&
	    strtoull(v, NULL, 10) == 0)
		return 1;
	if (read_field("/proc/self/status", "CapEff:", v, sizeof(v)))
		return 0;
	return (strtoull(v, NULL, 16) >> CAP_SYS_RAWIO) & 1;
}

int vm_low_ok(enum vm_backend b)
{
	if (b == VM_BACKEND_KVM)
		return 1; /* the guest's own page tables */
	if (b == VM_BACKEND_AUTO) {
		int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
		if (fd >= 0) {
			close(fd);
			return 1;
		}
	}
	return ptrace_low_ok();
}
