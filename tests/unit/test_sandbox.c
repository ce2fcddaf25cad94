/* The host process's sandbox (src/cli/sandbox.c), installed in forked children: a forbidden call
 * kills the process with SIGSYS and a line naming it; namespaces, attaching with ptrace and
 * taking over SIGSYS are forbidden; clone3 says ENOSYS and threads still start; a Unix or
 * netlink socket says EACCES; a filter without the ptrace group stops ptrace; a function still
 * loads and runs inside the sandbox on the backend under test (EMBER_BACKEND, default auto; guests
 * from EMBER_GUEST_DIR). These forbidden calls are this test's own: no release binary has a way to
 * make them on purpose. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/sandbox.h"
#include "ember/ember.h"

/* every group ember serve --backend auto has (and a sanitizer build's run-time) */
#define ALL (sbx_groups("auto") | SBX_SERVER)

/* runs fn in a child under the filter of groups; its status, its stderr in log */
static int in_sandbox(unsigned groups, int (*fn)(void), char *log, size_t loglen)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(p[1], 2);
		close(p[0]);
		char err[256];
		if (sbx_install(groups, err, sizeof(err))) {
			fprintf(stderr, "install: %s\n", err);
			_exit(99);
		}
		_exit(fn());
	}
	close(p[1]);
	size_t n = 0;
	ssize_t r;
	while (n + 1 < loglen && (r = read(p[0], log + n, loglen - 1 - n)) > 0)
		n += (size_t)r;
	log[n] = 0;
	close(p[0]);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return st;
}

/* each returns only when the call was let through */
static int call_mount(void)
{
	(void)mount("none", "/nonexistent", "tmpfs", 0, NULL);
	return 0;
}
static int call_bpf(void)
{
	(void)syscall(SYS_bpf, -1, NULL, 0);
	return 0;
}
static int call_open_by_handle(void)
{
	(void)syscall(SYS_open_by_handle_at, -1, NULL, 0);
	return 0;
}
static int call_unshare(void)
{
	(void)unshare(CLONE_NEWUSER);
	return 0;
}
static int call_clone_newns(void)
{
	/* a raw clone that would start a child in a new user namespace */
	long r = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, 0);
	if (r == 0)
		_exit(0);
	return 0;
}
static int call_sigsys_handler(void)
{
	struct sigaction sa = {.sa_handler = SIG_IGN};
	(void)sigaction(SIGSYS, &sa, NULL);
	return 0;
}
static int call_x32(void)
{
	(void)syscall(0x40000000 | SYS_getpid);
	return 0;
}
static int call_int80(void)
{
	long r;
	__asm__ volatile("int $0x80" : "=a"(r) : "a"(20L /* i386 getpid */) : "memory");
	(void)r;
	return 0;
}
static int call_socket_packet(void)
{
	(void)socket(AF_PACKET, SOCK_RAW, 0);
	return 0;
}
static int call_ioctl_tiocsti(void)
{
	char c = 'x';
	(void)ioctl(-1, TIOCSTI, &c);
	return 0;
}
static int call_prctl_timerslack(void)
{
	(void)prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0);
	return 0;
}
#if !defined(__SANITIZE_ADDRESS__)
static int call_ptrace_attach(void)
{
	(void)ptrace(PTRACE_ATTACH, getpid(), 0, 0);
	return 0; /* EPERM if let through */
}
static int call_ptrace_traceme(void)
{
	(void)ptrace(PTRACE_TRACEME, 0, 0, 0);
	return 0;
}
#endif

static const struct {
	const char *name;
	int (*fn)(void);
	int kvm_only; /* 1: the groups of ember serve --backend kvm, no ptrace group */
} forbidden[] = {
    {"mount", call_mount, 0},
    {"bpf", call_bpf, 0},
    {"open_by_handle_at", call_open_by_handle, 0},
    {"unshare", call_unshare, 0},
    {"clone", call_clone_newns, 0},
    {"rt_sigaction", call_sigsys_handler, 0},
    {"ioctl", call_ioctl_tiocsti, 0},
    {"socket", call_socket_packet, 0},
    {"x32 ABI", call_x32, 0},
    {"i386 ABI", call_int80, 0},
    {"prctl", call_prctl_timerslack, 0},
#if !defined(__SANITIZE_ADDRESS__) /* LeakSanitizer attaches to the threads: any request */
    {"ptrace", call_ptrace_attach, 0},
    {"ptrace", call_ptrace_traceme, 1},
#endif
};

static void forbidden_calls_kill(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(forbidden) / sizeof(forbidden[0]); i++) {
		char log[1024], want[128];
		unsigned groups = forbidden[i].kvm_only ? sbx_groups("kvm") | SBX_SERVER : ALL;
		int st = in_sandbox(groups, forbidden[i].fn, log, sizeof(log));
		if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSYS)
			fail_msg("%s: status %#x, not killed by SIGSYS; stderr: %s",
				 forbidden[i].name, st, log);
		int nr = seccomp_syscall_resolve_name(forbidden[i].name);
		if (nr == __NR_SCMP_ERROR) /* another ABI: the line names it, not the call */
			snprintf(want, sizeof(want), "(%s) at 0x", forbidden[i].name);
		else
			snprintf(want, sizeof(want),
				 "ember: sandbox: forbidden system call %d (%s) at 0x", nr,
				 forbidden[i].name);
		if (!strstr(log, want))
			fail_msg("%s: no '%s' on stderr: '%s'", forbidden[i].name, want, log);
	}
}

/* a Unix or netlink socket is answered EACCES; an IP one is made */
static int sockets_answered(void)
{
	if (socket(AF_UNIX, SOCK_STREAM, 0) != -1 || errno != EACCES)
		return 1;
	if (socket(AF_NETLINK, SOCK_RAW, 0) != -1 || errno != EACCES)
		return 2;
	return socket(AF_INET, SOCK_DGRAM, 0) < 0 ? 3 : 0;
}

static void unix_sockets_refused(void **state)
{
	(void)state;
	char log[1024];
	int st = in_sandbox(ALL, sockets_answered, log, sizeof(log));
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("status %#x; stderr: %s", st, log);
}

static void *thread_fn(void *p)
{
	return p;
}

static int threads_without_clone3(void)
{
	if (syscall(SYS_clone3, NULL, 0) != -1 || errno != ENOSYS)
		return 1;
	static int mark;
	pthread_t t;
	void *r = NULL;
	if (pthread_create(&t, NULL, thread_fn, &mark) || pthread_join(t, &r) || r != &mark)
		return 2;
	return 0;
}

static void clone3_says_enosys(void **state)
{
	(void)state;
	char log[1024];
	int st = in_sandbox(ALL, threads_without_clone3, log, sizeof(log));
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("status %#x; stderr: %s", st, log);
}

/* a function loaded and run three times, as ember run does, inside the sandbox */
static int run_hello(void)
{
	const char *dir = getenv("EMBER_GUEST_DIR"), *backend = getenv("EMBER_BACKEND");
	char path[4096], err[256];
	snprintf(path, sizeof(path), "%s/hello.musl", dir && *dir ? dir : "build/guest");
	struct ember_config cfg = {.image = path,
				   .backend = backend && *backend ? backend : "auto"};
	struct ember_function *fn;
	if (ember_load(&cfg, &fn, err, sizeof(err))) {
		fprintf(stderr, "ember_load: %s\n", err);
		return 1;
	}
	int bad = 0;
	for (int i = 0; i < 3; i++) {
		struct ember_result res;
		ember_invoke(fn, "sandbox", 7, &res);
		bad |= res.outcome != EMBER_OK || res.out_len != 16 ||
		       memcmp(res.out, "Hello, sandbox!\n", 16);
		ember_result_free(&res);
	}
	ember_unload(fn);
	return bad ? 2 : 0;
}

static void a_function_runs_inside(void **state)
{
	(void)state;
	char log[4096];
	const char *backend = getenv("EMBER_BACKEND");
	int st = in_sandbox(sbx_groups(backend && *backend ? backend : "auto"), run_hello, log,
			    sizeof(log));
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("status %#x; stderr: %s", st, log);
}

static void groups_follow_the_backend(void **state)
{
	(void)state;
	assert_int_equal(sbx_groups("kvm") & (SBX_KVM | SBX_PTRACE), SBX_KVM);
	assert_int_equal(sbx_groups("ptrace") & (SBX_KVM | SBX_PTRACE), SBX_PTRACE);
	assert_int_equal(sbx_groups("auto") & (SBX_KVM | SBX_PTRACE), SBX_KVM | SBX_PTRACE);
	assert_true(sbx_groups("kvm") & SBX_BASE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(forbidden_calls_kill),	 cmocka_unit_test(clone3_says_enosys),
	    cmocka_unit_test(unix_sockets_refused),	 cmocka_unit_test(a_function_runs_inside),
	    cmocka_unit_test(groups_follow_the_backend),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
