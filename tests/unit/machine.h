/* For unit tests that make machines: one of 16 MiB on the backend EMBER_BACKEND names (KVM by
 * default). */
#ifndef EMBER_TEST_MACHINE_H
#define EMBER_TEST_MACHINE_H

#include <stdlib.h>
#include <string.h>

#include "vm/vm.h"

static inline struct vm *test_machine(void)
{
	struct vm_config cfg = {.mem_size = 16ULL << 20, .backend = VM_BACKEND_KVM};
	const char *b = getenv("EMBER_BACKEND");
	if (b && !strcmp(b, "ptrace"))
		cfg.backend = VM_BACKEND_PTRACE;
	struct vm *vm = NULL;
	char err[200];
	if (vm_create(&cfg, &vm, err, sizeof(err)))
		fail_msg("vm_create: %s", err);
	return vm;
}

#endif
