/* One run of a conformance case's program: its output kept, its time bounded, its process group
 * checked for what it left behind. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_conf.h"

#define OUT_CAP (8u << 20) /* a run's output kept; the rest is read and dropped */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* the child: its own process group, stdin empty, stdout and stderr into the pipe */
static void child(const char *const *argv, const char *cwd, const char *const *envp, int wfd)
{
	setpgid(0, 0);
	int null = open("/dev/null", O_RDONLY);
	if (null < 0 || dup2(null, 0) < 0 || dup2(wfd, 1) < 0 || dup2(wfd, 2) < 0 ||
	    (cwd && chdir(cwd) < 0))
		_exit(127);
	execve(argv[0], (char *const *)argv, (char *const *)envp);
	_exit(127);
}

/* reads what the pipe has into r (past the cap: dropped); 0 at its end */
static int drain(int fd, struct conf_run *r, size_t *cap)
{
	char tmp[65536];
	ssize_t k = read(fd, tmp, sizeof(tmp));
	if (k < 0)
		return errno == EINTR || errno == EAGAIN ? 1 : 0;
	if (k == 0)
		return 0;
	size_t keep = r->len < OUT_CAP ? OUT_CAP - r->len : 0;
	keep = (size_t)k < keep ? (size_t)k : keep;
	if (keep && r->len + keep + 1 > *cap) {
		size_t c = *cap ? *cap : 65536;
		while (c < r->len + keep + 1)
			c *= 2;
		char *o = realloc(r->out, c);
		if (!o)
			return 1; /* kept short: the run goes on */
		r->out = o;
		*cap = c;
	}
	if (keep && r->out) {
		memcpy(r->out + r->len, tmp, keep);
		r->len += keep;
		r->out[r->len] = 0;
	}
	return 1;
}

int conf_exec(const char *const *argv, const char *cwd, const char *const *envp, double timeout_s,
	      struct conf_run *r)
{
	memset(r, 0, sizeof(*r));
	size_t cap = 65536;
	if (!(r->out = calloc(1, cap)))
		return -1;
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	double t0 = now_s();
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0)
		child(argv, cwd, envp, p[1]);
	setpgid(pid, pid); /* as the child does: either wins the race */
	close(p[1]);
	for (;;) {
		double left = t0 + timeout_s - now_s();
		if (left <= 0 && !r->killed) {
			kill(-pid, SIGKILL);
			r->killed = 1;
		}
		struct pollfd pf = {.fd = p[0], .events = POLLIN};
		int ms = r->killed ? 1000 : (int)(left * 1000) + 1;
		int n = poll(&pf, 1, ms);
		if (n < 0 && errno != EINTR)
			break;
		if (n > 0 && !drain(p[0], r, &cap))
			break;
		if (n == 0 && r->killed)
			break; /* a grandchild kept the pipe: it is killed below */
	}
	close(p[0]);
	while (waitpid(pid, &r->status, 0) < 0 && errno == EINTR)
		;
	r->secs = now_s() - t0;
	/* what its group still holds a moment after it ended (orphans are reaped by init in that
	 * moment, a zombie counts as alive until then): left behind, then killed */
	for (int i = 0; i < 200 && kill(-pid, 0) == 0; i++)
		usleep(1000);
	if (kill(-pid, 0) == 0) {
		r->leaked_procs = 1;
		for (int i = 0; i < 1000 && kill(-pid, SIGKILL) == 0; i++)
			usleep(1000);
	}
	return 0;
}

void conf_run_free(struct conf_run *r)
{
	free(r->out);
	r->out = NULL;
}
