/* setitimer's timers across fork and execve, as Linux keeps them: a fork's child starts with
 * none, the program execve runs goes on with them (it reads what is left, and the timer fires
 * there). Prints "NAME ok" per case passed, else what differed; exit 1 if any did. With "left"
 * or "fires" it is the exec'd program: exit 0 if its ITIMER_REAL has time left, or fires. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "caseout.h"

static volatile sig_atomic_t rang;

static void on_alarm(int sig)
{
	(void)sig;
	rang = 1;
}

/* the exec'd program: what it finds of the timer its former self set */
static int execd(const char *what)
{
	struct itimerval v;
	if (!strcmp(what, "left"))
		return getitimer(ITIMER_REAL, &v) || (!v.it_value.tv_sec && !v.it_value.tv_usec) ||
		       v.it_value.tv_sec > 100;
	signal(SIGALRM, on_alarm);
	for (int i = 0; i < 500 && !rang; i++) /* up to 5 s for a 50 ms timer */
		nanosleep(&(struct timespec){0, 10000000}, NULL);
	return !rang;
}

/* forks; the child sets a timer of 100 s and execs this program with arg (or, without one,
 * exits 0 if it has no timer) */
static int child_status(const char *arg)
{
	int status = -1;
	pid_t pid = fork();
	if (pid == 0) {
		if (!arg) {
			struct itimerval v;
			_exit(getitimer(ITIMER_REAL, &v) || v.it_value.tv_sec ||
			      v.it_value.tv_usec);
		}
		struct itimerval v = {{0, 0}, {100, 0}}; /* a fork's child has none to keep */
		setitimer(ITIMER_REAL, &v, NULL);
		char *argv[] = {"itimers", (char *)arg, NULL};
		execv("/proc/self/exe", argv);
		_exit(2);
	}
	waitpid(pid, &status, 0);
	return status;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		return execd(argv[1]);
	struct itimerval v = {{0, 0}, {100, 0}}, off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &v, NULL);
	int st = child_status(NULL);
	if (st)
		bad("fork", "the child has its parent's timer (status %#x)", st);
	else
		printf("fork ok\n");
	st = child_status("left");
	if (st)
		bad("exec", "no time left after execve (status %#x)", st);
	else
		printf("exec ok\n");
	setitimer(ITIMER_REAL, &off, NULL);
	/* the child's copy fires 50 ms on, in the program it execs */
	pid_t pid = fork();
	if (pid == 0) {
		struct itimerval soon = {{0, 0}, {0, 50000}};
		setitimer(ITIMER_REAL, &soon, NULL);
		char *cargv[] = {"itimers", "fires", NULL};
		execv("/proc/self/exe", cargv);
		_exit(2);
	}
	int status = -1;
	waitpid(pid, &status, 0);
	if (status)
		bad("fires", "the timer did not fire in the exec'd program (status %#x)", status);
	else
		printf("fires ok\n");
	fflush(stdout);
	return failed;
}
