/* Installing the sandbox: the allow-list as a seccomp filter, and the SIGSYS handler that names
 * a forbidden call before the process dies of it. */
#include <errno.h>
#include <linux/audit.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/sandbox.h"

#define NAMES 512 /* every x86-64 system call number so far */

/* the names, looked up before: the handler may only make async-signal-safe calls */
static char names[NAMES][24];
static void (*before_kill)(void);

void sbx_on_kill(void (*fn)(void))
{
	before_kill = fn;
}

unsigned sbx_groups(const char *backend)
{
	unsigned g = SBX_BASE;
#if defined(__SANITIZE_ADDRESS__)
	g |= SBX_ASAN;
#endif
	if (!backend || !backend[0])
		backend = getenv("EMBER_BACKEND");
	if (!backend || !backend[0] || !strcmp(backend, "kvm"))
		return g | SBX_KVM;
	if (!strcmp(backend, "ptrace"))
		return g | SBX_PTRACE;
	return g | SBX_KVM | SBX_PTRACE; /* auto, and anything the backend will refuse itself */
}

static size_t put(char *buf, size_t at, const char *s)
{
	while (*s && at < 255)
		buf[at++] = *s++;
	return at;
}

static size_t put_num(char *buf, size_t at, unsigned long v, unsigned base)
{
	char d[24];
	int n = 0;
	do
		d[n++] = "0123456789abcdef"[v % base];
	while ((v /= base) && n < 24);
	while (n && at < 255)
		buf[at++] = d[--n];
	return at;
}

/* SA_RESETHAND has put SIGSYS back to its default: the kill ends the process (a core where
 * the system keeps them), the same for every thread */
static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (before_kill)
		before_kill();
	char buf[256];
	size_t n = put(buf, 0, "ember: sandbox: forbidden system call ");
	unsigned nr = (unsigned)si->si_syscall;
	n = put_num(buf, n, nr, 10);
	n = put(buf, n, " (");
	/* the names are x86-64's: a call of another ABI says which instead */
	const char *name = si->si_arch != AUDIT_ARCH_X86_64 ? "i386 ABI"
			   : nr & 0x40000000		    ? "x32 ABI"
			   : nr < NAMES && names[nr][0]	    ? names[nr]
							    : "?";
	n = put(buf, n, name);
	n = put(buf, n, ") at 0x");
	n = put_num(buf, n, (unsigned long)si->si_call_addr, 16);
	n = put(buf, n, ": killing the process\n");
	ssize_t w = write(2, buf, n);
	(void)w;
	kill(getpid(), sig);
}

static void learn_names(void)
{
	for (int nr = 0; nr < NAMES; nr++) {
		char *s = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
		if (s)
			snprintf(names[nr], sizeof(names[nr]), "%s", s);
		free(s);
	}
}

static int rule(scmp_filter_ctx ctx, uint32_t action, const char *name, unsigned ncmp,
		const struct scmp_arg_cmp *cmp, char *err, size_t errlen)
{
	int nr = seccomp_syscall_resolve_name(name);
	if (nr == __NR_SCMP_ERROR)
		return snprintf(err, errlen, "sandbox: libseccomp does not know %s", name), -1;
	int rc = seccomp_rule_add_array(ctx, action, nr, ncmp, cmp);
	if (rc && rc != -EEXIST)
		return snprintf(err, errlen, "sandbox: %s: %s", name, strerror(-rc)), -1;
	return 0;
}

static int add_rules(scmp_filter_ctx ctx, unsigned groups, char *err, size_t errlen)
{
	for (const struct sbx_call *c = sbx_calls; c->name; c++)
		if ((c->groups & groups) &&
		    rule(ctx, SCMP_ACT_ALLOW, c->name, 0, NULL, err, errlen))
			return -1;
	for (const struct sbx_arg *a = sbx_args; a->name; a++) {
		struct scmp_arg_cmp cmp = {
		    .arg = a->arg, .op = a->op, .datum_a = a->a, .datum_b = a->b};
		if ((a->groups & groups) &&
		    rule(ctx, SCMP_ACT_ALLOW, a->name, 1, &cmp, err, errlen))
			return -1;
	}
	for (const struct sbx_errno *e = sbx_errnos; e->name; e++) {
		struct scmp_arg_cmp cmp = {
		    .arg = (unsigned)e->arg, .op = SCMP_CMP_EQ, .datum_a = e->value};
		if ((e->groups & groups) && rule(ctx, SCMP_ACT_ERRNO((uint32_t)e->err), e->name,
						 e->arg >= 0, &cmp, err, errlen))
			return -1;
	}
	return 0;
}

int sbx_install(unsigned groups, char *err, size_t errlen)
{
	/* TRAP, not KILL_PROCESS: the handler names the call, and the ptrace backend's stub, which
	 * inherits this filter, must still trap its guest's calls to the host (docs/security.md) */
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_TRAP);
	if (!ctx)
		return snprintf(err, errlen, "sandbox: cannot start a seccomp filter"), -1;
	int rc = -1;
	if (seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_TRAP) ||
	    seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1)) {
		snprintf(err, errlen, "sandbox: this libseccomp cannot synchronise threads");
		goto out;
	}
	if (add_rules(ctx, groups, err, errlen))
		goto out;
	learn_names();
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSYS, &sa, NULL)) {
		snprintf(err, errlen, "sandbox: SIGSYS handler: %s", strerror(errno));
		goto out;
	}
	int lrc = seccomp_load(ctx);
	if (lrc) {
		snprintf(err, errlen, "sandbox: installing the seccomp filter: %s", strerror(-lrc));
		goto out;
	}
	rc = 0;
out:
	seccomp_release(ctx);
	return rc;
}
