/* getpriority and setpriority as Linux answers an unprivileged process (or root natively): the
 * raw call's 20 - nice, the range clamped, a lower value refused without RLIMIT_NICE, the value
 * kept by a fork's child and across execve. Prints "NAME ok" per case passed, else what
 * differed; exit 1 if any did. With "fresh" it first checks that it starts at 0, as a process
 * Ember starts does (the cases leave 19: the next invocation must not start there). With
 * "exec" it is the exec'd program: exit 0 if its nice value is 19. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "caseout.h"

/* getpriority of which/who, errno kept in *err (-1 is a nice value too) */
static int prio(int which, int who, int *err)
{
	errno = 0;
	int p = getpriority(which, who);
	*err = errno;
	return p;
}

/* the ids a process names itself by, and the range and the raw call's answer */
static void case_get(void)
{
	int err, p = prio(PRIO_PROCESS, 0, &err);
	if (err || p < -20 || p > 19)
		bad("get", "PRIO_PROCESS 0: %d, errno %d", p, err);
	long raw = syscall(SYS_getpriority, PRIO_PROCESS, 0);
	if (raw != 20 - p)
		bad("get", "the raw call answers %ld for nice %d, not 20 - nice", raw, p);
	if (prio(PRIO_PROCESS, getpid(), &err) != p || err)
		bad("get", "PRIO_PROCESS getpid(): errno %d", err);
	if (prio(PRIO_PGRP, 0, &err) != p || err || prio(PRIO_PGRP, getpgrp(), &err) != p || err)
		bad("get", "PRIO_PGRP: errno %d", err);
	prio(PRIO_USER, 0, &err); /* natively every process of the user counts: only no error */
	if (err || (prio(PRIO_USER, (int)getuid(), &err), err))
		bad("get", "PRIO_USER: errno %d", err);
	if (prio(3, 0, &err) != -1 || err != EINVAL)
		bad("get", "which 3: errno %d, not EINVAL", err);
	if (prio(PRIO_PROCESS, 0x3ffffff0, &err) != -1 || err != ESRCH)
		bad("get", "no such process: errno %d, not ESRCH", err);
	if (setpriority(PRIO_PROCESS, 0x3ffffff0, 19) != -1 || errno != ESRCH)
		bad("get", "setpriority of no such process: errno %d, not ESRCH", errno);
	if (setpriority(3, 0, 19) != -1 || errno != EINVAL)
		bad("get", "setpriority which 3: errno %d, not EINVAL", errno);
}

/* up to 19 (past it clamped), then down again: only with RLIMIT_NICE or CAP_SYS_NICE */
static void case_set(void)
{
	int err;
	if (setpriority(PRIO_PROCESS, 0, 100) || prio(PRIO_PROCESS, 0, &err) != 19)
		bad("set", "100 is not clamped to 19: errno %d", errno);
	struct rlimit rl;
	getrlimit(RLIMIT_NICE, &rl);
	int may = geteuid() == 0 || rl.rlim_cur >= 20 - 18; /* Linux's can_nice */
	int rc = setpriority(PRIO_PGRP, 0, 18);
	if (may ? rc != 0 : rc != -1 || errno != EACCES)
		bad("set", "lowering to 18: %d errno %d (allowed: %d)", rc, errno, may);
	if (may && setpriority(PRIO_PROCESS, 0, 19))
		bad("set", "back to 19: errno %d", errno);
	if (prio(PRIO_PROCESS, 0, &err) != 19)
		bad("set", "not 19 after a refused lowering");
	if (setpriority(PRIO_USER, 0, 19) || setpriority(PRIO_PROCESS, getpid(), 19))
		bad("set", "the same value again: errno %d", errno);
}

/* a fork's child has it, and so does the program an execve runs */
static void case_inherit(void)
{
	int status = -1;
	pid_t pid = fork();
	if (pid == 0) {
		int err;
		_exit(prio(PRIO_PROCESS, 0, &err) != 19);
	}
	waitpid(pid, &status, 0);
	if (status != 0)
		bad("inherit", "the fork's child has another value (status %#x)", status);
	pid = fork();
	if (pid == 0) {
		char *argv[] = {"priority", "exec", NULL};
		execv("/proc/self/exe", argv);
		_exit(2);
	}
	waitpid(pid, &status, 0);
	if (status != 0)
		bad("inherit", "the exec'd program has another value (status %#x)", status);
}

int main(int argc, char **argv)
{
	int err;
	if (argc > 1 && !strcmp(argv[1], "exec"))
		return prio(PRIO_PROCESS, 0, &err) != 19;
	if (argc > 1 && !strcmp(argv[1], "fresh")) {
		int p = prio(PRIO_PROCESS, 0, &err);
		if (p != 0)
			bad("fresh", "nice %d at the start, not 0", p);
		else
			printf("fresh ok\n");
	}
	void (*cases[])(void) = {case_get, case_set, case_inherit};
	const char *names[] = {"get", "set", "inherit"};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int before = failed;
		failed = 0;
		cases[i]();
		if (!failed)
			printf("%s ok\n", names[i]);
		failed |= before;
	}
	fflush(stdout);
	return failed;
}
