/* `ember serve`: the OpenFaaS-compatible function server, until SIGTERM or SIGINT. */
#include <jansson.h>
#include <malloc.h>
#include <sys/resource.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/opt.h"
#include "ember/ember.h"
#include "cli/sandbox.h"
#include "cli/serve.h"
#include "cli/serve_log.h"
#include "server/srv_serve.h"
#include "vm/vm.h"

#define SERVE_MMAP_THRESHOLD (256 << 10)
#define TRIM_EVERY_S	     10

/* milliseconds, 0 to an hour, as srv_options.costly_after_ms takes them (0: never, -1) */
static int parse_ms(const char *s, int *out)
{
	char *end;
	if (!s || s[0] < '0' || s[0] > '9')
		return -1;
	unsigned long v = strtoul(s, &end, 10);
	if (*end || v > 3600000)
		return -1;
	*out = v ? (int)v : -1;
	return 0;
}

/* what the command line sets */
struct serve_args {
	struct srv_options o;
	struct serve_host h;
	const char *config;
	unsigned workers;
};

/* --costly-after MS: 0 to an hour, as srv_options.costly_after_ms takes them (0: never, -1) */
static const char *costly_after(void *at, const char *s)
{
	return parse_ms(s, at) ? "--costly-after needs milliseconds, 0 to 3600000 (0: never)"
			       : NULL;
}

static const char serve_head[] =
    "usage: ember serve [OPTIONS]\n"
    "\n"
    "Serves functions over HTTP with the OpenFaaS gateway's API: deploy them with\n"
    "POST /system/functions (an executable uploaded with PUT /system/images/NAME, a handler\n"
    "for a runtime such as js or python, or a root filesystem with envProcess), invoke them\n"
    "with POST /function/NAME, or later with\n"
    "POST /async-function/NAME (202 at once; the result goes to X-Callback-Url). Deployments,\n"
    "images and queued async calls are kept in the state directory and come back after a\n"
    "restart. SIGTERM or SIGINT stops accepting connections, lets requests and async calls in\n"
    "flight finish (up to shutdownTimeout) and exits 0. A web console, with the same\n"
    "credentials as the /system/ routes, is at /ui/ (docs/console.md).\n"
    "See docs/server.md.\n"
    "\n"
    "options:\n";
static const char serve_tail[] =
    "\n"
    "The js and lua runtimes are looked for in runtimeDir, else $EMBER_RUNTIME_DIR, else in\n"
    "runtimes/ next to the ember binary (a build tree), else in lib/ember/runtimes/ beside the\n"
    "bin/ folder holding it (an installed ember). A function's stderr is kept in a ring per\n"
    "function, served by GET /system/logs?name=NAME (tail=N, since=TIME, follow=true). The\n"
    "server logs one line per invocation: REPORT RequestId: ... Duration: ... Outcome: ...\n"
    "(docs/server.md). Exit status: 0 after a clean shutdown, 125 when the server cannot start\n"
    "or when a shutdown gave up waiting for requests or async calls in flight (those async\n"
    "calls run again at the next start). With --workers N > 1, ember serve passes SIGTERM or\n"
    "SIGINT on to every worker and exits 0 only when each of them did.\n"
    "";

static const struct opt serve_opts[] = {
    OPT_STRING("listen", 0, struct serve_args, o.listen, "ADDR:PORT",
	       "where to listen (default 127.0.0.1:8080; [::1]:8080 for IPv6;\n"
	       "port 0 picks a free port, printed at start)"),
    OPT_STRING("state", 0, struct serve_args, o.state_dir, "DIR",
	       "deployments, uploaded images and queued async calls (default\n"
	       "./var, created)"),
    OPT_STRING("seed", 0, struct serve_args, o.seed_dir, "DIR",
	       "another node's state folder (a shared file system, a copy): at\n"
	       "start, the deployments and images STATE lacks are copied from it\n"
	       "(not its snapshots: each node builds its own). For a node joining\n"
	       "others behind a balancer (docs/cluster.md)"),
    OPT_STRING("cluster", 0, struct serve_args, o.cluster, "etcd://HOST:PORT[,HOST:PORT...]",
	       "\n"
	       "keep the deployments in etcd (its v3 gateway): a deploy or delete\n"
	       "through any node is one etcd transaction, answered 503 when etcd\n"
	       "cannot take it; every node watches etcd and converges to it, at\n"
	       "start too (no --seed). Needs --store (docs/cluster.md)"),
    OPT_STRING("store", 0, struct serve_args, o.store_dir, "DIR",
	       "with --cluster: the folder of images and files bundles, named by\n"
	       "their SHA-256 and checked when read; shared, or each node's own\n"
	       "(a blob it lacks is fetched from a peer over HTTP)"),
    OPT_STRING("advertise", 0, struct serve_args, o.advertise, "HOST:PORT",
	       "with --cluster: this node as ember lb-config names it (default\n"
	       "the --listen address): its place on the ring of owners"),
    OPT_STRING("secrets", 0, struct serve_args, o.secrets_dir, "DIR",
	       "the management API's credentials, basic-auth-user and\n"
	       "basic-auth-password, as OpenFaaS keeps them (default STATE/secrets;\n"
	       "generated there, mode 0600, when absent: the folder is named on\n"
	       "stderr, never the password). Every /system/ route and the console\n"
	       "(/ui/) need them (HTTP basic auth); function routes only for\n"
	       "deployments with \"ember\": {\"auth\": true}"),
    OPT_FLAG("no-auth", 0, struct serve_args, o.no_auth,
	     "no authentication: anyone who reaches the port can deploy code;\n"
	     "refused on an address other than loopback without --insecure"),
    OPT_FLAG("insecure", 0, struct serve_args, o.insecure, "allow --no-auth on any address"),
    OPT_STRING("user", 0, struct serve_args, h.user, "NAME",
	       "become NAME (its groups, its group, the user; for good) after\n"
	       "opening /dev/kvm and the listening socket, before the state folder\n"
	       "is read: needs root; the state folder must be NAME's (a missing one\n"
	       "is made so)"),
    OPT_FLAG("no-sandbox", 0, struct serve_args, h.no_sandbox,
	     "no seccomp allow-list on the process: for debugging only\n"
	     "(docs/security.md). The sandbox, on by default, kills the server\n"
	     "with SIGSYS and a line on stderr naming the call when it makes a\n"
	     "system call it never needs"),
    OPT_STRING("backend", 0, struct serve_args, o.backend, "NAME",
	       "kvm, ptrace (no hardware isolation; for hosts without /dev/kvm)\n"
	       "or auto (kvm when available, else ptrace); default $EMBER_BACKEND,\n"
	       "else kvm"),
    OPT_STRING("sharing", 0, struct serve_args, o.sharing, "MODE",
	       "how a function's virtines hold its snapshot, unless its\n"
	       "ember.sharing says: upm (default; one copy per sharing domain,\n"
	       "mapped copy-on-write), off (a private copy each) or ksm (private\n"
	       "copies KSM may merge); docs/memory.md"),
    OPT_STRING("syscalls", 0, struct serve_args, o.syscalls, "MODE",
	       "how a function's system calls are served, unless its\n"
	       "ember.syscalls says: guest (default; an in-guest runtime serves\n"
	       "the common ones without an exit; trap where the ptrace backend\n"
	       "cannot map page 0) or trap (every one exits to the host);\n"
	       "default $EMBER_SYSCALLS; docs/server.md"),
    OPT_SIZE("max-body", 0, struct serve_args, o.max_body, "SIZE", 1, 0,
	     "--max-body needs a size such as 6M",
	     "largest invocation body, e.g. 6M (default 6M); larger ones get\n"
	     "413 (deployments, which may carry files, and image uploads:\n"
	     "maxImageSize)"),
    OPT_SIZE("memory-budget", 0, struct serve_args, o.memory_budget, "SIZE", 1, 0,
	     "--memory-budget needs a size such as 8G",
	     "guest memory all virtines may hold (default 8G), never exceeded:\n"
	     "spare virtines are made within it and give their memory up to a\n"
	     "request that needs it; when the loaded functions cannot each have\n"
	     "one, the least recently used idle ones are unloaded (their next\n"
	     "request starts cold from the snapshot on disk)"),
    OPT_FLAG("no-report", 0, struct serve_args, o.no_report,
	     "no REPORT line per invocation in the server's log"),
    OPT_UINT("async-workers", 0, struct serve_args, o.async_workers, "N", 1, MAX_ASYNC_WORKERS,
	     "--async-workers needs a number from 1 to 256",
	     "threads running async calls, 1 to 256 (default 4)"),
    OPT_UINT("async-queue", 0, struct serve_args, o.async_queue, "N", 1, MAX_ASYNC_QUEUE,
	     "--async-queue needs a number from 1 to 1000000",
	     "async calls that may wait for a worker, 1 to 1000000 (default\n"
	     "256); past it POST /async-function answers 429"),
    OPT_CALL("costly-after", 0, struct serve_args, o.costly_after_ms, "MS", costly_after,
	     "a function whose invocations take more than MS ms of CPU on\n"
	     "average (a crash, timeout or limit counting as 3 times MS) is\n"
	     "costly until they are cheap again: its calls wait for one of the\n"
	     "costly slots, so that such calls never take more CPU than those\n"
	     "slots, whatever their number (default 20; 0: never)"),
    OPT_UINT("costly-slots", 0, struct serve_args, o.costly_slots, "N", 1, MAX_COSTLY_SLOTS,
	     "--costly-slots needs a number from 1 to 1024",
	     "costly invocations that run at once, 1 to 1024 (default half\n"
	     "the CPUs, at least 1)"),
    OPT_UINT("costly-queue", 0, struct serve_args, o.costly_queue, "N", 1, MAX_ASYNC_QUEUE,
	     "--costly-queue needs a number from 1 to 1000000",
	     "costly calls that may wait for a slot, 1 to 1000000 (default 64\n"
	     "per slot); past them POST /function answers 429"),
    OPT_UINT("workers", 0, struct serve_args, workers, "N", 1, SERVE_WORKERS_MAX,
	     "--workers needs a number from 1 to 64",
	     "worker processes, 1 to 64, sharing the address (SO_REUSEPORT),\n"
	     "each with its own virtines and sandbox. ember serve supervises\n"
	     "them, restarting one that dies; each function has one owner among\n"
	     "them (a hash of its name), to which the others forward its calls\n"
	     "and deployments (served where they arrive while it is down; a\n"
	     "call in flight in a worker that dies fails, with 502 when it was\n"
	     "forwarded); they share the state folder, and the memory budget\n"
	     "in equal parts. Default: 1, unless the virtines the budget\n"
	     "holds at their smallest (8 MiB of guest memory, 2 descriptors\n"
	     "each) need more descriptors than RLIMIT_NOFILE's hard limit less\n"
	     "maxConnections and 256: then as many as they need\n"
	     "(docs/server.md)"),
    OPT_STRING("config", 0, struct serve_args, config, "FILE",
	       "a JSON object with any of: listen, state, seed, cluster, store,\n"
	       "advertise, secrets, auth\n"
	       "(false: as --no-auth), insecure, user, sandbox (false: as\n"
	       "--no-sandbox), backend, maxBodySize,\n"
	       "maxImageSize (default 128M: images and deployments),\n"
	       "connectionTimeout (seconds a\n"
	       "connection may wait for its next request, default 30),\n"
	       "readTimeout (seconds to read a request, headers and body, once\n"
	       "its first line came, default 30), maxConnections (default 1000),\n"
	       "maxConnectionsPerAddress (from one client address, default a\n"
	       "quarter of maxConnections), shutdownTimeout (seconds,\n"
	       "default 10), runtimeDir, memoryBudget, logRingSize (each function's\n"
	       "kept stderr, default 256K, at least 16K), logRingLines (default\n"
	       "2000), report (false: as --no-report), asyncWorkers, asyncQueue,\n"
	       "costlyAfter (ms, 0: never), costlySlots, costlyQueue, workers;\n"
	       "the command line wins"),
    OPT_END(),
};

static const struct opt_cmd serve_cmd =
    OPT_CMD("serve", serve_head, serve_opts, serve_tail, 22, 0, "unexpected arguments");

/* What needs root comes first: the devices and the listening socket; then the drop to --user,
 * then the sandbox, so that the server reads its state, and every request, under both. A worker
 * of ember serve --workers finds the first two done. */
static int set_up(struct srv_options *o, const struct serve_host *h, char *err, size_t errlen)
{
	struct cli_user u;
	unsigned groups = sbx_groups(o->backend) | SBX_SERVER;
	if (o->workers <= 1 && h->user && cli_user_find(h->user, &u, err, errlen))
		return -1;
	if (o->workers <= 1)
		vm_dev_open();
	if (o->workers <= 1 && srv_listen(o->listen, &o->listen_fd, err, errlen))
		return -1;
	if (o->workers <= 1 && h->user &&
	    (cli_user_state(&u, o->state_dir ? o->state_dir : SRV_DEFAULT_STATE, err, errlen) ||
	     cli_user_become(&u, err, errlen)))
		return -1;
	return h->no_sandbox ? 0 : sbx_install(groups, err, errlen);
}

/* Waits for SIGTERM or SIGINT. Meanwhile, every TRIM_EVERY_S seconds, the free memory inside
 * malloc's arenas goes back to the system: the threads' arenas keep what a burst of requests
 * freed in their middle (fragments of outputs and bodies below the mmap threshold), which glibc
 * returns only from their top; after two storms of bench/hostile.sh the server had kept 3 MiB
 * more each time. */
static int wait_for_signal(const sigset_t *set)
{
	struct timespec every = {TRIM_EVERY_S, 0};
	int sig;
	while ((sig = sigtimedwait(set, NULL, &every)) < 0)
		malloc_trim(0);
	return sig;
}

/* a worker tells ember serve and the others whether it serves (its pid, or 0) */
static void mark_up(const struct srv_options *o, int pid)
{
	if (o->workers > 1 && o->peer_up)
		__atomic_store_n(&o->peer_up[o->worker], pid, __ATOMIC_RELEASE);
}

int serve_run(struct srv_options *o, const struct serve_host *h, const sigset_t *set)
{
	struct srv *s;
	char err[512];
	serve_log_start();
	sbx_on_kill(serve_log_emergency);
	if (set_up(o, h, err, sizeof(err)) || srv_start(o, &s, err, sizeof(err))) {
		serve_log("info", "%s", err);
		serve_log_stop();
		return CLI_EXIT_EMBER;
	}
	if (o->workers > 1)
		serve_log("info", "worker %u (pid %d) listening on %s (Ember %s)", o->worker,
			  (int)getpid(), srv_address(s), EMBER_VERSION);
	else
		serve_log("info", "listening on %s (Ember %s)", srv_address(s), EMBER_VERSION);
	mark_up(o, getpid());
	int sig = wait_for_signal(set);
	mark_up(o, 0);
	serve_log("info", "%s: shutting down", sig == SIGINT ? "SIGINT" : "SIGTERM");
	unsigned left = srv_shutdown(s);
	if (left) /* requests were abandoned: not a clean shutdown */
		serve_log("info", "gave up waiting for %u requests and async calls", left);
	else
		serve_log("info", "stopped");
	serve_log_stop();
	return left ? CLI_EXIT_EMBER : 0;
}

int cli_serve(int argc, char **argv)
{
	struct serve_args a = {.o = {.log = serve_log_line}};
	int optind, end = opt_parse(&serve_cmd, &a, argc, argv, &optind);
	if (end >= 0)
		return end;
	struct srv_options o = a.o;
	struct serve_host h = a.h;
	unsigned workers = a.workers;
	json_t *cfg = NULL;
	if (a.config && serve_read_config(a.config, &cfg, &o, &h, &workers)) {
		json_decref(cfg);
		return CLI_EXIT_EMBER;
	}
	/* every thread inherits this mask; only sigwait below sees these signals */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* Buffers of megabytes (request bodies, a function's output) come and go on many threads.
	 * glibc raises its mmap threshold after every large free, up to 32 MiB, so that later ones
	 * come from the threads' arenas, which keep the memory once freed: after a storm of large
	 * outputs the server stayed 35 MiB larger. A fixed threshold keeps them mmapped, and each
	 * free gives its memory back. */
	mallopt(M_MMAP_THRESHOLD, SERVE_MMAP_THRESHOLD);
	/* every connection and every virtine holds descriptors (a KVM machine four): the soft
	 * limit, often 1024, would refuse them long before maxConnections */
	struct rlimit nofile;
	if (!getrlimit(RLIMIT_NOFILE, &nofile) && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
	if (!workers)
		workers = serve_workers_default(&o);
	int rc = workers > 1 ? serve_workers(&o, &h, workers, &set) : serve_run(&o, &h, &set);
	json_decref(cfg);
	return rc;
}
