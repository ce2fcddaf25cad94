/* The function server's state: its limits, the table's entries and loaded versions, struct srv. */
#ifndef EMBER_SRV_CORE_H
#define EMBER_SRV_CORE_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "base/base.h"
#include "ember/abi.h"
#include "ember/ember.h"
#include "server/srv_serve.h"

#define SRV_NAME_MAX	   64 /* a name is [a-z0-9][a-z0-9-_.]{0,62} */
#define SRV_ERR_MAX	   EMBER_ERR_MAX
#define SRV_PATH_MAX	   (PATH_MAX + 128) /* the state dir (< PATH_MAX) and a file in it */
#define SRV_CALL_ID_MAX	   72
#define SRV_BUDGET_DEFAULT (8ULL << 30) /* --memory-budget */

/* ember_config.threads: what 0 means, and the most ember_load takes (src/proc's) */
#define SRV_THREADS_DEFAULT 256
#define SRV_THREADS_MAX	    4096
/* ember_config.pids: likewise (src/sys's SYS_PIDS_DEFAULT and _MAX) */
#define SRV_PIDS_DEFAULT 64
#define SRV_PIDS_MAX	 1024

struct srv_spec;

/* One loaded version of a function. refs: the table's own plus one per invocation using it. */
struct srv_inst {
	struct ember_function *fn;
	atomic_int refs; /* the one that drops the last unloads it */
	uint64_t mem_bytes;
	struct srv *srv;
	int retired; /* replaced, deleted or never used: its snapshot on disk goes with it */
	char name[SRV_NAME_MAX];    /* --workers: its snapshot goes only where the function runs */
	_Atomic uint64_t cpu_score; /* srv_cpu.c: what its invocations cost, in µs */
	atomic_int costly;	    /* srv_cpu.c: its invocations run in the costly slots */
};

/* A deployed function. Under srv.mu except where noted; the atomics are also changed without it
 * by reg_release, so that the end of a call takes no global lock. */
struct srv_entry {
	struct srv_spec *spec;
	struct srv_inst *inst; /* NULL: not loaded (not yet, or evicted) */
	uint64_t gen;	       /* bumped by every update */
	int loading;	       /* somebody is loading spec now; wait on cv */
	int failed;	       /* the last load of generation fail_gen failed at fail_at */
	uint64_t fail_gen;
	double fail_at;
	char fail_msg[SRV_ERR_MAX];
	atomic_int refs;
	int deleted;
	atomic_uint inflight, queued; /* queued: waiting for a place, on cv with srv.mu */
	atomic_uint_fast64_t invocations;
	_Atomic double last_used; /* set before inflight drops: evictions see it */
	pthread_cond_t cv;
	struct srv_logs *logs;		/* its stderr; kept across updates, closed by a delete */
	struct srv_fn_metrics *metrics; /* its series (by name: they outlive a delete) */
};

struct srv_metrics;
struct srv_async;

struct srv {
	struct srv_options opt; /* the strings point into the buffers below */
	char state[PATH_MAX];
	char runtime_dir[PATH_MAX];
	char backend[16];
	char sharing[8];  /* the default of ember.sharing */
	char syscalls[8]; /* the default of ember.syscalls; "": libember's */
	char address[96];
	char async_dir[24]; /* the async calls' folder in state: "async", a worker's "async-wN" */
	struct MHD_Daemon *mhd;
	struct MHD_Daemon *mhd_peer; /* --workers: on opt.peer_fd, for the other workers */
	struct srv_workers *workers; /* srv_workers_call.c: NULL when alone */
	pthread_mutex_t mu;	     /* the function table and the counters below */
	pthread_cond_t idle;
	struct srv_entry **fns;
	size_t nfns, capfns;
	struct srv_entry **index; /* srv_index.c: fns by name (NULL: scan fns) */
	size_t index_cap;
	atomic_uint auth_fns; /* deployments with ember.auth: none, and no lookup is needed */
	atomic_uint active;   /* requests being handled (idle is signalled, under mu, at 0) */
	atomic_int stopping;
	pthread_mutex_t admin; /* one deployment change at a time */
	pthread_t reaper;
	int reaper_started;
	pthread_cond_t reaper_cv;
	struct srv_metrics *metrics;
	struct ember_budget *budget; /* the guest memory of every function's virtines */
	struct srv_async *async;     /* async.c */
	double started;
	atomic_int ready; /* the deployments in the state folder have been loaded (or tried) */
	int auth; /* the management routes (and functions that ask) need these credentials */
	pthread_mutex_t cpu_mu; /* the costly slots (srv_cpu.c) */
	pthread_cond_t cpu_cv;
	unsigned cpu_busy, cpu_waiting;
	atomic_ulong costly_marked;  /* functions found costly */
	atomic_ulong costly_refused; /* costly calls answered 429: every slot's queue full */
	pthread_mutex_t conn_mu;     /* the connections below */
	struct srv_conn *conns;
	pthread_t conn_watch;
	int conn_watch_started;
	atomic_ulong conns_cut; /* connections shut for reading too slowly */
	char secrets[SRV_PATH_MAX];
	char auth_user[256], auth_pass[256];
	struct srv_cluster *cluster; /* srv_cluster.c: NULL without --cluster */
};

#endif
