/* forkbench: N forks (each child execs this program again, or exits) and waits, timed inside. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* one fork, the child exec'ing this program as "forkbench x" (exec) or leaving at once, and
 * its wait; 0 when the child exited 0 */
static int one(int exec)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (exec) {
			char *const argv[] = {"forkbench", "x", NULL};
			execve("/proc/self/exe", argv, environ);
			_exit(127);
		}
		_exit(0);
	}
	int st;
	if (wait4(pid, &st, 0, NULL) != pid)
		return -1;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* Prints "MODE N ns T": T the nanoseconds N rounds of fork, execve in the child (MODE exec) or
 * _exit (MODE fork), and wait4 took on the program's own monotonic clock (the start, the
 * request's read and the exit are outside it). Its arguments "N [fork]", or without any the
 * request "exec N" / "fork N", read first so that a snapshot taken at that read serves every N.
 * "forkbench x" is the exec'd child: it exits 0 at once. */
int main(int argc, char **argv)
{
	char req[64] = "", mode[8] = "exec";
	long n = -1;

	if (argc > 1 && !strcmp(argv[1], "x"))
		return 0;
	if (argc > 1) {
		n = strtol(argv[1], NULL, 10);
		if (argc > 2)
			snprintf(mode, sizeof(mode), "%.7s", argv[2]);
	} else {
		ssize_t got = read(0, req, sizeof(req) - 1);
		if (got < 0)
			return 1;
		req[got] = 0;
		if (sscanf(req, "%7s %ld", mode, &n) != 2)
			return 2;
	}
	int exec = !strcmp(mode, "exec");
	if (n < 0 || n > 1000000 || (!exec && strcmp(mode, "fork")))
		return 2;
	long long t0 = now_ns();
	for (long i = 0; i < n; i++)
		if (one(exec))
			return 3;
	long long t1 = now_ns();
	printf("%s %ld ns %lld\n", mode, n, t1 - t0);
	return 0;
}
