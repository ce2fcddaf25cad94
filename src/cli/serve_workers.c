/* ember serve --workers N: the supervisor. It binds the address N times (SO_REUSEPORT) and an
 * internal loopback socket per worker, keeps them all open, forks the workers (before it starts
 * any thread: it never does), restarts one that dies after a bounded back-off, and passes
 * SIGTERM or SIGINT on to them. A restarted worker gets its sockets back, with the connections
 * that waited on them. */
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/serve.h"
#include "cli/serve_log.h"
#include "ember/ember.h"
#include "vm/vm.h"

#define BACKOFF_MIN_S	 0.1  /* a worker that died is started again after this, */
#define BACKOFF_MAX_S	 10.0 /* doubled each time it dies young, up to this */
#define STABLE_S	 30.0 /* it lived this long: it starts again at once */
#define STOP_GRACE_S	 5.0  /* past the workers' own shutdownTimeout: SIGKILL */
#define FD_RESERVE	 256  /* descriptors a worker keeps for its files and peers */
#define BUDGET_DEFAULT	 (8ULL << 30)
#define FDS_PER_VIRTINE	 2
#define SHUTDOWN_DEFAULT 10.0

#define MIN_S(a, b) ((a) < (b) ? (a) : (b))

struct worker {
	pid_t pid;	 /* 0: not running */
	int listen_fd;	 /* its share of the address */
	int peer_fd;	 /* its internal socket */
	unsigned starts; /* times it was started */
	double started, start_at, backoff;
	int status; /* how it ended, when stopping */
};

unsigned serve_workers_default(const struct srv_options *o)
{
	struct rlimit nofile;
	uint64_t budget = o->memory_budget ? o->memory_budget : BUDGET_DEFAULT;
	uint64_t fds = budget / EMBER_MEM_MIN * FDS_PER_VIRTINE;
	uint64_t conns = o->max_conns ? o->max_conns : 1000;
	if (getrlimit(RLIMIT_NOFILE, &nofile) || nofile.rlim_max == RLIM_INFINITY ||
	    nofile.rlim_max <= conns + FD_RESERVE)
		return 1;
	uint64_t per = nofile.rlim_max - conns - FD_RESERVE;
	uint64_t n = (fds + per - 1) / per;
	return n < 1 ? 1 : n > SERVE_WORKERS_MAX ? SERVE_WORKERS_MAX : (unsigned)n;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* every socket, bound while ember serve may still be root: the address N times, and a loopback
 * socket per worker, whose port the others reach it by */
static int bind_all(struct srv_options *o, struct worker *w, unsigned n, unsigned short *ports,
		    char *err, size_t errlen)
{
	int fds[SERVE_WORKERS_MAX];
	if (srv_listen_many(o->listen, fds, n, err, errlen))
		return -1;
	for (unsigned i = 0; i < n; i++) {
		struct sockaddr_in sa;
		socklen_t sl = sizeof(sa);
		w[i].listen_fd = fds[i];
		if (srv_listen("127.0.0.1:0", &w[i].peer_fd, err, errlen))
			return -1;
		if (getsockname(w[i].peer_fd, (struct sockaddr *)&sa, &sl))
			return snprintf(err, errlen, "internal socket: %s", strerror(errno)), -1;
		ports[i] = ntohs(sa.sin_port);
	}
	return 0;
}

/* this run's secret, which the workers' requests to one another carry: hex of 16 random bytes */
static int make_key(char *key, size_t len, char *err, size_t errlen)
{
	unsigned char b[16];
	if (len < 2 * sizeof(b) + 1 || getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		return snprintf(err, errlen, "no random bytes for the workers' key: %s",
				strerror(errno)),
		       -1;
	for (size_t i = 0; i < sizeof(b); i++)
		snprintf(key + 2 * i, 3, "%02x", b[i]);
	return 0;
}

/* the child: worker i, with its own sockets only */
static void run_worker(struct srv_options *o, const struct serve_host *h, struct worker *w,
		       unsigned n, unsigned i, const sigset_t *set, pid_t parent)
{
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_UNBLOCK, &chld, NULL);
	prctl(PR_SET_PDEATHSIG, SIGTERM); /* ember serve killed: its workers stop too */
	if (getppid() != parent)	  /* killed before the line above: no signal will come */
		_exit(CLI_EXIT_EMBER);
	for (unsigned j = 0; j < n; j++)
		if (j != i)
			close(w[j].listen_fd), close(w[j].peer_fd);
	o->worker = i;
	o->listen_fd = w[i].listen_fd;
	o->peer_fd = w[i].peer_fd;
	o->restarted = w[i].starts > 1;
	_exit(serve_run(o, h, set));
}

static int spawn(struct srv_options *o, const struct serve_host *h, struct worker *w, unsigned n,
		 unsigned i, const sigset_t *set)
{
	pid_t parent = getpid();
	w[i].starts++;
	pid_t pid = fork();
	if (pid < 0) {
		serve_log("error", "cannot start worker %u: %s", i, strerror(errno));
		return -1;
	}
	if (!pid)
		run_worker(o, h, w, n, i, set, parent);
	w[i].pid = pid;
	w[i].started = now_s();
	return 0;
}

/* a worker ended: 1 when the server cannot start (the first worker failed at its first start,
 * before it ever served), else 0 (restarted later, or counted when stopping) */
static int ended(struct srv_options *o, struct worker *w, unsigned i, int st, int stopping)
{
	double t = now_s(), lived = t - w[i].started;
	int pid = (int)w[i].pid;
	int first_failed = i == 0 && w[i].starts == 1 &&
			   !__atomic_load_n(&o->peer_up[0], __ATOMIC_ACQUIRE) && WIFEXITED(st) &&
			   WEXITSTATUS(st) == CLI_EXIT_EMBER;
	__atomic_store_n(&o->peer_up[i], 0, __ATOMIC_RELEASE);
	w[i].pid = 0;
	w[i].status = st;
	if (stopping || first_failed)
		return first_failed;
	w[i].backoff = lived >= STABLE_S ? BACKOFF_MIN_S
		       : w[i].backoff	 ? MIN_S(w[i].backoff * 2, BACKOFF_MAX_S)
					 : BACKOFF_MIN_S;
	w[i].start_at = t + w[i].backoff;
	if (WIFSIGNALED(st))
		serve_log("warning",
			  "worker %u (pid %d) was killed by signal %d; restarting it in %.1f s", i,
			  pid, WTERMSIG(st), w[i].backoff);
	else
		serve_log("warning",
			  "worker %u (pid %d) exited with status %d; restarting it in %.1f s", i,
			  pid, WEXITSTATUS(st), w[i].backoff);
	return 0;
}

static int alive(const struct worker *w, unsigned n)
{
	int k = 0;
	for (unsigned i = 0; i < n; i++)
		k += w[i].pid > 0;
	return k;
}

static void signal_all(const struct worker *w, unsigned n, int sig)
{
	for (unsigned i = 0; i < n; i++)
		if (w[i].pid > 0)
			kill(w[i].pid, sig);
}

/* the supervision loop, until every worker stopped after a signal: the exit status */
static int supervise(struct srv_options *o, const struct serve_host *h, struct worker *w,
		     unsigned n, const sigset_t *set)
{
	sigset_t waitset = *set;
	sigaddset(&waitset, SIGCHLD);
	int stopping = 0, failed = 0, killed = 0;
	double deadline = 0, shutdown = o->shutdown_s > 0 ? o->shutdown_s : SHUTDOWN_DEFAULT;
	for (;;) {
		double t = now_s(), wait = 1.0;
		/* the first worker sweeps the state folder and makes the credentials: the others
		 * start once it serves */
		int first_up = __atomic_load_n(&o->peer_up[0], __ATOMIC_ACQUIRE) || w[0].starts > 1;
		for (unsigned i = 0; i < n && !stopping; i++) {
			if (w[i].pid || (i && !first_up))
				continue;
			if (t >= w[i].start_at)
				spawn(o, h, w, n, i, set);
			else
				wait = MIN_S(wait, w[i].start_at - t);
		}
		if (!first_up || stopping)
			wait =
			    MIN_S(wait, 0.02); /* poll: the first worker's start, or the deadline */
		if (stopping && !alive(w, n))
			break;
		if (stopping && t > deadline && !killed) {
			serve_log("info", "workers still running after %.0f s: killing them",
				  shutdown + STOP_GRACE_S);
			signal_all(w, n, SIGKILL);
			killed = 1;
		}
		struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
		int sig = sigtimedwait(&waitset, NULL, &ts);
		if ((sig == SIGTERM || sig == SIGINT) && !stopping) {
			serve_log("info", "%s: stopping the workers",
				  sig == SIGINT ? "SIGINT" : "SIGTERM");
			stopping = 1;
			deadline = now_s() + shutdown + STOP_GRACE_S;
			signal_all(w, n, sig);
		}
		int st;
		pid_t pid;
		while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
			for (unsigned i = 0; i < n; i++) {
				if (w[i].pid != pid)
					continue;
				if (ended(o, w, i, st, stopping)) {
					serve_log("info", "worker 0 could not start: stopping");
					stopping = failed = 1;
					deadline = now_s() + shutdown + STOP_GRACE_S;
					signal_all(w, n, SIGTERM);
				}
				if (stopping && !(WIFEXITED(st) && !WEXITSTATUS(st)))
					failed = 1;
			}
	}
	serve_log("info", failed || killed ? "stopped, not cleanly" : "stopped");
	return failed || killed ? CLI_EXIT_EMBER : 0;
}

int serve_workers(struct srv_options *o, const struct serve_host *h, unsigned n,
		  const sigset_t *set)
{
	struct worker w[SERVE_WORKERS_MAX] = {0};
	unsigned short ports[SERVE_WORKERS_MAX];
	char err[512];
	struct cli_user u;
	static char key[40];
	if (o->cluster) {
		serve_log("info", "--workers with --cluster is not supported yet: use one worker");
		return CLI_EXIT_EMBER;
	}
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	if ((h->user && cli_user_find(h->user, &u, err, sizeof(err))) ||
	    make_key(key, sizeof(key), err, sizeof(err)))
		goto fail;
	vm_dev_open(); /* inherited by every worker */
	if (bind_all(o, w, n, ports, err, sizeof(err)))
		goto fail;
	if (h->user && (cli_user_state(&u, o->state_dir ? o->state_dir : SRV_DEFAULT_STATE, err,
				       sizeof(err)) ||
			cli_user_become(&u, err, sizeof(err))))
		goto fail;
	int *up =
	    mmap(NULL, sizeof(int) * n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (up == MAP_FAILED) {
		snprintf(err, sizeof(err), "out of memory");
		goto fail;
	}
	o->workers = n;
	o->peer_ports = ports;
	o->peer_up = up;
	o->peer_key = key;
	/* the functions are shared out among the workers: so is the guest memory */
	o->memory_budget = (o->memory_budget ? o->memory_budget : BUDGET_DEFAULT) / n;
	serve_log("info", "%u workers on %s (Ember %s)", n,
		  o->listen ? o->listen : SRV_DEFAULT_LISTEN, EMBER_VERSION);
	return supervise(o, h, w, n, set);
fail:
	serve_log("info", "%s", err);
	return CLI_EXIT_EMBER;
}
