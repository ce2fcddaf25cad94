/* Runs one peer start: spawn in its own process group, feed stdin, read until the expected output,
 * bounded by a timeout that kills the whole group (runsc's KVM platform hangs on PVM). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/bench_peer.h"
#include "cli/cli.h"

extern char **environ;

#define OUT_MAX 65536

int peer_which(const char *name, char *out, size_t len)
{
	const char *path = getenv("PATH");
	char *dup = strdup(
	    path && *path ? path : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	int rc = -1;
	for (char *save = NULL, *d = strtok_r(dup, ":", &save); dup && rc && d;
	     d = strtok_r(NULL, ":", &save)) {
		snprintf(out, len, "%s/%s", d, name);
		rc = access(out, X_OK);
	}
	free(dup);
	return rc;
}

/* spawns c in a new process group with stdin (a pipe or /dev/null) and stdout on pipes */
static pid_t spawn(const struct peer_cmd *c, int *in, int *out)
{
	int pi[2] = {-1, -1}, po[2];
	if (pipe2(po, O_CLOEXEC))
		return -1;
	if (!c->stdin_null && pipe2(pi, O_CLOEXEC)) {
		close(po[0]), close(po[1]);
		return -1;
	}
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
	posix_spawnattr_setpgroup(&at, 0);
	if (c->stdin_null)
		posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	else
		posix_spawn_file_actions_adddup2(&fa, pi[0], 0);
	posix_spawn_file_actions_adddup2(&fa, po[1], 1);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	pid_t pid;
	if (posix_spawn(&pid, c->argv[0], &fa, &at, c->argv, environ))
		pid = -1;
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (pi[0] >= 0)
		close(pi[0]);
	close(po[1]);
	*in = pi[1];
	*out = po[0];
	if (pid < 0) {
		if (*in >= 0)
			close(*in);
		close(*out);
	}
	return pid;
}

/* reads out until want shows (with stop) or EOF, or the deadline: 1 want seen, 0 not, -1 timed out
 */
static int read_until(int out, const char *want, int stop, double deadline, char *buf, size_t *len)
{
	for (;;) {
		if (stop && strstr(buf, want))
			return 1;
		int left = (int)((deadline - bench_now_us()) / 1000);
		if (left <= 0)
			return -1;
		struct pollfd p = {out, POLLIN, 0};
		if (poll(&p, 1, left) <= 0)
			continue;
		if (*len == OUT_MAX - 1) { /* keep the tail: want is short */
			memmove(buf, buf + OUT_MAX / 2, OUT_MAX / 2);
			*len = OUT_MAX / 2 - 1;
		}
		ssize_t r = read(out, buf + *len, OUT_MAX - 1 - *len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return strstr(buf, want) != NULL;
		*len += (size_t)r;
		buf[*len] = 0;
	}
}

/* waits for pid up to the deadline, then kills its group; the wait status */
static int reap(pid_t pid, double deadline)
{
	int st = 0;
	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (bench_now_us() > deadline) {
			kill(-pid, SIGKILL);
			waitpid(pid, &st, 0);
			break;
		}
		usleep(200);
	}
	kill(-pid, SIGKILL); /* whatever of the group is left (runsc's sandbox, a gofer) */
	return st;
}

static int status_of(int st)
{
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

double peer_run(const struct peer_cmd *c, const void *req, size_t len, char *err, size_t errlen)
{
	int in, out;
	char *buf = calloc(1, OUT_MAX);
	double t = bench_now_us(), dt = -1;
	pid_t pid = buf ? spawn(c, &in, &out) : -1;
	if (pid < 0) {
		snprintf(err, errlen, "cannot start %s: %s", c->argv[0], strerror(errno));
		free(buf);
		return -1;
	}
	signal(SIGPIPE, SIG_IGN);
	if (in >= 0) {
		base_write_all(in, req, len);
		close(in);
	}
	size_t got = 0;
	double deadline = t + c->timeout_ms * 1000.0;
	int seen = read_until(out, c->want, c->stop_at_want, deadline, buf, &got);
	double at = bench_now_us();
	if (seen < 0 || (seen && c->stop_at_want))
		kill(-pid, SIGKILL);
	int st = reap(pid, deadline);
	double end = bench_now_us();
	close(out);
	if (seen < 0)
		snprintf(err, errlen, "timed out after %d ms (no '%s' in its output)",
			 c->timeout_ms, c->want);
	else if (!seen)
		snprintf(err, errlen, "no '%s' in its output (exit status %d): %.80s", c->want,
			 status_of(st), buf);
	else if (!c->stop_at_want && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
		snprintf(err, errlen, "exit status %d", status_of(st));
	else
		dt = (c->stop_at_want ? at : end) - t;
	free(buf);
	return dt;
}
