/* A loaded function: the structure behind the public API, its state, and its lifecycle's steps. */
#ifndef EMBER_FUNC_H
#define EMBER_FUNC_H

#include <pthread.h>
#include <stdatomic.h>

#include "ember/ember.h"
#include "image/img.h"
#include "pool/budget.h"
#include "pool/pool.h"
#include "pool/refill.h"
#include "snap/snap.h"
#include "cold/cold.h"
#include "cold/cold_read.h"
#include "snap/snap_file.h"

/* Where a function is in its lifecycle: which invoke path its next invocation takes (one table
 * in invoke.c). Every change goes through func_move (state.c), which holds the allowed ones. */
enum func_state {
	FUNC_SCRATCH, /* no snapshot: each invocation loads the image into a clean shell */
	FUNC_FIRST,   /* init ended before its snapshot point: that run is the first invocation's
			 result, later ones are FUNC_SCRATCH */
	FUNC_COLD,    /* the snapshot only on disk: the next invocation starts cold from it, the
			 others wait for it (cold_lock) */
	FUNC_WARM,    /* the snapshot in memory: from the pool, or restored into a clean shell */
	FUNC_STATES
};

/* drop.c: the virtines a function with no_ready is done with, and the thread that destroys them */
struct func_drops {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct virtine **v; /* waiting to be destroyed */
	size_t n, cap;
	int started, stop;
	pthread_t thread;
};

struct ember_function {
	struct img *img;
	struct img *interp; /* a dynamic program's interpreter (ld.so), from bundle; else NULL */
	char *exe_path; /* what /proc/self/exe names: argv[0] if absolute, else "/" + its name */
	struct vm_config vmcfg;
	uint64_t timeout_ns;
	uint64_t output_limit;
	unsigned pool_size;
	/* the pool's capacity: pool_size, or pool_max when it follows demand */
	unsigned pool_slots;
	int no_ready; /* ember_config.no_ready: every virtine is dropped after its run */
	struct func_drops drops;
	int strict_init; /* a failed init fails the load (ember_config.strict_init) */
	/* the syscall mode: trap, or guest (the in-guest runtime serves the common ones) */
	const struct sys_rt_ops *rt;
	size_t sites_call, sites_trap;
	atomic_int state; /* enum func_state */
	char **argv, **envp;
	uint8_t *code;
	size_t code_len;
	struct bnd *bundle; /* its files, shared by its virtines; NULL: none */
	uint32_t cwd;	    /* the bundle's folder its programs start in (ember_config.workdir) */
	struct snap snap;   /* FUNC_WARM: whole; FUNC_COLD: what was read of the disk's */
	/* on disk */
	char *snap_dir;
	struct snap_meta meta;
	enum snap_restore_mode restore;
	enum snap_share share;	   /* ember_config.sharing */
	struct share_store *store; /* upm: the domain's page store, which holds the snapshot */
	struct share_refs snap_refs;
	struct share_refs file_refs; /* upm on KVM: its bundle's file pages held by the store */
	int files_shared;	     /* they were given to the store (func_share_files) */
	int from_disk;	       /* reported only (ember_info): the snapshot was read, not made */
	uint64_t snap_load_us; /* reading and checking the state file on disk, at load */
	char *img_dir;	       /* STATE/sites: its images' site tables, or NULL */
	struct ember_load_parts parts; /* where its load's time went (ember_info) */
	struct cold_read_plan plan;    /* the working set's page list read at load, for its start */
	/* the start from disk whose run goes on (its fault server serves the machine), for a
	 * fork in it (func_fam_loader's settle); else NULL */
	struct cold *serving;
	struct vm
	    *whole; /* the machine of one that read the snapshot whole (KVM REAP), as it runs */
	pthread_mutex_t cold_lock; /* invocations wait while one cold start runs */
	/* while a cold start's work after its run goes on (finish.c), under cold_lock */
	int finishing;
	pthread_cond_t cold_done; /* signalled when it ends */
	struct base_job finisher; /* the thread doing it (a parked one) */
	int has_finisher; /* finisher is to be waited for (by the next cold start, unload) */
	struct func_finish *finish_next; /* its work, under cold_lock */
	char rebuilt[EMBER_ERR_MAX];
	char damaged[EMBER_ERR_MAX]; /* a kept file the load refused and made again, or "" */
	struct sys_process proc;     /* where the image put things */
	int cpus, max_threads;	     /* ember_config.cpus, .threads */
	int max_pids;		     /* ember_config.pids */
	/* execve's programs from its files, read once (func/exec.c); under exec_lock */
	struct func_exec_img **exec_imgs;
	size_t nexec_imgs;
	pthread_mutex_t exec_lock;
	/* the syscall sites of its library files, found once each (func/sites.c); under sites_lock
	 */
	struct func_lib_sites **lib_sites;
	size_t nlib_sites;
	pthread_mutex_t sites_lock;
	/* the libraries the program names: their sites found from the load on, on a thread of
	 * their own (sites.c); a run that maps one while that thread is on it waits for it */
	pthread_cond_t sites_done;
	pthread_t ahead;
	int ahead_on, nahead;
	uint32_t ahead_node[8];
	struct pool pool;
	struct ember_budget *budget;
	struct pool_refiller refill;
	uint64_t init_us, init_exits;
	/* FUNC_FIRST: the result of the init that ended without reading its request */
	struct ember_result first;
};

/* one invocation's input: the request and its metadata */
struct func_call {
	const void *in;
	size_t len;
	const char *meta;
	size_t meta_len;
};

/* The functions below that return int give 0 or a kind of failure of ember.h (EMBER_ERR_*),
 * with the reason in err (EMBER_ERR_MAX bytes are enough). */

/* state.c */
enum func_state func_state(const struct ember_function *fn);
/* from -> to when the state is from and the move is one of the lifecycle's: 0, else -1 (the
 * state is left as it is). Racing movers: one wins. */
int func_move(struct ember_function *fn, enum func_state from, enum func_state to);
/* a snapshot exists, in memory or on disk */
int func_has_snapshot(const struct ember_function *fn);

/* init.c: loads the image into vm and runs the initialisation up to the snapshot point (with
 * snapshot 0 only the load is checked); moves the state to FUNC_WARM or FUNC_FIRST */
int func_init(struct ember_function *fn, struct vm *vm, int snapshot, char *err, size_t errlen);
/* the image loaded into v's clean machine, the program's start set up (an invocation from
 * scratch runs it so) */
int func_load_image(struct ember_function *fn, struct virtine *v, char *err, size_t errlen);
/* what a process may know of itself, from where img_load put its program */
struct sys_process func_process_of(const struct img_layout *l, int cpus, int threads, int pids);
/* the memory map, the in-guest runtime and the first registers of a program img_load put in vm
 * (l), st made for it: 0 or a kind */
int func_start_program(struct sys_state *st, struct vm *vm, const struct img_layout *l, char *err,
		       size_t errlen);

/* sites.c: the program's syscall sites read where a start from disk left them unread (its site
 * table; nothing when they are known), so that ember_info counts them: `ember run --stats` asks
 * it after the run; ember_info itself reads nothing from disk, on a server's load path. */
void func_sites_read(struct ember_function *fn);
/* func.c: an image_from of the load's parts: where its image's sites came from */
const char *func_image_from(enum img_from from);

/* disk.c: the snapshot on disk. func_disk finds it: 0 when it is there and usable (the state is
 * FUNC_COLD), 1 when not (the caller runs init and calls func_disk_save), or a kind of failure
 * (the state folder cannot be made). */
int func_disk(struct ember_function *fn, const struct ember_config *cfg, char *err, size_t errlen);
int func_disk_save(struct ember_function *fn, int cold, char *err, size_t errlen);
/* The snapshot on disk proved damaged (why says how): init runs again in a new machine and a new
 * snapshot is written over it. Leaves the state out of FUNC_COLD whatever happens. */
void func_rebuild(struct ember_function *fn, const char *why);

/* cold.c: the cold start of one invocation from the snapshot on disk, with cold_lock held; 0,
 * FUNC_AGAIN (the request is to be dispatched again, in the state it left) or -1 */
#define FUNC_AGAIN 1
int func_invoke_cold(struct ember_function *fn, const struct func_call *c,
		     struct ember_result *res);

/* finish.c: the work a cold start leaves after its run (its result is filled already), done by
 * work on a parked thread (base_park.c) that takes cold_lock once the invocation gives it back;
 * f is freed after. The caller holds cold_lock. */
struct func_finish {
	struct ember_function *fn;
	void (*work)(struct func_finish *f);
	struct virtine *v;
	int broken;	    /* v is not to be kept */
	struct cold_read r; /* a start that read the snapshot whole: its read */
};
void func_finish_later(struct func_finish *f);
/* with cold_lock held: until no such work is going on */
void func_finish_wait(struct ember_function *fn);
/* until the last such work has ended (unload; cold_lock not held) */
void func_finish_join(struct ember_function *fn);

/* virtine.c: building virtines. A kind of failure beside ember.h's: the budget had no room */
#define FUNC_BUDGET_FULL 1
/* A virtine around vm (NULL: a clean shell from the cache), charged to the function's budget;
 * wait: may wait for the budget (a request, a load) rather than give up at once (a spare).
 * NULL with *kind and the reason in err (vm is destroyed then). */
struct virtine *virtine_new(struct ember_function *fn, struct vm *vm, int wait, int *kind,
			    char *err, size_t errlen);
/* Sets v's emulation state up for fn's program laid out as proc: its output limit, code, files,
 * page sharing. The one place a virtine is made ready for a function. */
void virtine_prepare(struct ember_function *fn, struct virtine *v, const struct sys_process *proc);
/* a virtine at the snapshot state, made now; NULL with *kind and the reason in err */
struct virtine *func_restored(struct ember_function *fn, int wait, int *kind, char *err,
			      size_t errlen);
/* drop.c: v destroyed after its run, off the caller's path (now when that cannot be) */
void func_drop(struct ember_function *fn, struct virtine *v);
void func_drops_init(struct func_drops *d);
/* its thread started now (a load), not on the path of the first invocation that drops one */
void func_drops_start(struct func_drops *d);
/* destroys what is still waiting; the thread joined */
void func_drops_fini(struct func_drops *d);
/* puts v back to the snapshot; 0 on success */
int func_reset(struct ember_function *fn, struct virtine *v, uint64_t *touched);

/* sites.c: st finds the syscall sites of the function's files (ld.so's libraries) through fn,
 * which keeps them until func_sites_free */
void func_sites_virtine(struct ember_function *fn, struct sys_state *st);
void func_sites_free(struct ember_function *fn);
/* the sites of the libraries the program names (DT_NEEDED, in its files where ld.so looks),
 * found on a thread of their own while the load goes on, the largest first; joined by
 * func_sites_join, which ember_unload calls before the image and files go */
void func_sites_ahead(struct ember_function *fn);
void func_sites_join(struct ember_function *fn);

/* run.c: running a virtine */
/* runs one invocation in v and fills res */
void func_run_invocation(struct ember_function *fn, struct virtine *v, const struct func_call *c,
			 struct ember_result *res);
/* One invocation in the ready (or restored) virtine v, reset afterwards; 1 when v is broken and
 * must be destroyed. */
int func_run_warm(struct ember_function *fn, struct virtine *v, const struct func_call *c,
		  struct ember_result *res);
/* the run until the snapshot point or the end, with its outcome in v->st */
void func_run_init(struct ember_function *fn, struct virtine *v);
/* res from the emulation state's outcome, output and counters */
void func_fill_result(struct ember_result *res, struct sys_state *st);
/* res: an invocation that failed in Ember, for msg */
void func_fail_result(struct ember_result *res, const char *msg);

/* invoke.c: ember_warm with the reason of a failure: how many virtines were added, or a kind */
int func_warm(struct ember_function *fn, unsigned n, char *err, size_t errlen);
/* the pool's refiller: its gate and maker (the function's state, func_restored) */
extern const struct pool_refill_ops func_refill_ops;

/* share.c: the domain's store (upm), the snapshot moved into it once taken or loaded, a virtine's
 * madvise(MADV_MERGEABLE) served by it, and all of it given back at unload */
int func_share_open(struct ember_function *fn, const char *domain, char *err, size_t errlen);
void func_share_snapshot(struct ember_function *fn);
/* upm on KVM: the bundle's file pages held by the store, mapped from there (share_bnd_share);
 * once, before init (the load's, a rebuild's) or after a cold start's response (finish.c) */
void func_share_files(struct ember_function *fn);
void func_share_virtine(struct ember_function *fn, struct virtine *v);
void func_share_close(struct ember_function *fn);

/* func.c: what names a file of b (its bundle's digest, where it lies) for its image's table */
uint64_t func_file_id(const struct bnd *b, uint32_t node);
/* dynamic.c: a dynamic program's interpreter read from its files into fn->interp, those files
 * made first, when it has none, of the host's ld.so and the libraries it needs; 0 or a kind */
int func_dynamic(struct ember_function *fn, const struct ember_config *cfg, char *err,
		 size_t errlen);
/* secrets.c: cfg's secret files added to bb (0, or -1 with err); a tree of paths, cfg's files_tar
 * and its secrets, packed, never kept on disk (NULL with err); the secrets' tree alone when the
 * function has no other files (0 or a kind) */
struct bnd_builder;
int func_secrets_add(struct bnd_builder *bb, const struct ember_config *cfg, char *err,
		     size_t errlen);
struct bnd *func_secrets_build(const char *const *paths, size_t npaths,
			       const struct ember_config *cfg, char *err, size_t errlen);
int func_secrets_only(struct ember_function *fn, const struct ember_config *cfg, char *err,
		      size_t errlen);
/* exec.c: what the processes of an invocation are made of (src/family/), and its cache freed */
extern const struct fam_loader func_fam_loader;
void func_exec_free(struct ember_function *fn);

#endif
