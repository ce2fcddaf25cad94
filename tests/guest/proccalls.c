/* Process and thread calls as Linux answers them, each case checking itself: futex counts and
 * kinds, robust and priority-inheriting locks, and the calls of tests/integration/
 * test_proccalls.sh. Prints "NAME ok" per case passed, else what differed; exit 1 if any did. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "caseout.h"

/* linux/futex.h's, which musl-gcc does not see */
#define FUTEX_WAIT	   0
#define FUTEX_WAKE	   1
#define FUTEX_LOCK_PI	   6
#define FUTEX_UNLOCK_PI	   7
#define FUTEX_TRYLOCK_PI   8
#define FUTEX_PRIVATE_FLAG 128


static long futex(void *addr, int op, long val, void *ts, void *addr2, long val3)
{
	return syscall(SYS_futex, addr, op, val, ts, addr2, val3);
}

static void nap_ms(long ms)
{
	struct timespec ts = {0, ms * 1000000L};
	nanosleep(&ts, NULL);
}

/* a waiter on word with op (FUTEX_WAIT, private or not), for up to 2 s */
struct waiter {
	int word, op;
	long rc;
};

static void *wait_on(void *p)
{
	struct waiter *w = p;
	struct timespec ts = {2, 0};
	w->rc = futex(&w->word, w->op, 1, &ts, NULL, 0);
	return NULL;
}

/* a wake with a count of 0 wakes one, as Linux's; a private wake never wakes a shared waiter,
 * nor a shared one a private waiter */
static int case_futex(void)
{
	for (int priv = 0; priv < 2; priv++) {
		int flag = priv ? FUTEX_PRIVATE_FLAG : 0;
		struct waiter w = {1, FUTEX_WAIT | flag, -1};
		pthread_t th;
		pthread_create(&th, NULL, wait_on, &w);
		long r = 0;
		for (int i = 0; i < 1000 && r == 0; i++) {
			nap_ms(1);
			if (futex(&w.word, FUTEX_WAKE | (flag ^ FUTEX_PRIVATE_FLAG), 1, NULL, NULL,
				  0) != 0)
				bad("futex", "a wake of the other kind woke a waiter");
			r = futex(&w.word, FUTEX_WAKE | flag, 0, NULL, NULL, 0);
		}
		pthread_join(th, NULL);
		if (r != 1 || w.rc != 0)
			bad("futex", "FUTEX_WAKE of 0 (private %d): %ld woken, the wait %ld", priv,
			    r, w.rc);
	}
	return 0;
}

static pthread_mutex_t robust_mu;

static void *lock_and_exit(void *p)
{
	(void)p;
	pthread_mutex_lock(&robust_mu);
	return NULL;
}

/* a robust mutex whose owner ended: the next lock says EOWNERDEAD; set_robust_list takes its
 * head's size only; get_robust_list says what was set */
static int case_robust(void)
{
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&robust_mu, &a);
	pthread_t th;
	pthread_create(&th, NULL, lock_and_exit, NULL);
	pthread_join(th, NULL);
	int rc = pthread_mutex_lock(&robust_mu);
	if (rc != EOWNERDEAD)
		bad("robust", "lock after the owner's end: %d, not EOWNERDEAD", rc);
	else if (pthread_mutex_consistent(&robust_mu) || pthread_mutex_unlock(&robust_mu))
		bad("robust", "consistent + unlock failed");
	uint64_t head[3] = {0, 0, 0}, *got = NULL;
	head[0] = (uint64_t)(uintptr_t)head;
	size_t len = 0;
	if (syscall(SYS_set_robust_list, head, sizeof(head) + 1) != -1 || errno != EINVAL)
		bad("robust", "set_robust_list of a wrong size: not EINVAL");
	void *old = NULL;
	syscall(SYS_get_robust_list, 0, &old, &len);
	if (syscall(SYS_set_robust_list, head, sizeof(head)) ||
	    syscall(SYS_get_robust_list, 0, &got, &len) || got != head || len != sizeof(head))
		bad("robust", "get_robust_list: not what was set");
	syscall(SYS_set_robust_list, old, sizeof(head));
	return 0;
}

static pthread_mutex_t pi_mu;
static long pi_count;

static void *pi_worker(void *p)
{
	(void)p;
	for (int i = 0; i < 200; i++) {
		pthread_mutex_lock(&pi_mu);
		long c = pi_count;
		if (i % 50 == 0)
			nap_ms(1);
		pi_count = c + 1;
		pthread_mutex_unlock(&pi_mu);
	}
	return NULL;
}

static void *pi_trylock(void *p)
{
	int *word = p;
	long r = futex(word, FUTEX_TRYLOCK_PI | FUTEX_PRIVATE_FLAG, 0, NULL, NULL, 0);
	return (void *)(intptr_t)(r == -1 ? errno : 0);
}

/* the priority-inheriting lock operations: a PTHREAD_PRIO_INHERIT mutex fought over, and the
 * errors of the raw calls */
static int case_pi(void)
{
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT);
	pthread_mutex_init(&pi_mu, &a);
	pthread_t th[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, pi_worker, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	if (pi_count != 800)
		bad("pi", "the count under a PI mutex: %ld, not 800", pi_count);
	int word = 0, tid = (int)syscall(SYS_gettid);
	const int priv = FUTEX_PRIVATE_FLAG;
	if (futex(&word, FUTEX_LOCK_PI | priv, 0, NULL, NULL, 0) || word != tid)
		bad("pi", "FUTEX_LOCK_PI of a free word: %#x, not the tid", word);
	if (futex(&word, FUTEX_LOCK_PI | priv, 0, NULL, NULL, 0) != -1 || errno != EDEADLK)
		bad("pi", "FUTEX_LOCK_PI of a word it holds: not EDEADLK");
	pthread_t t;
	void *r;
	pthread_create(&t, NULL, pi_trylock, &word);
	pthread_join(t, &r);
	if ((intptr_t)r != EAGAIN)
		bad("pi", "FUTEX_TRYLOCK_PI of a held word: %d, not EAGAIN", (int)(intptr_t)r);
	if (futex(&word, FUTEX_UNLOCK_PI | priv, 0, NULL, NULL, 0) || word != 0)
		bad("pi", "FUTEX_UNLOCK_PI: the word %#x, not 0", word);
	if (futex(&word, FUTEX_UNLOCK_PI | priv, 0, NULL, NULL, 0) != -1 || errno != EPERM)
		bad("pi", "FUTEX_UNLOCK_PI of a word it does not hold: not EPERM");
	return 0;
}

static void *prctl_thread(void *p)
{
	(void)p;
	long keep = prctl(PR_GET_KEEPCAPS, 0, 0, 0, 0);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
		bad("prctl", "PR_SET_NO_NEW_PRIVS in a thread did not hold");
	return (void *)keep;
}

/* prctl's options as Linux answers them: names truncated to 15 bytes, dumpability, keepcaps and
 * no_new_privs per thread (a new thread takes its creator's), the subreaper bit, the bounding
 * set, a parent's death signal, EINVAL for what it does not know */
static int case_prctl(void)
{
	char name[16] = {0};
	if (prctl(PR_GET_NAME, name, 0, 0, 0) || !name[0])
		bad("prctl", "PR_GET_NAME: empty");
	prctl(PR_SET_NAME, "abcdefghijklmnopqrst", 0, 0, 0);
	if (prctl(PR_GET_NAME, name, 0, 0, 0) || strcmp(name, "abcdefghijklmno"))
		bad("prctl", "PR_GET_NAME after a long PR_SET_NAME: '%s'", name);
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) || prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0 ||
	    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) || prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 1)
		bad("prctl", "PR_SET_DUMPABLE did not hold");
	if (prctl(PR_SET_DUMPABLE, 2, 0, 0, 0) != -1 || errno != EINVAL)
		bad("prctl", "PR_SET_DUMPABLE of SUID_DUMP_ROOT: not EINVAL");
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) || prctl(PR_GET_KEEPCAPS, 0, 0, 0, 0) != 1)
		bad("prctl", "PR_SET_KEEPCAPS did not hold");
	pthread_t th;
	void *keep;
	pthread_create(&th, NULL, prctl_thread, NULL);
	pthread_join(th, &keep);
	if ((long)keep != 1)
		bad("prctl", "a new thread's keepcaps: %ld, not its creator's", (long)keep);
	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 0)
		bad("prctl", "another thread's PR_SET_NO_NEW_PRIVS reached this one");
	prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
	int v = -1;
	if (prctl(PR_SET_CHILD_SUBREAPER, 42, 0, 0, 0) ||
	    prctl(PR_GET_CHILD_SUBREAPER, &v, 0, 0, 0) || v != 1)
		bad("prctl", "PR_GET_CHILD_SUBREAPER: %d, not 1", v);
	prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
	if (prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0) || prctl(PR_GET_PDEATHSIG, &v, 0, 0, 0) || v != 9)
		bad("prctl", "PR_GET_PDEATHSIG: %d, not 9", v);
	if (prctl(PR_CAPBSET_READ, 0, 0, 0, 0) != 1)
		bad("prctl", "PR_CAPBSET_READ of CAP_CHOWN: not 1");
	if (prctl(PR_CAPBSET_READ, 999, 0, 0, 0) != -1 || errno != EINVAL)
		bad("prctl", "PR_CAPBSET_READ of no capability: not EINVAL");
	if (prctl(0x7fff0000, 0, 0, 0, 0) != -1 || errno != EINVAL)
		bad("prctl", "an unknown option: not EINVAL");
	return 0;
}

/* linux/capability.h's */
#define CAP_V1 0x19980330
#define CAP_V3 0x20080522

/* capget and capset: the version a probe learns, EINVAL for an unknown one; as an unprivileged
 * process (not natively as root), every set empty, and capset of more refused */
static int case_caps(void)
{
	uint32_t hdr[2] = {0x12345678, 0}, data[6];
	if (syscall(SYS_capget, hdr, NULL) || hdr[0] != CAP_V3)
		bad("caps", "capget probe: version %#x, not _LINUX_CAPABILITY_VERSION_3", hdr[0]);
	hdr[0] = 0x12345678;
	if (syscall(SYS_capget, hdr, data) != -1 || errno != EINVAL || hdr[0] != CAP_V3)
		bad("caps", "capget of an unknown version: not EINVAL with the version back");
	hdr[0] = CAP_V3;
	memset(data, 0xff, sizeof(data));
	if (syscall(SYS_capget, hdr, data))
		bad("caps", "capget: errno %d", errno);
	hdr[0] = CAP_V1;
	if (syscall(SYS_capget, hdr, data))
		bad("caps", "capget, version 1: errno %d", errno);
	hdr[1] = -1;
	if (syscall(SYS_capget, hdr, data) != -1 || errno != EINVAL)
		bad("caps", "capget of pid -1: not EINVAL");
	if (geteuid() == 0)
		return 0;
	hdr[0] = CAP_V3, hdr[1] = 0;
	memset(data, 0xff, sizeof(data));
	if (syscall(SYS_capget, hdr, data))
		bad("caps", "capget: errno %d", errno);
	for (int i = 0; i < 6; i++)
		if (data[i])
			bad("caps", "capget: word %d is %#x, not empty", i, data[i]);
	memset(data, 0, sizeof(data));
	if (syscall(SYS_capset, hdr, data))
		bad("caps", "capset of empty sets: errno %d", errno);
	data[0] = data[1] = 1; /* CAP_CHOWN effective and permitted */
	if (syscall(SYS_capset, hdr, data) != -1 || errno != EPERM)
		bad("caps", "capset of CAP_CHOWN: not EPERM");
	return 0;
}

static volatile int forked, checked;

static void *fork_and_wait(void *p)
{
	(void)p;
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	forked = pid;
	while (!checked)
		nap_ms(1);
	if (waitpid(pid, NULL, __WNOTHREAD) != pid)
		bad("wait", "__WNOTHREAD: the thread's own child not seen");
	return NULL;
}

/* waitid for stops alone when the only child has ended: ECHILD, as nothing of it can stop;
 * then its end is there still for a wait for it */
static int case_wait(void)
{
	pid_t pid = fork();
	if (pid == 0)
		_exit(7);
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	nap_ms(50);
	if (waitid(P_ALL, 0, &si, WSTOPPED) != -1 || errno != ECHILD)
		bad("wait", "waitid(WSTOPPED) with only an ended child: not ECHILD");
	if (waitid(P_ALL, 0, &si, WEXITED) || si.si_pid != pid || si.si_status != 7)
		bad("wait", "waitid(WEXITED) after it: pid %d status %d", si.si_pid, si.si_status);
	/* a fork's child is no "clone" child: __WCLONE does not see it, __WALL does */
	pid = fork();
	if (pid == 0)
		_exit(0);
	if (waitpid(pid, NULL, __WCLONE) != -1 || errno != ECHILD)
		bad("wait", "__WCLONE: a fork's child seen");
	if (waitpid(pid, NULL, __WALL) != pid)
		bad("wait", "__WALL: a fork's child not seen");
	/* __WNOTHREAD: another thread's child is not this one's to wait for */
	pthread_t th;
	pthread_create(&th, NULL, fork_and_wait, NULL);
	while (!forked)
		nap_ms(1);
	nap_ms(20);
	if (waitpid(-1, NULL, WNOHANG | __WNOTHREAD) != -1 || errno != ECHILD)
		bad("wait", "__WNOTHREAD: another thread's child seen");
	checked = 1;
	pthread_join(th, NULL);
	return 0;
}

static void on_usr1(int sig)
{
	(void)sig;
}

/* clone3 with CLONE_CLEAR_SIGHAND: the child's handlers back to default, what is ignored still
 * ignored; the flags clone3 refuses, and a non-canonical TLS */
static int case_clone3(void)
{
	uint64_t ca[11] = {
	    0}; /* struct clone_args: flags, pidfd, child_tid, parent_tid,
		   exit_signal, stack, stack_size, tls, set_tid, set_tid_size, cgroup */
	signal(SIGUSR1, on_usr1);
	signal(SIGUSR2, SIG_IGN);
	ca[0] = 0x100000000ULL; /* CLONE_CLEAR_SIGHAND */
	ca[4] = SIGCHLD;
	long pid = syscall(SYS_clone3, ca, sizeof(ca));
	if (pid == 0) {
		struct sigaction a1, a2;
		sigaction(SIGUSR1, NULL, &a1);
		sigaction(SIGUSR2, NULL, &a2);
		_exit(a1.sa_handler != SIG_DFL ? 1 : a2.sa_handler != SIG_IGN ? 2 : 0);
	}
	int status = -1;
	if (pid < 0)
		bad("clone3", "CLONE_CLEAR_SIGHAND: errno %d", errno);
	else if (waitpid((pid_t)pid, &status, 0) != pid || status != 0)
		bad("clone3", "CLONE_CLEAR_SIGHAND: the child's handlers (status %#x)", status);
	ca[0] = 0x100000000ULL | CLONE_SIGHAND | CLONE_VM;
	if (syscall(SYS_clone3, ca, sizeof(ca)) != -1 || errno != EINVAL)
		bad("clone3", "CLONE_CLEAR_SIGHAND with CLONE_SIGHAND: not EINVAL");
	ca[0] = CLONE_THREAD;
	if (syscall(SYS_clone3, ca, sizeof(ca)) != -1 || errno != EINVAL)
		bad("clone3", "CLONE_THREAD with an exit signal: not EINVAL");
	ca[0] = CLONE_PARENT;
	if (syscall(SYS_clone3, ca, sizeof(ca)) != -1 || errno != EINVAL)
		bad("clone3", "CLONE_PARENT with an exit signal: not EINVAL");
	char stack;
	if (syscall(SYS_clone, SIGCHLD | CLONE_SETTLS, &stack, NULL, NULL, 1ULL << 63) != -1 ||
	    errno != EPERM)
		bad("clone3", "clone with a non-canonical TLS: not EPERM");
	signal(SIGUSR1, SIG_DFL);
	signal(SIGUSR2, SIG_DFL);
	return 0;
}

static volatile int kid_wrote;

/* a child sharing the memory of its parent, which sees what it wrote */
static int vm_kid(void *arg)
{
	kid_wrote = (int)(intptr_t)arg;
	syscall(SYS_exit, 3); /* this child alone, not exit_group */
	return 0;
}

/* clone of a child that shares memory, files and handlers but is a process to wait for: with
 * SIGCHLD as a fork's child, without as a "clone" child only __WCLONE or __WALL see */
static int case_vmkid(void)
{
	static char stack[2][65536] __attribute__((aligned(16)));
	const int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND;
	int status = -1;
	pid_t pid = clone(vm_kid, stack[0] + sizeof(stack[0]), flags | SIGCHLD, (void *)7);
	if (pid < 0)
		return bad("vmkid", "clone: errno %d", errno), 0;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 3 ||
	    kid_wrote != 7)
		bad("vmkid", "waitpid: status %#x, the shared word %d", status, kid_wrote);
	pid = clone(vm_kid, stack[1] + sizeof(stack[1]), flags, (void *)8);
	if (pid < 0)
		return bad("vmkid", "clone without an exit signal: errno %d", errno), 0;
	nap_ms(50);
	if (waitpid(pid, &status, 0) != -1 || errno != ECHILD)
		bad("vmkid", "a child with no exit signal seen without __WCLONE");
	if (waitpid(pid, &status, __WCLONE) != pid || WEXITSTATUS(status) != 3 || kid_wrote != 8)
		bad("vmkid", "__WCLONE: status %#x, the shared word %d", status, kid_wrote);
	return 0;
}

static int64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	if (clock_gettime(c, &ts))
		return -1;
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* a thread that runs until its own CPU-time clock has counted 100 ms more */
static void *spin(void *p)
{
	(void)p;
	int64_t end = clock_ns(CLOCK_THREAD_CPUTIME_ID) + 100000000LL;
	while (clock_ns(CLOCK_THREAD_CPUTIME_ID) < end)
		for (volatile int i = 0; i < 100000; i++)
			;
	return NULL;
}

/* the process's CPU-time clock adds up its threads'; a thread's clock by its id
 * (pthread_getcpuclockid) has a resolution and a time; getrusage's */
static int case_cputime(void)
{
	int64_t start = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	pthread_t th[3];
	for (int i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, spin, NULL);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	int64_t used = clock_ns(CLOCK_PROCESS_CPUTIME_ID) - start;
	if (used < 300000000LL)
		bad("cputime", "3 threads of 100 ms each: the process clock counted %lld ns",
		    (long long)used);
	clockid_t c;
	struct timespec ts = {0, 0};
	if (pthread_getcpuclockid(pthread_self(), &c) || clock_getres(c, &ts) ||
	    (!ts.tv_sec && !ts.tv_nsec))
		bad("cputime", "clock_getres of the thread's clock: errno %d", errno);
	if (clock_ns(c) <= 0)
		bad("cputime", "clock_gettime of the thread's clock: %lld", (long long)clock_ns(c));
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) || ru.ru_utime.tv_sec * 1000000LL + ru.ru_utime.tv_usec +
						   ru.ru_stime.tv_sec * 1000000LL +
						   ru.ru_stime.tv_usec <
					       300000)
		bad("cputime", "getrusage(RUSAGE_SELF): less than the threads ran");
	if (getrusage(RUSAGE_CHILDREN, &ru) || getrusage(RUSAGE_THREAD, &ru))
		bad("cputime", "getrusage(RUSAGE_CHILDREN, RUSAGE_THREAD): errno %d", errno);
	if (getrusage(99, &ru) != -1 || errno != EINVAL)
		bad("cputime", "getrusage(99): not EINVAL");
	return 0;
}

static int64_t ru_us(const struct rusage *ru)
{
	return ru->ru_utime.tv_sec * 1000000LL + ru->ru_utime.tv_usec +
	       ru->ru_stime.tv_sec * 1000000LL + ru->ru_stime.tv_usec;
}

/* a child's CPU time in what wait4 and waitid say of it, and in RUSAGE_CHILDREN once it was
 * waited for */
static int case_rusage(void)
{
	struct rusage before, ru, after;
	getrusage(RUSAGE_CHILDREN, &before);
	for (int how = 0; how < 2; how++) {
		pid_t pid = fork();
		if (pid == 0) {
			spin(NULL);
			_exit(0);
		}
		memset(&ru, 0, sizeof(ru));
		siginfo_t si;
		long r = how ? syscall(SYS_waitid, P_PID, pid, &si, WEXITED, &ru)
			     : wait4(pid, NULL, 0, &ru);
		if (r < 0 || ru_us(&ru) < 100000)
			bad("rusage", "%s: the child's time %lld us", how ? "waitid" : "wait4",
			    (long long)ru_us(&ru));
	}
	getrusage(RUSAGE_CHILDREN, &after);
	if (ru_us(&after) - ru_us(&before) < 200000)
		bad("rusage", "RUSAGE_CHILDREN: %lld us more, not 200000",
		    (long long)(ru_us(&after) - ru_us(&before)));
	return 0;
}

/* mincore: EINVAL for an unaligned address, ENOMEM for a range not mapped, else a byte per page
 * with 1 for a page touched */
static int case_mincore(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	unsigned char vec[4] = {9, 9, 9, 9};
	char *m = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return bad("mincore", "mmap failed"), 0;
	m[0] = 1, m[2 * pg] = 1;
	if (mincore(m + 1, pg, vec) != -1 || errno != EINVAL)
		bad("mincore", "an unaligned address: not EINVAL");
	if (mincore(m, 4 * pg, vec) || !(vec[0] & 1) || !(vec[2] & 1))
		bad("mincore", "pages touched: %d %d %d %d", vec[0], vec[1], vec[2], vec[3]);
	munmap(m + 3 * pg, pg);
	if (mincore(m, 4 * pg, vec) != -1 || errno != ENOMEM)
		bad("mincore", "a range with a page unmapped: not ENOMEM");
	if (mincore(m, pg, NULL) != -1 || errno != EFAULT)
		bad("mincore", "a vector nowhere: not EFAULT");
	munmap(m, 3 * pg);
	return 0;
}

/* sched_setaffinity's mask is what sched_getaffinity says after it, in a fork's child too */
static int case_affinity(void)
{
	cpu_set_t all, want, got;
	if (sched_getaffinity(0, sizeof(all), &all))
		return bad("affinity", "sched_getaffinity: errno %d", errno), 0;
	want = all;
	for (int n = 0; n < CPU_SETSIZE; n++)
		if (CPU_ISSET(n, &want) && CPU_COUNT(&want) > 1) {
			CPU_CLR(n, &want);
			break;
		}
	if (sched_setaffinity(0, sizeof(want), &want) || sched_getaffinity(0, sizeof(got), &got) ||
	    !CPU_EQUAL(&got, &want))
		bad("affinity", "sched_getaffinity after sched_setaffinity: another mask");
	pid_t pid = fork();
	if (pid == 0)
		_exit(sched_getaffinity(0, sizeof(got), &got) || !CPU_EQUAL(&got, &want));
	int status = -1;
	waitpid(pid, &status, 0);
	if (status != 0)
		bad("affinity", "the fork's child has another mask");
	CPU_ZERO(&got);
	if (sched_setaffinity(0, sizeof(got), &got) != -1 || errno != EINVAL)
		bad("affinity", "an empty mask: not EINVAL");
	sched_setaffinity(0, sizeof(all), &all);
	return 0;
}

static const struct {
	const char *name;
	int (*fn)(void);
} cases[] = {
    {"futex", case_futex},     {"robust", case_robust},	    {"pi", case_pi},
    {"prctl", case_prctl},     {"caps", case_caps},	    {"wait", case_wait},
    {"clone3", case_clone3},   {"cputime", case_cputime},   {"rusage", case_rusage},
    {"mincore", case_mincore}, {"affinity", case_affinity}, {"vmkid", case_vmkid},
};

int main(int argc, char **argv)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (argc > 1 && strcmp(argv[1], cases[i].name))
			continue;
		int before = failed;
		failed = 0;
		cases[i].fn();
		if (!failed)
			printf("%s ok\n", cases[i].name);
		failed |= before;
	}
	fflush(stdout);
	return failed;
}
