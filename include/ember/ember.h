/* Ember's public C API: load a function into virtines, invoke it, unload it. */
#ifndef EMBER_EMBER_H
#define EMBER_EMBER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EMBER_VERSION "0.1.0"

/* ember_load() returns 0 or one of these kinds of failure, always negative, with a one-line
 * reason in its err buffer. The kind says who is at fault: the first three are the caller's
 * (its image, its configuration, its function's initialisation), the others the host's. It is
 * decided where the failure happens (the step that failed, its errno), never from the message.
 * ember_error_name() names them. */
#define EMBER_ERR	(-1) /* Ember's own failure, none of the kinds below */
#define EMBER_ERR_NOKVM (-2) /* /dev/kvm is missing or unusable (try the ptrace backend) */
#define EMBER_ERR_IMAGE                                                                            \
	(-3) /* not a usable executable: missing, unreadable, malformed ELF,                       \
		not static x86-64, int $0x80 or sysenter */
#define EMBER_ERR_CONFIG                                                                           \
	(-4) /* a bad ember_config: unknown backend or mode, guest memory out                      \
		of range or too small for the image, arguments too long */
#define EMBER_ERR_INIT                                                                             \
	(-5)		     /* the function's own initialisation failed before its snapshot       \
				point: a runtime whose source does not load, or (strict_init)      \
				a crash, the timeout, a limit or a non-zero exit */
#define EMBER_ERR_NOMEM (-6) /* the host is out of memory, or refused a VM for resources */
#define EMBER_ERR_IO                                                                               \
	(-7) /* the disk or the file table: ENOSPC, EDQUOT, EIO, EFBIG, EROFS,                     \
		EMFILE/ENFILE, or a state folder that cannot be written */

/* The size of a reason: an err buffer this large holds any the API writes (ember_load's, a
 * result's message), and every message buffer of Ember's own is this size. */
#define EMBER_ERR_MAX 320

/* Guest memory: a multiple of 2 MiB in [EMBER_MEM_MIN, EMBER_MEM_MAX]. The minimum is what a
 * virtine needs for its page tables, the in-guest runtime, a stack and a heap. */
#define EMBER_MEM_MIN	  (8ULL << 20)
#define EMBER_MEM_MAX	  (64ULL << 30)
#define EMBER_MEM_ALIGN	  (2ULL << 20)	/* sizes are rounded up to it where a caller may round */
#define EMBER_MEM_DEFAULT (64ULL << 20) /* ember_config.mem_bytes 0 */
/* ... for a Go program: its runtime reserves some 700 MiB of address space at its start (the
 * heap's page summaries; Go 1.20 and later a scavenger index besides), parts of which it then
 * uses, so they must lie in guest memory: Go 1.19's runtime fits in 1 GiB, Go 1.23's needs
 * 1.5 GiB (1 GiB: "fatal error: runtime: out of memory" as it starts) */
#define EMBER_MEM_GO (2ULL << 30)
/* ember_config.output_limit 0: stdout + stderr bytes */
#define EMBER_OUTPUT_DEFAULT (6ULL << 20)
/* the kinds of exit counted in ember_result.exits_by_reason: hypercall, fault, timeout, error,
 * interrupt (the host took the vCPU back: a thread's time slice ended, or another thread's
 * signal or wake-up needed it) */
#define EMBER_EXIT_KINDS 5

enum ember_outcome {
	EMBER_OK,      /* the function exited by itself; status is its exit status */
	EMBER_CRASH,   /* it died of a fault or a fatal signal; signal says which */
	EMBER_TIMEOUT, /* it ran past its timeout */
	EMBER_LIMIT,   /* it exceeded a limit (output) */
	EMBER_ERROR,   /* Ember could not run it */
};

/* How an invocation got its virtine, from the cheapest to the dearest. */
enum ember_start {
	EMBER_START_WARM,    /* a ready virtine from the pool */
	EMBER_START_RESTORE, /* the snapshot in memory restored into a new virtine, on its path */
	EMBER_START_COLD,    /* the snapshot read from disk */
	EMBER_START_INIT,    /* the image loaded and initialised (no snapshot, or its first run) */
};

/* Guest memory shared by every function loaded with it: each virtine holds its function's
 * guest memory size of it. Spare (ready) virtines are made only within it and give their
 * memory up to an invocation that needs it; an invocation waits (up to its timeout) for a
 * virtine to end when nothing is spare. Thread-safe. */
struct ember_budget;
struct ember_budget_usage {
	uint64_t limit, used, peak; /* bytes: the budget, held now, the most ever held */
	uint64_t waits;		    /* invocations or loads that waited for memory */
	uint64_t refused;	    /* spares not made because the budget was full */
};
struct ember_budget *ember_budget_new(uint64_t bytes); /* NULL when out of memory */
/* after every function loaded with it is unloaded */
void ember_budget_free(struct ember_budget *b);
void ember_budget_usage(struct ember_budget *b, struct ember_budget_usage *u);

/* a file of the function's tree given from memory (ember_config.secret_files) */
struct ember_file {
	const char *path; /* absolute: where the function sees it */
	const void *data;
	size_t len;
};

struct ember_config {
	/* path of an x86-64 Linux executable: an absolute path that names a file of the function's
	 * files (files, files_tar: a root filesystem) is that file; else the host's file */
	const char *image;
	uint64_t mem_bytes;	 /* guest RAM; 0 = 64 MiB (EMBER_MEM_GO for a Go program) */
	double timeout_s;	 /* per invocation; 0 = 10 s */
	uint64_t output_limit;	 /* stdout + stderr bytes; 0 = 6 MiB */
	const char *const *argv; /* argv[0] included; NULL = { image } */
	const char *const *envp; /* NULL = empty environment */
	const char *backend;	 /* "kvm" (default), "ptrace" or "auto" */
	const void *code;	 /* a runtime's source, readable on fd 3; may be NULL */
	size_t code_len;
	unsigned pool_size; /* ready virtines kept for this function; 0 = 1 */
	/* > pool_size: capacity follows demand. A background thread keeps the virtines (ready and
	 * in use) at the recent peak of concurrent invocations plus headroom, at least pool_size
	 * and at most pool_max, refilling as soon as one is taken; the peak is that of the last
	 * one to two keep_alive_s (0: never shrinks). 0 or <= pool_size: a fixed pool. */
	unsigned pool_max;
	/* 1: no ready virtine is kept (pool_size and pool_max are not used): each invocation
	 * restores one from the snapshot in memory into a clean shell on its own path and drops it
	 * after its run, as does the first start from disk. The snapshot stays loaded; a function
	 * called rarely then holds no guest memory between its invocations. */
	int no_ready;
	double keep_alive_s;
	struct ember_budget *budget; /* NULL: no bound */
	int no_snapshot;	     /* 1: every invocation loads and initialises from scratch */
	const char *state_dir; /* keep the snapshot on disk under STATE/snapshots/; NULL: not */
	const char *restore;   /* cold starts from disk: "reap" (default) or "lazy" */
	int cold;	       /* 1: the first invocation starts from disk, page cache dropped */
	const char *syscalls;  /* "guest": the in-guest runtime serves the common syscalls without
				  an exit; "trap": every syscall exits to the host. NULL (default):
				  guest, or trap where the backend cannot give the program page 0
				  (ptrace without CAP_SYS_RAWIO); ember_info says which */
	/* 1: an initialisation that ends in a failure (a crash, the timeout, a limit, a non-zero
	 * exit) before the snapshot point fails ember_load with EMBER_ERR_INIT. 0 (default): that
	 * run becomes the first invocation's result, as a process that fails at start would (a
	 * runtime's, with code set, fails the load either way). A clean exit 0 during init is no
	 * failure: every invocation then runs from scratch. */
	int strict_init;
	/* how the virtines of this function hold the snapshot's memory: "upm" (default): one copy
	 * per function, mapped copy-on-write by every virtine, a written page private to its
	 * writer (KVM; the ptrace backend copies); "off": a private copy per virtine, nothing
	 * shared, as a confidential VM must run; "ksm": a private copy per virtine in memory that
	 * the kernel's KSM may merge (when /sys/kernel/mm/ksm/run is 1) */
	const char *sharing;
	/* upm: the sharing domain, usually one per tenant. Identical pages of the snapshots of
	 * every function of one domain, and pages their programs madvise(MADV_MERGEABLE), are
	 * held once; pages never merge across domains. NULL: "" (one domain for the process). */
	const char *sharing_domain;
	/* the function's read-only file tree, seen at /: a folder or a tar archive (plain or
	 * compressed), checked and read once by ember_load (only files, folders and links, 65536
	 * entries and 1 GiB of contents at most; EMBER_ERR_CONFIG otherwise) and served from
	 * memory; NULL: none, every path is refused */
	const char *files;
	/* or the same tree as a tar archive in memory (not with files) */
	const void *files_tar;
	size_t files_tar_len;
	/* a runtime's own files (a folder or tar archive), in the same tree as the function's:
	 * a file or link both give is refused (EMBER_ERR_CONFIG); NULL: none */
	const char *runtime_files;
	/* vCPUs of each virtine: up to this many of the program's threads run in parallel; more
	 * threads share them, preempted by the host. 0 = 1; at most EMBER_CPUS_MAX (abi.h); the
	 * ptrace backend runs 1 (more is EMBER_ERR_CONFIG) */
	unsigned cpus;
	/* threads an invocation may have at once, the first included: clone answers EAGAIN past
	 * it. 0 = 256 */
	unsigned threads;
	/* processes an invocation may have at once (fork, vfork, clone), the first included:
	 * fork answers EAGAIN past it. 0 = 64, at most 1024 */
	unsigned pids;
	/* 1: image must name a file of the function's files (a root filesystem), never the host's
	 */
	int image_in_files;
	/* the folder of the function's files the program starts in (its working directory, an
	 * OCI image's WorkingDir); NULL or "/": the files' root. A path that names no folder of
	 * the files is EMBER_ERR_CONFIG */
	const char *workdir;
	/* files added to the function's tree from memory, read-only (mode 0444), as OpenFaaS's
	 * secrets at /var/openfaas/secrets/NAME: with its files, its runtime's, or a dynamic
	 * program's closure, or alone. A path another source gives too is EMBER_ERR_CONFIG. Their
	 * bytes are part of the snapshot's key, and a tree holding them is never kept in
	 * STATE/bundles; NULL: none */
	const struct ember_file *secret_files;
	size_t nsecret_files;
};

struct ember_syscall_count {
	int nr;
	const char *name; /* NULL when Ember has no name for it */
	uint64_t served, denied;
	uint64_t in_guest; /* of served: by the in-guest runtime, without an exit of its own */
};

struct ember_result {
	enum ember_outcome outcome;
	int status;		     /* EMBER_OK: the exit status */
	int signal;		     /* EMBER_CRASH: the signal a process would have died of */
	int exit_code;		     /* shell convention: status, 124, 125, 126 or 128+signal */
	char message[EMBER_ERR_MAX]; /* why, for anything but EMBER_OK */
	uint8_t *out;		     /* the function's stdout */
	size_t out_len;
	uint8_t *log; /* its stderr */
	size_t log_len;
	uint64_t exits; /* all exits of this invocation */
	uint64_t
	    exits_by_reason[EMBER_EXIT_KINDS]; /* hypercall, fault, timeout, error, interrupt */
	/* guest pages the invocation wrote or added (restored by the reset) */
	uint64_t pages_touched;
	/* 1: the reset found them in KVM's dirty log (the virtine records its writes), 0: it
	 * compared the snapshot's writable pages (docs/memory.md) */
	int dirty_log;
	struct ember_syscall_count *syscalls; /* by number, ascending */
	size_t nsyscalls;
	int warm;	   /* 1: started from the snapshot in a pooled virtine */
	uint64_t wait_us;  /* getting a virtine: from the pool, or a shell */
	uint64_t setup_us; /* creating or restoring the machine */
	uint64_t load_us;  /* loading the image into it (shell invocations) */
	uint64_t run_us;   /* running it */
	uint64_t reset_us; /* putting the virtine back to the snapshot afterwards */
	/* CPU time the invocation cost the host: the invoking thread's (on KVM the guest's run is
	 * in it) and, on ptrace, the stub's and its tracer thread's */
	uint64_t cpu_us;
	int cold;		   /* 1: started from the snapshot on disk */
	uint64_t faults;	   /* guest pages served on demand during a cold start */
	uint64_t prefetched_pages; /* pages REAP installed before the start */
	uint64_t prefetch_bytes, prefetch_us;
	/* 1: the file system refused O_DIRECT, so the prefetch read went through the page cache
	 * (a cold start then measures less than a disk read) */
	int prefetch_buffered;
	int recorded; /* 1: this cold start recorded the working set */
	/* 1: a REAP start whose faults on demand (mispredictions) passed the threshold wrote the
	 * working set again, with them */
	int rerecorded;
	/* Where a cold start's time went, in µs: the state file read and checked (at the load,
	 * once, not per start); opening the memory file and registering the machine's memory;
	 * the wait for the working set's first chunk (the vCPU starts then); the working set's
	 * reads and page installs (the rest run beside the vCPU: prefetch_us is their wall time);
	 * the faults served on demand (faults: their count); faults that waited for a page the
	 * prefetch was bringing (fault_waits: their count). wait_us is getting the shell, run_us
	 * the run. */
	uint64_t snapshot_us, open_us, first_chunk_us, ws_read_us, install_us, fault_us;
	uint64_t fault_waits, fault_wait_us;
	/* A REAP start on KVM reads the snapshot whole before the run and restores it as a warm
	 * start does (no fault server: faults 0): the pages it read from the memory file beside
	 * the working set (outside_pages), and how many of them the run touched (mispredicted) */
	uint64_t outside_pages, mispredicted;
	enum ember_start start;
	/* the response head the function wrote on fd 4 (EMBER_META_FD): "Status: N" and
	 * "Name: value" lines, at most EMBER_HEAD_MAX bytes; NULL when it wrote none */
	uint8_t *head;
	size_t head_len;
};

struct ember_function;

/* Where a load's time went, in µs (ember_info.load): reading and checking the program's image
 * (the runtime's, for a handler), or only mapping it when its syscall-site table was kept in the
 * state folder (image_from says which); finding its syscall sites, or reading that table; a
 * dynamic program's interpreter (ld.so, from its files); the function's files (bundle_from says
 * how); the snapshot's state file, read and checked; the working set's page list (REAP on KVM).
 * total_us is the whole load: these, the configuration, a machine, and init when it ran. */
struct ember_load_parts {
	uint64_t image_us, sites_us, interp_us, bundle_us, state_us, plan_us, total_us;
	/* "scanned" (hashed and disassembled), "table" (its identity matched a kept table: the
	 * file is mapped, not read), "hint" (a start from disk: only its digest read, from the
	 * hint kept beside that table, the table left for an init) or "shared" (another load of
	 * this process has it open) */
	const char *image_from;
	/* "packed" (read and packed now), "kept" (the sources unchanged by their recorded
	 * identities, the packed tree unchanged by its own: only its index read and checked),
	 * "checked" (the packed tree read back and hashed whole), or NULL without files */
	const char *bundle_from;
	/* a kept file the load found damaged and made again (the packed files, the working set's
	 * copy of the state file), or NULL */
	const char *damaged;
	/* where a start from disk took the snapshot's state: "copy" (the working set's copy of the
	 * state file, in the one read of that file: REAP on KVM), "file" (the state file), or NULL
	 * without a snapshot */
	const char *state_from;
};

struct ember_info {
	const char *backend; /* the machine backend in use */
	/* the program's syscall sites (and its interpreter's), rewritten at init: 0 after a load
	 * from disk that took the image's digest from its hint, until an init or an execve of the
	 * program reads its site table (ember_info itself reads nothing from disk;
	 * ember_info_sites reads it) */
	size_t rewritten_sites;
	const char *syscalls; /* "trap" or "guest" */
	size_t sites_call;    /* sites that reach the in-guest runtime (`call *%rax`) */
	size_t sites_trap;    /* sites that exit to the host (`out %al,$0x10`) */
	uint64_t image_bytes;
	uint64_t
	    mem_bytes;	  /* its virtines' guest memory (ember_config.mem_bytes, or its default) */
	int snapshot;	  /* 1: invocations start from a snapshot taken after init */
	uint64_t init_us; /* running the initialisation, once, at load */
	uint64_t init_exits;
	uint64_t snapshot_pages;   /* pages of guest memory the snapshot holds */
	unsigned ready;		   /* virtines ready in the pool now */
	const char *snapshot_path; /* the snapshot's folder on disk, or NULL */
	const char *rebuilt;	   /* why a snapshot on disk was refused and rebuilt, or NULL */
	int from_disk;		   /* 1: loaded from disk, init not run in this process */
	int cold_pending; /* 1: the next invocation starts from disk (nothing is restored yet) */
	/* the pool's capacity (see ember_config.pool_max) */
	unsigned in_use;	      /* virtines running an invocation now */
	unsigned target;	      /* virtines (ready and in use) wanted now */
	unsigned peak;		      /* the recent peak of in_use the target follows */
	unsigned capacity;	      /* the most it keeps: pool_max within the budget */
	uint64_t refills;	      /* virtines made ready by the background thread */
	uint64_t trims;		      /* ready virtines dropped as demand fell */
	uint64_t restores;	      /* invocations that restored a virtine on their own path */
	unsigned cpus;		      /* vCPUs per virtine (ember_config.cpus, or 1) */
	struct ember_load_parts load; /* where the load's time went */
};

/* Validates the image and the configuration, runs the initialisation and fills the pool. Returns
 * 0, or a negative EMBER_ERR_* kind with a one-line reason in err. */
int ember_load(const struct ember_config *cfg, struct ember_function **out, char *err,
	       size_t errlen);
/* The kind's name: "ok" (0), "error", "nokvm", "image", "config", "init", "nomem", "io";
 * "unknown" for anything else. */
const char *ember_error_name(int rc);
/* The outcome's name: "ok", "crash", "timeout", "limit" or "error" (also for anything else). */
const char *ember_outcome_name(enum ember_outcome o);
/* "warm", "restore", "cold" or "init" ("init" for anything else) */
const char *ember_start_name(enum ember_start s);
/* Runs one invocation with the given request bytes; thread-safe. Always fills res. */
int ember_invoke(struct ember_function *fn, const void *in, size_t len, struct ember_result *res);
/* ember_invoke with the request's metadata readable on fd 4 (EMBER_META_FD): meta_len bytes of
 * "NAME=value\n" lines, by convention (the server's Http_Method, Http_Path, ...). Ember passes the
 * bytes as they are; meta may be NULL when meta_len is 0. ember_invoke is this with none. */
int ember_invoke_meta(struct ember_function *fn, const void *in, size_t len, const char *meta,
		      size_t meta_len, struct ember_result *res);
void ember_result_free(struct ember_result *res);
/* Fills the pool up to n ready virtines (at most its size), restored from the snapshot. Returns
 * how many were added (fewer when the memory budget is full), or a kind of failure (EMBER_ERR_*,
 * negative) when a virtine could not be made. Does nothing for a function without a snapshot in
 * memory, or with no_ready. */
int ember_warm(struct ember_function *fn, unsigned n);
/* Drops ready virtines until at most n are left: the next invocations restore the snapshot into
 * a fresh one (a clean shell) on their own path, as with no spare. Returns how many it dropped. */
int ember_trim(struct ember_function *fn, unsigned n);
void ember_info(const struct ember_function *fn, struct ember_info *info);
/* ember_info with the syscall sites counted after a load from disk too: it reads the program's
 * site table first if the load left it unread (a disk read: not for a request's path) */
void ember_info_sites(struct ember_function *fn, struct ember_info *info);

/* The memory a function's ready virtines hold (ember_memory). */
struct ember_memory {
	const char *sharing;	 /* "upm", "off" or "ksm" (ember_config.sharing) */
	uint64_t snapshot_bytes; /* the snapshot's one copy; with upm, every virtine maps it */
	unsigned virtines;	 /* ready virtines measured (those running now are not) */
	uint64_t shared_bytes;	 /* of their memory: the snapshot's pages they still share */
	uint64_t private_bytes;	 /* their own: pages they wrote or were given (a KSM-merged page
				    counts here too: its sharing shows in the process's PSS) */
	/* upm: the sharing domain and its page store, shared by every function of the domain */
	const char *domain;    /* NULL without a store (off, ksm) */
	uint64_t domain_bytes; /* distinct pages it holds */
	uint64_t merged_pages; /* pages merged by madvise(MADV_MERGEABLE) in the domain */
	uint64_t merge_ns;     /* the time those merges took */
	/* what those virtines hold of the host besides memory, summed: mappings (their guest
	 * memory's, their vCPUs'), each counted against vm.max_map_count, and descriptors, each
	 * counted against RLIMIT_NOFILE; divide by virtines for a figure per virtine */
	uint64_t host_maps, host_fds;
	/* guest memory under KVM's memory slots, summed: the kernel keeps ~10 bytes for each of
	 * its 4 KiB pages (made only where the page tables map; 0 on ptrace) */
	uint64_t host_slot_bytes;
};
/* Measures the ready virtines of fn, one at a time (an invocation meanwhile passes a virtine
 * being measured by). Returns 0 or -errno. */
int ember_memory(struct ember_function *fn, struct ember_memory *m);
/* Runs one invocation with the given request in every ready virtine, each reset after it, as a
 * warm-up that gives each the pages a request writes. Returns how many ran (one that failed
 * is dropped from the pool and counts too), or -1 without a snapshot in memory. */
int ember_prime(struct ember_function *fn, const void *in, size_t len);
/* Waits until the work a cold start left after its response is done: the snapshot read whole
 * into memory and checked, the virtine reset and pooled (or, when a page proved damaged, the
 * snapshot made again: ember_info.rebuilt then says why). An invocation that follows waits for it
 * by itself; this is for what reads ember_info right after a cold start. */
void ember_settle(struct ember_function *fn);
void ember_unload(struct ember_function *fn);
/* Removes what a crash left in state_dir: the temporary folders and files of snapshots
 * (state_dir/snapshots), site tables (state_dir/sites) and packed files (state_dir/bundles) being
 * written by processes that are gone. A server calls it at start. Returns how many it removed. */
int ember_sweep(const char *state_dir);
/* Removes fn's snapshot from disk (kept under ember_config.state_dir), for a version that will
 * not be loaded again: a later load of the same configuration runs its initialisation again.
 * What fn holds in memory stays usable. Returns 0, or -1 when it had none on disk. */
int ember_snapshot_remove(struct ember_function *fn);

#ifdef __cplusplus
}
#endif

#endif
