/* Signals on the alternate stack, as Linux delivers them: a SIGSEGV raised again in its own
 * handler (SA_NODEFER) nests lower on that stack, sigaltstack is EPERM while on it, and a frame
 * that would run off its bottom is not written below it: the process dies of SIGSEGV. Faults
 * are writes to address 0 (page 0 is never writable). Prints "NAME ok" per case passed, else
 * what differed; exit 1 if any did. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include "caseout.h"

#define HALF 32768

/* the alternate stack is its upper half: the lower half is there to be written on if a frame
 * ran off the bottom, so that only the delivery's check can kill the process */
static char mem[2 * HALF] __attribute__((aligned(64)));
static volatile int refaults, off_stack, eperm;
static char *volatile low;

/* a write to address 0: 3 bytes (48 89 00) the handler steps over */
static void fault(void)
{
	__asm__ volatile("xor %%eax, %%eax\n\tmov %%rax, (%%rax)" ::: "rax", "memory");
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)si;
	char here = 0;
	stack_t ss, other = {.ss_sp = mem, .ss_size = HALF};
	if (sigaltstack(NULL, &ss) || !(ss.ss_flags & SS_ONSTACK))
		off_stack = 1;
	if (sigaltstack(&other, NULL) != -1 || errno != EPERM)
		eperm = 0;
	if (&here < low)
		low = &here;
	if (refaults > 0) {
		refaults--;
		fault();
	}
	((ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP] += 3;
}

int main(void)
{
	stack_t ss = {.ss_sp = mem + HALF, .ss_size = HALF};
	struct sigaction sa = {.sa_sigaction = on_segv,
			       .sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER};
	if (sigaltstack(&ss, NULL) || sigaction(SIGSEGV, &sa, NULL))
		return bad("setup", "errno %d", errno), 1;
	low = mem + 2 * HALF;
	eperm = 1;
	fault();
	char *one = low;
	if (off_stack || one >= mem + 2 * HALF || one <= mem + HALF)
		bad("handler", "not on the alternate stack");
	else if (!eperm)
		bad("handler", "sigaltstack while on it: not EPERM");
	else
		printf("handler ok\n");
	if (sigaltstack(NULL, &ss) || ss.ss_flags & SS_ONSTACK)
		bad("handler", "still on the alternate stack after it");
	refaults = 1;
	fault();
	char *two = low;
	if (off_stack || two >= one || two <= mem + HALF)
		bad("nested", "the second fault's handler is not below the first's");
	else
		printf("nested ok\n");
	/* enough faults in a row that their frames need a little more than the stack: the frame
	 * that does not fit kills the process */
	uintptr_t frame = (uintptr_t)(one - two);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		refaults = (int)((HALF + frame) / (frame ? frame : 1));
		fault();
		_exit(0);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGSEGV)
		bad("overflow", "off the bottom: status %#x, not killed by SIGSEGV", status);
	else
		printf("overflow ok\n");
	fflush(stdout);
	return failed;
}
