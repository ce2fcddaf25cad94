/* The host process's sandbox: a seccomp allow-list installed after set-up (docs/security.md). */
#ifndef EMBER_CLI_SANDBOX_H
#define EMBER_CLI_SANDBOX_H

#include <seccomp.h>
#include <stddef.h>
#include <stdint.h>

/* what the process is: the groups of calls it may make */
enum {
	SBX_BASE = 1,	/* every ember process: files, memory, threads, signals, time */
	SBX_KVM = 2,	/* the KVM backend's ioctls */
	SBX_PTRACE = 4, /* the ptrace backend: starting and driving the stub */
	SBX_SERVER = 8, /* HTTP: connections */
	SBX_ASAN = 16,	/* AddressSanitizer's run-time, in `make asan` binaries only */
};

struct sbx_call {
	const char *name;
	unsigned groups;
};
struct sbx_arg {
	const char *name;
	unsigned groups;
	unsigned arg;
	enum scmp_compare op;
	uint64_t a, b; /* as SCMP_CMP takes them: the value, or the mask and the value */
};
struct sbx_errno {
	const char *name;
	unsigned groups;
	int err;
	int arg; /* -1: every such call; else only when argument arg equals value */
	uint64_t value;
};
/* sandbox_list.c: the tables, each ended by a NULL name */
extern const struct sbx_call sbx_calls[];
extern const struct sbx_arg sbx_args[];
extern const struct sbx_errno sbx_errnos[];

/* the groups for a machine backend ("kvm", "ptrace", "auto"; NULL = $EMBER_BACKEND, else kvm),
 * SBX_BASE and, in a sanitizer build, SBX_ASAN included */
unsigned sbx_groups(const char *backend);
/* Installs the filter on every thread of the process, for good: a call outside the groups
 * writes "ember: sandbox: forbidden system call N (NAME) ..." to stderr and kills the process
 * with SIGSYS. -1 with a reason when it cannot be installed. */
int sbx_install(unsigned groups, char *err, size_t errlen);
/* fn (async-signal-safe) runs in that handler first: ember serve writes its buffered log */
void sbx_on_kill(void (*fn)(void));

#endif
