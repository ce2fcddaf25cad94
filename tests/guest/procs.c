/* procs: processes inside an invocation (fork, vfork, clone without CLONE_VM, execve, wait4,
 * waitid, pipes, dup2, kill, SIGCHLD, process groups), one case per mode (argv[1]):
 *   fork     fork, SYS_fork and clone(SIGCHLD [| CHILD_SETTID | CHILD_CLEARTID]); the child's
 *            exit status, pid relations, its memory apart and its file offset shared
 *   pipe     200 KiB through a pipe to a child, its count and checksum back through another;
 *            EPIPE with SIGPIPE ignored, death by SIGPIPE without
 *   exec     fork + execve of itself by argv[0] and /proc/self/exe (args, environment,
 *            descriptors and signal dispositions across it), of a missing path; with
 *            argv[2] a file that is no ELF (its errno), argv[3] another copy of this program
 *   execself execve of itself without a fork: the invocation's process is the new image
 *   waitany  wait4(-1) over five children, ECHILD, WNOHANG, waitid, WNOWAIT, SIGCHLD ignored
 *   kill     kill(0), SIGTERM, a handled SIGUSR1 in a child, a child's signal to its parent,
 *            SIGCHLD counted by a handler
 *   vfork    vfork + _exit, vfork + execve, posix_spawn (with a dup2 file action)
 *   dup2     a child's stdout made a pipe (dup2, then execve): the parent reads it; dup3 with
 *            O_CLOEXEC closes it at the execve
 *   orphan   a grandchild outlives its parent, is reparented, and writes to the first process
 *   crash    children that die of SIGSEGV, SIGABRT, SIGFPE and SIGKILL
 *   bomb     forks until fork fails (EAGAIN past --pids), then kills and reaps them all;
 *            natively it stops at 200 ("cap reached")
 *   pgid     setpgid, getpgid, getpgrp, setsid, kill of a whole process group
 *   shmem    a MAP_SHARED anonymous page is shared with a child, a MAP_PRIVATE one is not
 *   threads  fork from a process with a second thread blocked; the child makes its own
 *   leak     says whether anything of an earlier invocation is there ("clean: 1"): a child's
 *            write to a global, its /tmp file, a child still running; then leaves all three
 * and, run by the modes above through execve: child-exec ARGS (prints them and PROCS_VAR,
 * exits 3), child-fds KEEP CLOEXEC (what execve kept). The top-level modes read their request
 * first (the snapshot point); without argv[1] (a deployed function) its first word is the mode.
 * Output is what Linux makes it, no pid printed, relations instead: tests/integration/test_procs.sh
 * compares it with a native run. One write per line, no stdio, so that no buffer is copied by a
 * fork and lines of processes never interleave. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LEAK_FILE "/tmp/ember-procs-leak"
#define BOMB_CAP  200

extern char **environ;
static char *child_env[] = {"PROCS_VAR=passed through", NULL};

/* errno names: strerror's text differs between libcs */
static const struct {
	int e;
	const char *name;
} enames[] = {{EPERM, "EPERM"},
	      {ENOENT, "ENOENT"},
	      {ESRCH, "ESRCH"},
	      {EINTR, "EINTR"},
	      {EIO, "EIO"},
	      {E2BIG, "E2BIG"},
	      {ENOEXEC, "ENOEXEC"},
	      {EBADF, "EBADF"},
	      {ECHILD, "ECHILD"},
	      {EAGAIN, "EAGAIN"},
	      {ENOMEM, "ENOMEM"},
	      {EACCES, "EACCES"},
	      {EFAULT, "EFAULT"},
	      {EBUSY, "EBUSY"},
	      {EEXIST, "EEXIST"},
	      {ENOTDIR, "ENOTDIR"},
	      {EISDIR, "EISDIR"},
	      {EINVAL, "EINVAL"},
	      {EMFILE, "EMFILE"},
	      {ETXTBSY, "ETXTBSY"},
	      {ENOSPC, "ENOSPC"},
	      {EPIPE, "EPIPE"},
	      {ENOSYS, "ENOSYS"},
	      {ELOOP, "ELOOP"},
	      {ENAMETOOLONG, "ENAMETOOLONG"}};

static const char *en(int e)
{
	for (size_t i = 0; i < sizeof(enames) / sizeof(enames[0]); i++)
		if (enames[i].e == e)
			return enames[i].name;
	return "another errno";
}

static const struct {
	int sig;
	const char *name;
} snames[] = {{SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},	  {SIGABRT, "SIGABRT"},
	      {SIGFPE, "SIGFPE"},   {SIGKILL, "SIGKILL"}, {SIGSEGV, "SIGSEGV"},
	      {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"},
	      {SIGUSR1, "SIGUSR1"}, {SIGUSR2, "SIGUSR2"}, {SIGCHLD, "SIGCHLD"},
	      {SIGSYS, "SIGSYS"},   {SIGILL, "SIGILL"},	  {SIGBUS, "SIGBUS"}};

static const char *sn(int sig)
{
	for (size_t i = 0; i < sizeof(snames) / sizeof(snames[0]); i++)
		if (snames[i].sig == sig)
			return snames[i].name;
	return "another signal";
}

/* say: one line, one write(2), so that it never sits in a buffer a fork would copy */
__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 1)
		n = sizeof(buf) - 1;
	if (write(1, buf, n) < 0)
		return;
}

/* fail: what failed and its errno, then the end of this process (a child's too) */
static void fail(const char *what)
{
	say("%s: %s\n", what, en(errno));
	_exit(1);
}

static pid_t xfork(void)
{
	pid_t pid = fork();
	if (pid < 0)
		fail("fork");
	return pid;
}

static void xpipe(int p[2])
{
	if (pipe(p))
		fail("pipe");
}

/* reap: waits for pid (EINTR from a handler without SA_RESTART retried), prints how it ended */
static int reap(pid_t pid, const char *what)
{
	int st;
	pid_t w;
	while ((w = wait4(pid, &st, 0, NULL)) < 0 && errno == EINTR)
		;
	if (w < 0)
		fail("wait4");
	if (w != pid)
		say("%s: wait4 returned another pid\n", what);
	if (WIFEXITED(st))
		say("%s: exited %d\n", what, WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		say("%s: killed by %s\n", what, sn(WTERMSIG(st)));
	else
		say("%s: status %#x\n", what, st);
	return st;
}

/* readall: reads fd to its end into buf (NUL-terminated), returns the length */
static size_t readall(int fd, char *buf, size_t size)
{
	size_t n = 0;
	ssize_t k;
	while (n < size - 1 && (k = read(fd, buf + n, size - 1 - n)) != 0) {
		if (k < 0 && errno != EINTR)
			fail("read");
		if (k > 0)
			n += k;
	}
	buf[n] = 0;
	return n;
}

static void nap_ms(long ms)
{
	struct timespec t = {ms / 1000, ms % 1000 * 1000000};
	nanosleep(&t, NULL);
}

/* ---- fork ---- */

static int global = 1;
static int ctid; /* CLONE_CHILD_SETTID writes the child's tid here, in the child's memory */

static int m_fork(void)
{
	pid_t me = getpid();
	int *heap = malloc(sizeof(*heap));
	char name[] = "/tmp/ember-procs-XXXXXX";
	int fd = mkstemp(name);
	if (!heap || fd < 0)
		fail("malloc or mkstemp");
	*heap = 10;
	pid_t pid = xfork();
	if (pid == 0) {
		say("child: sees the parent's global and heap: %d\n", global == 1 && *heap == 10);
		global = 2;
		*heap = 20;
		say("child: getppid is parent: %d\n", getppid() == me);
		say("child: getpid differs from parent's: %d\n", getpid() != me);
		if (write(fd, "abc", 3) != 3)
			fail("child: write");
		_exit(7);
	}
	int st =
	    reap(pid, "fork child"); /* the parent's lines after the child's, for their order */
	say("parent: fork returned a pid: %d\n", pid > 0);
	say("parent: WIFEXITED %d WEXITSTATUS %d\n", WIFEXITED(st), WEXITSTATUS(st));
	say("parent: global and heap unchanged by the child: %d\n", global == 1 && *heap == 10);
	say("parent: the child's write moved the shared offset: %d\n", lseek(fd, 0, SEEK_CUR) == 3);
	char buf[8] = "";
	if (write(fd, "de", 2) != 2 || pread(fd, buf, sizeof(buf) - 1, 0) != 5)
		fail("parent: write or pread");
	say("parent: the file holds both writes: %s\n", buf);
	close(fd);
	unlink(name);

	/* what musl's fork is, and glibc's (clone with the tid words), made by hand */
	long r = syscall(SYS_fork);
	if (r == 0)
		_exit(getppid() == me ? 21 : 20);
	if (r < 0)
		fail("SYS_fork");
	reap(r, "SYS_fork child (21: getppid right)");
	r = syscall(SYS_clone, SIGCHLD, 0, NULL, NULL, 0);
	if (r == 0)
		_exit(global == 1 ? 22 : 20);
	if (r < 0)
		fail("clone(SIGCHLD)");
	reap(r, "clone(SIGCHLD) child");
	r = syscall(SYS_clone, CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD, 0, NULL, &ctid,
		    0);
	if (r == 0)
		_exit(ctid == syscall(SYS_gettid) ? 23 : 20);
	if (r < 0)
		fail("clone(CHILD_SETTID|CHILD_CLEARTID|SIGCHLD)");
	reap(r, "clone with the tid words child (23: its tid written)");
	say("parent: the child's tid word not written here: %d\n", ctid == 0);
	return 0;
}

/* ---- pipe ---- */

#define PIPE_BYTES (200 * 1024)

static unsigned char pattern(long i)
{
	return (unsigned char)(i * 7 + i / 251);
}

static int m_pipe(void)
{
	int to[2], back[2];
	xpipe(to);
	xpipe(back);
	pid_t pid = xfork();
	if (pid == 0) {
		close(to[1]);
		close(back[0]);
		unsigned char buf[4096];
		unsigned long sum = 0;
		long n = 0, k;
		while ((k = read(to[0], buf, sizeof(buf))) != 0) {
			if (k < 0 && errno != EINTR)
				fail("child: read");
			for (long i = 0; i < k; i++)
				sum = sum * 31 + buf[i];
			n += k > 0 ? k : 0;
		}
		char rep[64];
		int len = snprintf(rep, sizeof(rep), "%ld %lu", n, sum);
		if (write(back[1], rep, len) != len)
			fail("child: write");
		_exit(0);
	}
	close(to[0]);
	close(back[1]);
	static unsigned char data[PIPE_BYTES];
	unsigned long sum = 0;
	for (long i = 0; i < PIPE_BYTES; i++) {
		data[i] = pattern(i);
		sum = sum * 31 + data[i];
	}
	long off = 0;
	while (off < PIPE_BYTES) {
		ssize_t k = write(to[1], data + off, PIPE_BYTES - off);
		if (k < 0)
			fail("parent: write");
		off += k;
	}
	say("parent: wrote %ld bytes\n", off);
	close(to[1]); /* the child's EOF */
	char rep[64];
	readall(back[0], rep, sizeof(rep));
	long n = -1;
	unsigned long got = 0;
	sscanf(rep, "%ld %lu", &n, &got);
	say("child read %ld bytes, checksum as written: %d\n", n, got == sum);
	reap(pid, "reader");

	/* no reader left, SIGPIPE ignored: EPIPE */
	signal(SIGPIPE, SIG_IGN);
	int p[2];
	xpipe(p);
	pid = xfork();
	if (pid == 0)
		_exit(0); /* its copies of both ends go with it */
	close(p[0]);
	reap(pid, "a child holding the read end");
	say("write with no reader: %s\n", write(p[1], "x", 1) < 0 ? en(errno) : "written");
	close(p[1]);

	/* and with SIGPIPE's default: the writer dies of it */
	signal(SIGPIPE, SIG_DFL);
	xpipe(p);
	close(p[0]);
	pid = xfork();
	if (pid == 0) {
		ssize_t k = write(p[1], "x", 1);
		say("writer: survived its write: %s\n", k < 0 ? en(errno) : "written");
		_exit(0);
	}
	close(p[1]);
	reap(pid, "writer with no reader");
	return 0;
}

/* ---- exec ---- */

/* exec_child: fork + execve(path, child-exec ARGS...), the parent waits and says how it ended */
static void exec_child(const char *path, const char *what)
{
	char *args[] = {(char *)path, "child-exec", "hello world", "two", NULL};
	pid_t pid = xfork();
	if (pid == 0) {
		execve(path, args, child_env);
		say("execve %s: %s\n", what, en(errno));
		_exit(127);
	}
	reap(pid, what);
}

static void on_usr(int sig)
{
	(void)sig;
}

static int m_exec(int argc, char **argv)
{
	exec_child(argv[0], "execve of argv[0]");
	exec_child("/proc/self/exe", "execve of /proc/self/exe");

	/* what execve keeps: descriptors but those close-on-exec, ignored signals (handled ones
	 * go back to their default) */
	int keep[2], cloexec[2];
	xpipe(keep);
	if (pipe2(cloexec, O_CLOEXEC))
		fail("pipe2");
	signal(SIGUSR1, SIG_IGN);
	signal(SIGUSR2, on_usr);
	char k[16], c[16];
	snprintf(k, sizeof(k), "%d", keep[0]);
	snprintf(c, sizeof(c), "%d", cloexec[0]);
	char *args[] = {"/proc/self/exe", "child-fds", k, c, NULL};
	pid_t pid = xfork();
	if (pid == 0) {
		execve(args[0], args, child_env);
		fail("execve child-fds");
	}
	reap(pid, "execve of child-fds");
	signal(SIGUSR1, SIG_DFL);
	signal(SIGUSR2, SIG_DFL);

	/* refused execs return to the caller, which goes on */
	char *none[] = {"/no/such/program", NULL};
	execve(none[0], none, child_env);
	say("execve of a missing path: %s\n", en(errno));
	if (argc > 2) {
		char *bad[] = {argv[2], NULL};
		execve(argv[2], bad, child_env);
		say("execve of a file that is no ELF: %s\n", en(errno));
	}
	if (argc > 3)
		exec_child(argv[3], "execve of another program file");
	say("parent: still itself after the refused ones: 1\n");
	return 0;
}

static int m_execself(void)
{
	char *args[] = {"/proc/self/exe", "child-exec", "self", NULL};
	say("before execve\n");
	execve(args[0], args, child_env);
	fail("execve");
	return 1;
}

static int m_child_exec(int argc, char **argv)
{
	char line[400] = "";
	size_t n = 0;
	for (int i = 2; i < argc && n < sizeof(line) - 1; i++)
		n += snprintf(line + n, sizeof(line) - n, " [%s]", argv[i]);
	say("child-exec: %d args:%s\n", argc - 2, line);
	const char *v = getenv("PROCS_VAR");
	int envs = 0;
	while (environ[envs])
		envs++;
	say("child-exec: PROCS_VAR=%s, %d in the environment\n", v ? v : "(unset)", envs);
	return 3;
}

static int m_child_fds(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	int keep = atoi(argv[2]), cloexec = atoi(argv[3]);
	say("child-fds: the inherited descriptor is open: %d\n", fcntl(keep, F_GETFD) >= 0);
	say("child-fds: the close-on-exec one: %s\n",
	    fcntl(cloexec, F_GETFD) < 0 ? en(errno) : "open");
	struct sigaction a1, a2;
	sigaction(SIGUSR1, NULL, &a1);
	sigaction(SIGUSR2, NULL, &a2);
	say("child-fds: SIGUSR1 still ignored: %d, SIGUSR2 back to default: %d\n",
	    a1.sa_handler == SIG_IGN, a2.sa_handler == SIG_DFL);
	return 0;
}

/* ---- waitany ---- */

static int m_waitany(void)
{
	pid_t kids[5];
	for (int i = 0; i < 5; i++) {
		kids[i] = xfork();
		if (kids[i] == 0)
			_exit(i + 1);
	}
	int n = 0, sum = 0, st, mine = 1;
	pid_t w;
	while ((w = wait4(-1, &st, 0, NULL)) > 0) {
		int found = 0;
		for (int i = 0; i < 5; i++)
			found |= kids[i] == w;
		mine &= found;
		n++;
		sum += WIFEXITED(st) ? WEXITSTATUS(st) : 100;
	}
	int e = errno;
	say("wait4(-1): %d children, statuses summing to %d, each one of ours: %d\n", n, sum, mine);
	say("then wait4(-1): %s\n", en(e));
	say("wait4 of our own pid: %s\n", wait4(getpid(), &st, 0, NULL) < 0 ? en(errno) : "a pid");

	/* WNOHANG while the child runs (it waits for its pipe's end), then waitid */
	int p[2];
	xpipe(p);
	pid_t pid = xfork();
	if (pid == 0) {
		char c;
		close(p[1]);
		while (read(p[0], &c, 1) > 0)
			;
		_exit(9);
	}
	close(p[0]);
	say("wait4 WNOHANG while it runs: %d\n", (int)wait4(pid, &st, WNOHANG, NULL));
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	say("waitid WNOHANG while it runs: %d, si_pid 0: %d\n",
	    waitid(P_PID, pid, &si, WEXITED | WNOHANG), si.si_pid == 0);
	close(p[1]);
	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, pid, &si, WEXITED))
		fail("waitid");
	say("waitid: si_pid is the child: %d, si_signo SIGCHLD: %d, CLD_EXITED: %d, si_status %d\n",
	    si.si_pid == pid, si.si_signo == SIGCHLD, si.si_code == CLD_EXITED, si.si_status);

	/* WNOWAIT leaves it to be waited for again */
	pid = xfork();
	if (pid == 0)
		_exit(11);
	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, pid, &si, WEXITED | WNOWAIT))
		fail("waitid WNOWAIT");
	say("waitid WNOWAIT: si_status %d\n", si.si_status);
	reap(pid, "then wait4");
	say("waitid P_ALL with no child: %s\n",
	    waitid(P_ALL, 0, &si, WEXITED | WNOHANG) < 0 ? en(errno) : "0");

	/* SIGCHLD ignored: children are reaped by themselves, wait4 waits for them, then ECHILD */
	signal(SIGCHLD, SIG_IGN);
	pid = xfork();
	if (pid == 0) {
		nap_ms(20);
		_exit(1);
	}
	say("with SIGCHLD ignored, wait4: %s\n",
	    wait4(pid, &st, 0, NULL) < 0 ? en(errno) : "a pid");
	signal(SIGCHLD, SIG_DFL);
	return 0;
}

/* ---- kill ---- */

static volatile sig_atomic_t chld_count, usr2_count;

static void on_chld(int sig)
{
	(void)sig;
	chld_count++;
}

static void on_usr2(int sig)
{
	(void)sig;
	usr2_count++;
}

static void on_usr1_exit(int sig)
{
	(void)sig;
	say("child: its SIGUSR1 handler ran\n");
	_exit(12);
}

static void handle(int sig, void (*fn)(int))
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sa.sa_flags = SA_RESTART;
	if (sigaction(sig, &sa, NULL))
		fail("sigaction");
}

/* paused_child: a child that runs setup (when not NULL), says it is ready through a pipe, then
 * pauses until a signal ends it */
static pid_t paused_child(void (*setup)(void))
{
	int r[2];
	xpipe(r);
	pid_t pid = xfork();
	if (pid == 0) {
		close(r[0]);
		if (setup)
			setup();
		if (write(r[1], "r", 1) != 1)
			fail("child: write");
		for (;;)
			pause();
	}
	close(r[1]);
	char c;
	if (read(r[0], &c, 1) != 1)
		fail("parent: the child's ready");
	close(r[0]);
	return pid;
}

static void usr1_setup(void)
{
	handle(SIGUSR1, on_usr1_exit);
}

static int m_kill(void)
{
	handle(SIGCHLD, on_chld);
	handle(SIGUSR2, on_usr2);
	pid_t pid = paused_child(NULL);
	say("kill(child, 0) while it runs: %d\n", kill(pid, 0));
	say("kill(child, SIGTERM): %d\n", kill(pid, SIGTERM));
	int st = reap(pid, "paused child");
	say("WIFSIGNALED %d, WTERMSIG is SIGTERM: %d\n", WIFSIGNALED(st),
	    WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
	say("kill(child, 0) once reaped: %s\n", kill(pid, 0) < 0 ? en(errno) : "0");

	pid = paused_child(usr1_setup);
	int k = kill(pid, SIGUSR1);
	reap(pid, "child with a SIGUSR1 handler"); /* its handler's line first */
	say("kill(child, SIGUSR1): %d\n", k);

	pid = xfork();
	if (pid == 0)
		_exit(kill(getppid(), SIGUSR2) ? 1 : 0);
	reap(pid, "child that signals its parent");
	say("its SIGUSR2 reached the parent's handler: %d\n", usr2_count == 1);
	say("sigchld: %s\n", chld_count >= 1 ? "yes" : "no");
	return 0;
}

/* ---- vfork ---- */

static int m_vfork(void)
{
	pid_t pid = vfork();
	if (pid == 0)
		_exit(4);
	if (pid < 0)
		fail("vfork");
	reap(pid, "vfork child");

	static char *args[] = {"/proc/self/exe", "child-exec", "vforked", NULL};
	pid = vfork();
	if (pid == 0) {
		execve(args[0], args, child_env);
		_exit(127);
	}
	if (pid < 0)
		fail("vfork");
	reap(pid, "vfork + execve child");

	char *sargs[] = {"/proc/self/exe", "child-exec", "spawned", NULL};
	int e = posix_spawn(&pid, sargs[0], NULL, NULL, sargs, child_env);
	if (e) {
		errno = e;
		fail("posix_spawn");
	}
	reap(pid, "posix_spawn child");

	/* with a file action: its stdout is a pipe */
	int p[2];
	xpipe(p);
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_addclose(&fa, p[0]);
	sargs[2] = "through a pipe";
	e = posix_spawn(&pid, sargs[0], &fa, NULL, sargs, child_env);
	posix_spawn_file_actions_destroy(&fa);
	if (e) {
		errno = e;
		fail("posix_spawn with a dup2");
	}
	close(p[1]);
	char buf[512];
	readall(p[0], buf, sizeof(buf));
	close(p[0]);
	for (char *l = strtok(buf, "\n"); l; l = strtok(NULL, "\n"))
		say("from the spawned child's pipe: %s\n", l);
	reap(pid, "posix_spawn child with a dup2");

	char *none[] = {"/no/such/program", NULL};
	e = posix_spawn(&pid, none[0], NULL, NULL, none, child_env);
	/* musl and glibc report the failed exec through the return value (no child to wait) */
	say("posix_spawn of a missing path: %s\n", e ? en(e) : "0");
	if (!e)
		reap(pid, "posix_spawn of a missing path");
	return 0;
}

/* ---- dup2 ---- */

static int m_dup2(void)
{
	say("dup2 of a descriptor onto itself: %d\n", dup2(1, 1));
	say("dup2 of a closed descriptor: %s\n", dup2(77, 78) < 0 ? en(errno) : "done");
	for (int cloexec = 0; cloexec < 2; cloexec++) {
		int p[2];
		xpipe(p);
		pid_t pid = xfork();
		if (pid == 0) {
			if ((cloexec ? dup3(p[1], 1, O_CLOEXEC) : dup2(p[1], 1)) != 1)
				fail("child: dup2");
			close(p[0]);
			close(p[1]);
			char *args[] = {"/proc/self/exe", "child-exec", "to a pipe", NULL};
			execve(args[0], args, child_env);
			fail("child: execve");
		}
		close(p[1]);
		char buf[512];
		size_t n = readall(p[0], buf, sizeof(buf));
		close(p[0]);
		if (cloexec)
			say("with dup3 O_CLOEXEC, nothing through the pipe: %d\n", n == 0);
		for (char *l = strtok(buf, "\n"); l; l = strtok(NULL, "\n"))
			say("from the child's stdout: %s\n", l);
		reap(pid, cloexec ? "dup3 O_CLOEXEC child" : "dup2 child");
	}
	return 0;
}

/* ---- orphan ---- */

static int m_orphan(void)
{
	int p[2];
	xpipe(p);
	pid_t pid = xfork();
	if (pid == 0) {
		close(p[0]);
		pid_t parent = getpid();
		pid_t g = xfork();
		if (g == 0) {
			/* until its parent has exited and it was given another (2 s at most) */
			int moved = 0;
			for (int i = 0; i < 2000 && !(moved = getppid() != parent); i++)
				nap_ms(1);
			char msg[64];
			int len = snprintf(msg, sizeof(msg), "reparented %d", moved);
			if (write(p[1], msg, len) != len)
				_exit(1);
			_exit(0);
		}
		_exit(6);
	}
	close(p[1]);
	reap(pid, "child");
	int st;
	say("wait4(-1) after it: %s\n",
	    wait4(-1, &st, WNOHANG, NULL) < 0 ? en(errno) : "a child (the grandchild?)");
	char buf[64];
	readall(p[0], buf, sizeof(buf)); /* EOF when the grandchild is gone */
	say("from the grandchild: %s\n", buf);
	return 0;
}

/* ---- crash ---- */

static volatile int zero, hundred = 100;

static int m_crash(void)
{
	for (int how = 0; how < 4; how++) {
		pid_t pid = xfork();
		if (pid == 0) {
			if (how == 0)
				*(volatile int *)(long)zero =
				    1; /* a write: guest mode's page 0 reads */
			if (how == 1)
				abort();
			if (how == 2)
				zero = hundred / zero; /* not 1 / zero: gcc makes that a compare */
			if (how == 3)
				kill(getpid(), SIGKILL);
			_exit(0);
		}
		const char *what[] = {"null write", "abort", "divide by zero", "SIGKILL to itself"};
		reap(pid, what[how]);
	}
	say("parent: still running: 1\n");
	return 0;
}

/* ---- bomb ---- */

static int m_bomb(void)
{
	static pid_t kids[BOMB_CAP];
	int n = 0;
	for (;;) {
		if (n == BOMB_CAP) {
			say("cap reached\n");
			break;
		}
		pid_t pid = fork();
		if (pid < 0) {
			say("fork failed: %s\n", en(errno));
			break;
		}
		if (pid == 0) {
			alarm(60); /* natively: gone even if its parent dies first */
			for (;;)
				pause();
		}
		kids[n++] = pid;
	}
	say("children before that: %d\n", n);
	for (int i = 0; i < n; i++)
		kill(kids[i], SIGKILL);
	int reaped = 0, st;
	while (wait4(-1, &st, 0, NULL) > 0)
		reaped++;
	if (reaped == n && errno == ECHILD)
		say("reaped all\n");
	else
		say("reaped %d of %d, then %s\n", reaped, n, en(errno));
	return 0;
}

/* ---- pgid ---- */

static int m_pgid(void)
{
	int r[2];
	xpipe(r);
	pid_t pid = xfork();
	if (pid == 0) {
		close(r[0]);
		say("child: setpgid(0, 0): %d\n", setpgid(0, 0));
		say("child: getpgrp is its pid: %d\n", getpgrp() == getpid());
		say("child: setsid as a group leader: %s\n", setsid() < 0 ? en(errno) : "done");
		if (xfork() == 0) { /* a grandchild in the child's group, holding the pipe */
			alarm(60);
			for (;;)
				pause();
		}
		if (write(r[1], "r", 1) != 1)
			fail("child: write");
		for (;;)
			pause();
	}
	close(r[1]);
	/* as a shell does, from both sides: whichever runs first makes the group (said once the
	 * child has said its lines, for their order) */
	int made = setpgid(pid, pid);
	char c;
	if (read(r[0], &c, 1) != 1)
		fail("parent: the child's ready");
	say("parent: setpgid(child, child): %d\n", made);
	say("pgid is child's pid: %d\n", getpgid(pid) == pid);
	say("parent's group is apart: %d\n", getpgrp() == getpgid(0) && getpgrp() != pid);
	say("kill of the child's group: %d\n", kill(-pid, SIGTERM));
	reap(pid, "group leader");
	say("the whole group gone (the pipe's end): %d\n", read(r[0], &c, 1) == 0);

	pid = xfork();
	if (pid == 0)
		_exit(setsid() == getpid() && getsid(0) == getpid() ? 0 : 1);
	reap(pid, "child that calls setsid (0: its own session)");
	return 0;
}

/* ---- shmem ---- */

static int m_shmem(void)
{
	int *shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int *private = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED || private == MAP_FAILED)
		fail("mmap");
	*shared = 1;
	*private = 1;
	pid_t pid = xfork();
	if (pid == 0) {
		*shared = 42;
		*private = 42;
		_exit(0);
	}
	reap(pid, "child");
	say("MAP_SHARED written by the child: %d\n", *shared);
	say("MAP_PRIVATE written by the child: %d\n", *private);
	return 0;
}

/* ---- threads ---- */

static int tpipe[2];

static void *blocked(void *arg)
{
	char c;
	(void)arg;
	return (void *)(long)read(tpipe[0], &c, 1);
}

static void *child_thread(void *arg)
{
	return arg;
}

static int m_threads(void)
{
	pthread_t t;
	xpipe(tpipe);
	if (pthread_create(&t, NULL, blocked, NULL))
		fail("pthread_create");
	pid_t pid = xfork();
	if (pid == 0) {
		pthread_t ct;
		void *got = NULL;
		int ok = !pthread_create(&ct, NULL, child_thread, (void *)5L) &&
			 !pthread_join(ct, &got) && got == (void *)5L;
		say("child: a thread of its own joined: %d\n", ok);
		_exit(5);
	}
	reap(pid, "child of a threaded process");
	void *got;
	if (write(tpipe[1], "x", 1) != 1 || pthread_join(t, &got))
		fail("parent: its thread");
	say("parent: its blocked thread read its byte: %d\n", got == (void *)1L);
	return 0;
}

/* ---- leak ---- */

static volatile int leak_marker;

static int m_leak(void)
{
	int st;
	int g = leak_marker != 0, f = access(LEAK_FILE, F_OK) == 0;
	int c = wait4(-1, &st, WNOHANG, NULL) >= 0 || errno != ECHILD;
	if (!g && !f && !c)
		say("clean: 1\n");
	else
		say("dirty:%s%s%s\n", g ? " global" : "", f ? " tmp" : "", c ? " child" : "");
	pid_t pid = xfork();
	if (pid == 0) {
		leak_marker = 0x1eaf;
		int fd = open(LEAK_FILE, O_CREAT | O_WRONLY, 0600);
		if (fd < 0 || write(fd, "child was here", 14) != 14)
			_exit(1);
		_exit(0);
	}
	reap(pid, "writer");
	/* and one left running at the end: natively its alarm ends it */
	if (xfork() == 0) {
		alarm(3);
		for (;;)
			pause();
	}
	/* and one blocked writing to a full pipe nobody reads (it holds the read end itself) */
	int p[2];
	if (pipe(p) == 0 && xfork() == 0) {
		static char junk[65536];
		alarm(3);
		while (write(p[1], junk, sizeof(junk)) > 0)
			;
		_exit(0);
	}
	return 0;
}

static const struct {
	const char *name;
	int (*fn)(void);
} modes[] = {{"fork", m_fork},	     {"pipe", m_pipe},	   {"execself", m_execself},
	     {"waitany", m_waitany}, {"kill", m_kill},	   {"vfork", m_vfork},
	     {"dup2", m_dup2},	     {"orphan", m_orphan}, {"crash", m_crash},
	     {"bomb", m_bomb},	     {"pgid", m_pgid},	   {"shmem", m_shmem},
	     {"threads", m_threads}, {"leak", m_leak}};

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "child-exec"))
		return m_child_exec(argc, argv);
	if (argc > 1 && !strcmp(argv[1], "child-fds"))
		return m_child_fds(argc, argv);
	char req[64];
	ssize_t n = read(0, req, sizeof(req) - 1);
	if (n < 0)
		fail("read the request");
	req[n] = 0;
	/* without arguments (a deployed function) the request's first word is the mode */
	const char *mode = argc > 1 ? argv[1] : strtok(req, " \t\r\n");
	if (!mode) {
		say("usage: procs MODE [ARGS], or the mode as the request\n");
		return 2;
	}
	if (!strcmp(mode, "exec"))
		return m_exec(argc, argv);
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!strcmp(mode, modes[i].name))
			return modes[i].fn();
	say("unknown mode %s\n", mode);
	return 2;
}
