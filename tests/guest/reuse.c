/* reuse: nothing a process leaves in its machine reaches the process given that machine next. */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define REGION (64 * 1024)
#define ROUNDS 8

extern char **environ;

/* never written by the parent: a child's write to it lands on a page the parent has none of */
static volatile unsigned char global[2 * 4096];

static unsigned mxcsr(void)
{
	unsigned m;
	__asm__ volatile("stmxcsr %0" : "=m"(m));
	return m & ~0x3fU; /* the controls, not the sticky exception flags */
}

static unsigned fcw(void)
{
	unsigned short w;
	__asm__ volatile("fnstcw %0" : "=m"(w));
	return w;
}

/* what a careless process leaves: new memory written, a global written, the FPU's controls
 * changed (rounding, flush-to-zero, precision) */
static void dirty(void)
{
	unsigned char *p =
	    mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p != MAP_FAILED)
		memset(p, 0xa5, REGION);
	for (size_t i = 0; i < sizeof(global); i++)
		global[i] = 0x5a;
	unsigned m = 0xff80;
	unsigned short w = 0x0c7f;
	__asm__ volatile("ldmxcsr %0" : : "m"(m));
	__asm__ volatile("fldcw %0" : : "m"(w));
}

/* what the next process finds */
static void look(const char *who)
{
	unsigned char *p =
	    mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	size_t mem = 0, glob = 0;
	for (size_t i = 0; p != MAP_FAILED && i < REGION; i++)
		mem += p[i] != 0;
	for (size_t i = 0; i < sizeof(global); i++)
		glob += global[i] != 0;
	printf("%s: new memory zero %d, global zero %d, mxcsr %#x, fcw %#x\n", who,
	       p != MAP_FAILED && !mem, !glob, mxcsr(), fcw());
	fflush(stdout);
}

/* a child that runs fn (fork) or this program with argument arg (exec), waited for */
static int child(void (*fn)(void), const char *arg)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (arg) {
			char *const argv[] = {"reuse", (char *)arg, NULL};
			execve("/proc/self/exe", argv, environ);
			_exit(127);
		}
		fn();
		_exit(0);
	}
	int st;
	return waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st) ? 0 : -1;
}

static void look_fork(void)
{
	look("fork child");
}

/* "reuse fork" / "reuse exec", or the request "fork" / "exec" (read first: a snapshot taken
 * there makes the parent warm): ROUNDS times a process that dirties its machine, then one
 * that looks at its own; "dirty" and "look" are the exec'd programs; "looks" execs lookers
 * alone (another function dirtied the machines) */
int main(int argc, char **argv)
{
	char mode[16] = "";
	if (argc > 1) {
		snprintf(mode, sizeof(mode), "%s", argv[1]);
	} else {
		ssize_t n = read(0, mode, sizeof(mode) - 1);
		mode[n > 0 ? n : 0] = 0;
		mode[strcspn(mode, "\n")] = 0;
	}
	if (!strcmp(mode, "dirty")) {
		dirty();
		return 0;
	}
	if (!strcmp(mode, "look")) {
		look("exec'd");
		return 0;
	}
	/* "looks": exec'd processes that look only, on machines some other program left */
	int looks = !strcmp(mode, "looks"), exec = looks || !strcmp(mode, "exec");
	if (!exec && strcmp(mode, "fork"))
		return 2;
	for (int i = 0; i < ROUNDS; i++)
		if ((!looks && child(dirty, exec ? "dirty" : NULL)) ||
		    child(look_fork, exec ? "look" : NULL))
			return 3;
	look("parent");
	return 0;
}
