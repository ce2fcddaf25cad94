/* The function server's internals: deployments, the function table, requests, metrics. */
#ifndef EMBER_SRV_IMPL_H
#define EMBER_SRV_IMPL_H

#include <jansson.h>
#include <limits.h>
#include <microhttpd.h>
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

/* A deployment, validated. Immutable once made; shared by reference (refs). */
struct srv_spec {
	atomic_int refs;
	char name[SRV_NAME_MAX];
	char image[SRV_NAME_MAX]; /* an uploaded image, or "" */
	char runtime[16];	  /* a runtime's name (img_runtime_find), or "" */
	/* envProcess: a program of the function's files and its arguments (NULL-terminated,
	 * pointing into process_buf), or NULL */
	char **process;
	char *process_buf;
	char syscalls[8]; /* "trap" (every syscall exits), "guest" (the in-guest runtime) or "" (not
			     given: the server's default) */
	char sharing[8];  /* ember.sharing: "upm", "off", "ksm", or "" (the server's default) */
	/* ember.sharingDomain, else the deployment's namespace, else "default": the tenant whose
	 * functions' identical pages are held once (never across two domains) */
	char domain[SRV_NAME_MAX];
	const char *code; /* the runtime's source (points into doc) */
	size_t code_len;
	uint8_t *files; /* the function's files: a tar or zip archive, decoded from doc's base64 */
	size_t files_len;
	char files_sha256[65]; /* their digest, in hex (the console shows it) */
	char **envp;	       /* "K=V", NULL-terminated */
	const char *content_type;
	uint64_t mem_bytes; /* 0: Ember's default */
	double timeout_s;   /* 0: Ember's default */
	double keep_alive_s;
	unsigned min_warm, max_concurrency, queue;
	/* ember.cpus, ember.threads: its virtines' vCPUs and an invocation's threads at most; 0
	 * when not given (ember_config's defaults, 1 and SRV_THREADS_DEFAULT) */
	unsigned cpus, threads;
	unsigned pids;	  /* ember.pids: an invocation's processes at most; 0: 64 */
	int require_auth; /* ember.auth: invocations need the management credentials too */
	char pin[SRV_NAME_MAX + 32]; /* functions/<pin>: this version's image ("" for none) */
	json_t *doc;		     /* the deployment as stored, createdAt included */
};

/* srv_spec.c (srv_name_ok, and srv_imgref.c's srv_image_name, are in srv_serve.h) */
/* Validates a deployment; created is its createdAt (NULL: now). */
int spec_parse(const json_t *in, const char *created, struct srv_spec **out, char *err,
	       size_t errlen);
struct srv_spec *spec_get(struct srv_spec *sp);
void spec_put(struct srv_spec *sp);
/* srv_parse.c */
int srv_parse_duration(const json_t *v, double *out);
double srv_now(void); /* monotonic seconds (base_now_ns) */
void srv_rfc3339(char *buf, size_t len);
void srv_call_id(char *buf, size_t len);		       /* a random UUID */
void srv_fixed(char *buf, size_t len, double v, int decimals); /* "%.*f" of v >= 0 */
void srv_copy(char *dst, size_t len, const char *src);	       /* bounded, terminated */
/* base64 of n bytes (a multiple of 4, padded) decoded into a new buffer *out of *len bytes: 0,
 * -1 when it is not base64, -2 when out of memory */
int srv_base64(const char *b64, size_t n, uint8_t **out, size_t *len);

/* One loaded version of a function. refs: the table's own plus one per invocation using it. */
struct srv_inst {
	struct ember_function *fn;
	atomic_int refs; /* the one that drops the last unloads it */
	uint64_t mem_bytes;
	struct srv *srv;
	int retired; /* replaced, deleted or never used: its snapshot on disk goes with it */
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
	struct MHD_Daemon *mhd;
	pthread_mutex_t mu; /* the function table and the counters below */
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
	struct srv_async *async;     /* srv_async.c */
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

/* srv_auth.c: HTTP basic authentication */
struct srv_req;
int auth_init(struct srv *s, char *err, size_t errlen); /* reads or generates the credentials */
int auth_ok(const struct srv *s, struct MHD_Connection *conn);
enum MHD_Result auth_deny(struct srv_req *r); /* 401 with WWW-Authenticate */
/* 1: a browser sent this request (not GET or HEAD) for another site's page */
int auth_cross_site(struct MHD_Connection *conn, const char *method);
/* refuses an address other than loopback when authentication is off and not --insecure */
struct sockaddr;
int auth_listen_ok(const struct srv *s, const struct sockaddr *sa, char *err, size_t errlen);

/* srv_conn.c: connections that read too slowly (slowloris) */
enum conn_phase { CONN_REQUEST, CONN_HANDLING, CONN_DONE };
void conn_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
		 enum MHD_ConnectionNotificationCode toe); /* MHD_OPTION_NOTIFY_CONNECTION */
/* a request's line arrived, its handler (or an early reply) runs, it is done */
void conn_phase(struct srv *s, struct MHD_Connection *conn, enum conn_phase phase);
int conn_watch_start(struct srv *s); /* the thread that enforces the deadlines */
void conn_watch_stop(struct srv *s); /* after stopping is set and reaper_cv broadcast */

/* srv_store.c: the state directory. Writes return 0 or a kind of failure of ember.h
 * (EMBER_ERR_IO, EMBER_ERR_NOMEM; EMBER_ERR_IMAGE: pin_link of an image never uploaded). */
int store_init(struct srv *s, char *err, size_t errlen);
int store_path(const struct srv *s, const char *dir, const char *name, const char *ext, char *buf,
	       size_t len);
int store_write(const struct srv *s, const char *dir, const char *name, const char *ext,
		const void *data, size_t len, char *err, size_t errlen);
/* Writes data to a new temporary file in dir, fsynced, with the given mode; path receives it. */
int store_temp(const struct srv *s, const char *dir, const void *data, size_t len, int mode,
	       char *path, size_t pathlen, char *err, size_t errlen);
int store_commit(const struct srv *s, const char *dir, const char *tmp, const char *name,
		 const char *ext, char *err, size_t errlen);
int store_remove(const struct srv *s, const char *dir, const char *name, const char *ext);
int store_sync(const struct srv *s, const char *dir); /* fsync of the folder: its names */
/* a failure of the state folder: the server's, whatever errno says (no space, no file slot, a
 * read-only or failing disk), unless the host is out of memory */
int store_kind(int e);
int store_restore(struct srv *s);
/* srv_seed.c: what the state lacks of opt.seed_dir's deployments and images, copied (before
 * the restore); 0 (nothing to do, or done), -1 with err */
int store_seed(struct srv *s, char *err, size_t errlen);

/* srv_pin.c: a deployment's own copy of its image, functions/NAME.image.N */
/* Links images/<image> to a new temporary file in functions/ (path): a deployment keeps the
 * version it was deployed with, whatever is uploaded later. */
int pin_link(const struct srv *s, const char *image, char *path, size_t pathlen, char *err,
	     size_t errlen);
/* Moves the temporary link to a name no other version has, in sp->pin (unlinked on failure). */
int pin_commit(const struct srv *s, const char *tmp, struct srv_spec *sp, char *err, size_t errlen);
int pin_path(const struct srv *s, const char *pin, char *buf, size_t len);
void pin_remove(const struct srv *s, const char *pin);
/* sets sp->pin from the stored deployment (doc, as read from its file) */
void pin_restore(const struct srv *s, const json_t *doc, struct srv_spec *sp);
int pin_sweep(struct srv *s); /* removes the pins no deployment names; returns how many */

/* srv_load.c: these return 0 or a kind of failure of ember.h (EMBER_ERR_*) */
/* image: the executable to load (NULL: the deployment's pinned copy, else the uploaded one) */
int load_spec(struct srv *s, const struct srv_spec *sp, const char *image, struct srv_inst **out,
	      char *err, size_t errlen);
int load_check_image(struct srv *s, const char *path, struct ember_info *info, char *err,
		     size_t errlen);
void inst_unload(struct srv_inst *in);
struct srv_req;
/* the one table from a kind of failure (of a load, or of the state folder) to an HTTP status:
 * the deployment's faults are 400, the server's 5xx; the body is {"error", "kind"} */
enum MHD_Result srv_reply_load_error(struct srv_req *r, int kind, const char *err);

/* srv_cpu.c: costly functions. A loaded function's score is a moving average of the CPU time
 * its invocations took (ember_result.cpu_us; each counts 1/CPU_SCORE_DECAY), a failure counting as
 * at least CPU_FAILURE_WEIGHT times costlyAfter; above costlyAfter it is costly, and its
 * invocations wait for one of the costlySlots (cpu_enter: CPU_SLOT, or CPU_FULL when costlyQueue
 * calls wait already, by default COSTLY_QUEUE_PER_SLOT per slot, and the caller is not patient;
 * CPU_FREE for the others), given back by cpu_leave. */
#define CPU_SCORE_DECAY	      4
#define CPU_FAILURE_WEIGHT    3
#define DEFAULT_COSTLY_MS     20
#define COSTLY_QUEUE_PER_SLOT 64
enum { CPU_FREE, CPU_SLOT, CPU_FULL };
uint64_t cpu_score(uint64_t score, uint64_t took_us, int failed, uint64_t limit_us);
void cpu_start(struct srv *s);
void cpu_account(struct srv *s, struct srv_inst *in, const struct ember_result *res);
int cpu_enter(struct srv *s, struct srv_inst *in, int patient);
void cpu_leave(struct srv *s, int entered);
void cpu_gauges(struct srv *s, unsigned *busy, unsigned *waiting);

/* srv_registry.c: the function table */
enum { REG_OK, REG_NOTFOUND, REG_BUSY, REG_LOADERR, REG_EXISTS, REG_NOMEM };
struct srv_call {
	struct srv_entry *e;
	struct srv_inst *inst;
	struct srv_spec *spec; /* the deployment inst was loaded from */
	uint64_t load_us;      /* this call loaded the function first */
};
/* patient: wait for a place past the function's own queue (async calls, bounded by theirs) */
int reg_acquire(struct srv *s, const char *name, struct srv_call *c, int patient, char *err,
		size_t errlen);
void reg_release(struct srv *s, struct srv_call *c);
int reg_add(struct srv *s, struct srv_spec *sp, struct srv_inst *in);	  /* takes both */
int reg_replace(struct srv *s, struct srv_spec *sp, struct srv_inst *in); /* takes both */
int reg_remove(struct srv *s, const char *name);
struct srv_spec *reg_spec(struct srv *s, const char *name); /* a reference, or NULL */
json_t *reg_status(struct srv *s, const char *name);	    /* NULL: no such function */
json_t *reg_list(struct srv *s);
void reg_preload(struct srv *s);
int reg_load(struct srv *s, const char *name); /* one function loaded now: 0, or -1 (logged) */
void reg_evict(struct srv *s);
void reg_free(struct srv *s);
struct reg_gauges {
	size_t functions;
	uint64_t alive, ready;
};
void reg_gauges(struct srv *s, struct reg_gauges *g);
/* with s->mu held: */
struct srv_entry *reg_find(struct srv *s, const char *name, size_t *idx);
void index_rebuild(struct srv *s); /* after fns changed */
struct srv_entry *index_find(const struct srv *s, const char *name);
void index_free(struct srv *s);
struct srv_inst *reg_inst_put(struct srv_inst *in); /* drops a reference: the one to unload */
void reg_entry_put(struct srv_entry *e);

/* srv_http.c: requests and replies */
struct srv_req;
typedef enum MHD_Result (*srv_handler)(struct srv *s, struct srv_req *r);
struct srv_route {
	const char *method; /* NULL: any */
	const char *path;   /* exact, or the part before the name ('*' the name, then the rest) */
	int match;	    /* ROUTE_EXACT, ROUTE_NAME or ROUTE_NAME_REST */
	int body;	    /* BODY_REQUEST or BODY_IMAGE: which limit applies */
	srv_handler fn;
};
enum { ROUTE_EXACT, ROUTE_NAME, ROUTE_NAME_REST };
enum { BODY_REQUEST, BODY_IMAGE };
/* a request answered without its handler (bad route, too large): what to answer */
struct srv_early {
	unsigned status;
	char msg[SRV_ERR_MAX];
};
struct srv_req {
	struct MHD_Connection *conn;
	struct srv_early early;
	const struct srv_route *route;
	const char *method;
	char name[SRV_NAME_MAX];
	char *path;  /* the URL's path, percent-decoded */
	char *query; /* the query string as sent, without the '?' ("" when none) */
	uint8_t *body;
	size_t len, cap;
	uint64_t limit;
	uint64_t dropped; /* body bytes read and dropped after an early error */
	int too_large;
	unsigned status; /* of the reply queued (0: none yet) */
	int authed;	 /* the route needed the credentials, and they were given */
	double t0;	 /* when its headers arrived */
};
struct srv_header {
	const char *name, *value;
};
enum MHD_Result srv_reply(struct srv_req *r, unsigned status, const char *ctype, void *buf,
			  size_t len, int take, const struct srv_header *hdrs, size_t nhdrs);
enum MHD_Result srv_reply_json(struct srv_req *r, unsigned status, json_t *j);
enum MHD_Result srv_reply_error(struct srv_req *r, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* the request body as JSON, or NULL after replying 400 (*ret holds the reply's result) */
json_t *srv_body_json(struct srv_req *r, enum MHD_Result *ret);
int http_start(struct srv *s, char *err, size_t errlen);
/* The route of a request (r->method set) to the (decoded) url: r->route, r->name and r->limit
 * set; e->status (and its message) set when it is answered early: 404, 405, 400 for a bad name,
 * 503 when stopping. */
void srv_route(struct srv *s, struct srv_req *r, const char *url, int stopping,
	       struct srv_early *e);

/* srv_invoke.c: one call of a function, for /function and for the async workers */
#define SRV_HEAD_HEADERS 32 /* headers a function's response head may give */
struct srv_answer {
	unsigned status;
	int error; /* 1: the call did not run; the answer is the JSON error {"error": err} */
	char err[SRV_ERR_MAX];
	const char *ctype;
	void *body; /* the function's stdout (owned: malloc'd), or msg */
	size_t len;
	int owned;
	struct srv_header h[6 + SRV_HEAD_HEADERS];
	size_t nh;
	char head[EMBER_HEAD_MAX + 1]; /* the function's response head, its lines cut in place */
	char id[SRV_CALL_ID_MAX], dur[32], init[32], code[16], ctype_buf[128];
	char msg[sizeof(((struct ember_result *)0)->message) + 64];
};
/* srv_head.c: the response head a function wrote on fd 4 ("Status: N", "Name: value" lines)
 * applied to a: its status, its Content-Type, its headers (pointing into a->head). 0, or -1 with
 * why in err (a malformed line, a header the server owns), and a unchanged but for a->head */
int srv_head_apply(struct srv_answer *a, const uint8_t *head, size_t len, char *err, size_t errlen);

/* Runs name with body and meta as call id: acquires the function (loading it when needed), runs
 * it, counts it in the metrics and fills a with what the sync reply sends. patient: as for
 * reg_acquire. */
void srv_invoke_call(struct srv *s, const char *name, const char *id, const uint8_t *body,
		     size_t len, const char *meta, size_t meta_len, int patient,
		     struct srv_answer *a);
/* the caller's own X-Call-Id when it is a plain token, else a new UUID */
void srv_req_call_id(struct srv_req *r, char *buf, size_t len);

/* srv_meta.c: an invocation's metadata for ember_invoke_meta, "NAME=value\n" lines named as
 * the OpenFaaS watchdog names its environment (Http_Method, ...); NULL when out of memory */
char *srv_meta(const struct srv *s, struct srv_req *r, size_t *len);

/* the handlers */
enum MHD_Result h_healthz(struct srv *s, struct srv_req *r);
enum MHD_Result h_readyz(struct srv *s, struct srv_req *r);
enum MHD_Result h_info(struct srv *s, struct srv_req *r);
enum MHD_Result h_metrics(struct srv *s, struct srv_req *r);
enum MHD_Result h_list(struct srv *s, struct srv_req *r);
enum MHD_Result h_get(struct srv *s, struct srv_req *r);
enum MHD_Result h_deploy(struct srv *s, struct srv_req *r);
enum MHD_Result h_update(struct srv *s, struct srv_req *r);
enum MHD_Result h_delete(struct srv *s, struct srv_req *r);
enum MHD_Result h_image_put(struct srv *s, struct srv_req *r);
enum MHD_Result h_image_delete(struct srv *s, struct srv_req *r);
enum MHD_Result h_image_list(struct srv *s, struct srv_req *r);
enum MHD_Result h_invoke(struct srv *s, struct srv_req *r);
enum MHD_Result h_logs(struct srv *s, struct srv_req *r);
enum MHD_Result h_async(struct srv *s, struct srv_req *r);
enum MHD_Result h_history(struct srv *s, struct srv_req *r); /* srv_history_route.c */
enum MHD_Result h_console(struct srv *s, struct srv_req *r); /* srv_console.c: GET /ui/ */

/* srv_logs.c: one function's stderr, a ring bounded in bytes and in lines */
struct srv_logs;
/* a line as kept: id (the call id) and text are NUL-terminated, text valid UTF-8 */
struct log_line {
	uint64_t seq;	/* 0, 1, 2 ... per function */
	int64_t ts_ns;	/* when the server got it (Unix ns); increasing per function */
	uint32_t len;	/* of text */
	uint8_t id_len; /* of id */
	char data[];	/* id, NUL, text, NUL */
};
static inline const char *log_line_text(const struct log_line *l)
{
	return l->data + l->id_len + 1;
}
/* which lines a reader wants: since_ns and later, of one call (instance) or all (NULL) */
struct logs_query {
	int64_t since_ns;
	const char *instance;
	long tail; /* only the last tail of them (<= 0: all) */
};
#define LOGS_LINE_MAX 8192 /* a longer line keeps its start and is marked as cut */
/* NULL when out of memory; the ring itself is allocated at the first line */
struct srv_logs *logs_new(uint64_t max_bytes, unsigned max_lines);
struct srv_logs *logs_get(struct srv_logs *l);
void logs_put(struct srv_logs *l);
/* One invocation's stderr: split in lines, cut, made valid UTF-8 and appended, the oldest
 * lines dropped past a bound. Wakes the followers. */
void logs_append(struct srv_logs *l, const char *id, const uint8_t *log, size_t len);
/* the end: followers stop, appends are dropped */
void logs_close(struct srv_logs *l);
/* the seq a reader of q starts at */
uint64_t logs_start(struct srv_logs *l, const struct logs_query *q);
/* the seq the next appended line gets */
uint64_t logs_end(struct srv_logs *l);
/* A copy of the first line of q at or after *seq and before end (free it), *seq moved past it;
 * NULL when there is none now. Lines dropped meanwhile are skipped. */
struct log_line *logs_next(struct srv_logs *l, uint64_t *seq, uint64_t end,
			   const struct logs_query *q);
/* waits up to secs for a line at seq or later; 1 when the ring is closed */
int logs_wait(struct srv_logs *l, uint64_t seq, double secs);
struct logs_usage {
	uint64_t lines, bytes;
};
void logs_usage(struct srv_logs *l, struct logs_usage *u);
/* srv_logs_route.c: GET /system/logs */
/* "2026-11-29T20:03:51.5Z", "...+01:00" or Unix seconds "1764446631.5" -> ns; -1 when bad */
int logs_parse_time(const char *s, int64_t *ns);
/* closes every function's ring, so that followers end and a shutdown does not wait for them */
void logs_shutdown(struct srv *s);
/* srv_report.c: the REPORT line of one invocation (duration and init in seconds, init < 0: warm) */
void srv_report(struct srv *s, const struct srv_call *c, const char *id,
		const struct ember_result *res, double took_s, double init_s);

/* srv_metrics.c: counters without a lock on the request path */
struct srv_fn_metrics;
struct srv_metrics *metrics_new(void);
void metrics_free(struct srv_metrics *m);
/* the series of a function by name, made at the first call (NULL when out of memory): only
 * known names, so that clients cannot make series */
struct srv_fn_metrics *metrics_fn(struct srv_metrics *m, const char *name);
/* one invocation: its HTTP status, wall time, result (NULL when it never ran; res->start says
 * how it started) and, when not warm, the seconds before the function ran (< 0: warm) */
void metrics_invocation(struct srv_metrics *m, struct srv_fn_metrics *f, unsigned code,
			double seconds, const struct ember_result *res, double init_s);
char *metrics_render(struct srv *s, size_t *len); /* srv_metrics_render.c */
void metrics_started(struct srv_fn_metrics *f);	  /* an invocation begins */
/* one HTTP request, by its route's pattern (a static string: the series' key) */
void metrics_http(struct srv_metrics *m, const char *path, const char *method, unsigned code,
		  double seconds);

#endif
