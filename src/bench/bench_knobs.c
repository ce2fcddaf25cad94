/* Host kernel settings a benchmark changes (KSM's, vm.max_map_count), put back by a guard
 * process when the benchmark ends or dies, SIGKILL included: a killed run used to leave ksmd
 * scanning. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench_knobs.h"

int bench_knob_write(const char *path, const char *v)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC); /* O_TRUNC: as a shell's > does */
	if (fd < 0)
		return -1;
	size_t len = strlen(v);
	int rc = write(fd, v, len) == (ssize_t)len ? 0 : -1;
	return close(fd) || rc ? -1 : 0;
}

static int knob_read(const char *path, char *v, size_t len)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	v[0] = 0;
	int ok = fgets(v, (int)len, f) != NULL;
	fclose(f);
	v[strcspn(v, "\n")] = 0;
	return ok ? 0 : -1;
}

/* the guard: only async-signal-safe calls, for the parent may have threads */
static void knobs_guard(const struct bench_knobs *k, int rfd)
{
	/* none of the bench's descriptors held (another guard's pipe among them: its end would
	 * never come) */
	if (rfd > 3)
		close_range(3, (unsigned)rfd - 1, 0);
	close_range((unsigned)rfd + 1, ~0U, 0);
	setsid(); /* out of the process group a terminal or a test harness signals */
	signal(SIGINT, SIG_IGN), signal(SIGTERM, SIG_IGN), signal(SIGHUP, SIG_IGN);
	char c;
	while (read(rfd, &c, 1) < 0 && errno == EINTR)
		;
	for (int i = k->n - 1; i >= 0; i--) /* in reverse: KSM's run goes back last */
		bench_knob_write(k->path[i], k->old[i]);
	_exit(0);
}

int bench_knobs_hold(struct bench_knobs *k, const char *const *paths, int n)
{
	if (n < 0 || n > BENCH_KNOBS_MAX)
		return -1;
	k->n = n, k->wfd = -1, k->guard = -1;
	for (int i = 0; i < n; i++)
		if ((size_t)snprintf(k->path[i], sizeof(k->path[i]), "%s", paths[i]) >=
			sizeof(k->path[i]) ||
		    knob_read(k->path[i], k->old[i], sizeof(k->old[i])))
			return -1;
	int p[2];
	if (pipe2(p, O_CLOEXEC))
		return -1;
	k->guard = fork();
	if (k->guard == 0) {
		close(p[1]);
		knobs_guard(k, p[0]);
	}
	close(p[0]);
	if (k->guard < 0) {
		close(p[1]);
		return -1;
	}
	k->wfd = p[1];
	return 0;
}

void bench_knobs_release(struct bench_knobs *k)
{
	if (k->wfd < 0)
		return;
	close(k->wfd);
	k->wfd = -1;
	while (waitpid(k->guard, NULL, 0) < 0 && errno == EINTR)
		;
}
