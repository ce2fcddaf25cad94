/* `ember bench conformance`: suites nobody here wrote (Go's, CPython's, gVisor's tests) run case
 * by case natively and in Ember, each case classified per backend and syscall mode. */
#ifndef EMBER_CLI_BENCH_CONF_H
#define EMBER_CLI_BENCH_CONF_H

#include <limits.h>
#include <stddef.h>

/* what one case did in one column */
enum conf_res {
	CONF_NONE,    /* not run, or the run said nothing of it */
	CONF_PASS,    /* passed */
	CONF_FAIL,    /* failed: the first failure line is its reason */
	CONF_CRASH,   /* the program died (Ember's message, or the runtime's fatal line) */
	CONF_TIMEOUT, /* past the case's timeout */
	CONF_NA,      /* failed or was skipped natively here: not applicable */
	CONF_SKIP,    /* skipped (a native skip becomes CONF_NA) */
};
const char *conf_res_name(enum conf_res r);

/* the columns: native first, then Ember's backends and syscall modes */
enum { CONF_NATIVE, CONF_KVM_GUEST, CONF_KVM_TRAP, CONF_PTRACE, CONF_COLS };
struct conf_col {
	const char *name;     /* as in the JSON */
	const char *backend;  /* ember run --backend; NULL: native */
	const char *syscalls; /* ember run --syscalls */
	const char *what;     /* what runs the cases, as the JSON says it */
};
extern const struct conf_col conf_cols[CONF_COLS];

/* how a suite's program runs: the same program and working folder natively and in Ember */
struct conf_target {
	char prog[PATH_MAX];
	char root[PATH_MAX];	/* the function's files in Ember; "" none */
	char workdir[PATH_MAX]; /* the working folder natively, and in root unless guest_cwd */
	/* where the program and its working folder are in root, when not at their own paths:
	 * never under /tmp, which in a virtine is the invocation's scratch /tmp; "" the same */
	char guest_prog[PATH_MAX];
	char guest_cwd[PATH_MAX];
	const char *pre[4]; /* arguments before the suite's own (python3 -m test) */
	int npre;
	const char *mem;    /* ember run --mem */
	const char *env[4]; /* beside the common environment; NULL-terminated */
};

#define CONF_ARGS 64 /* the arguments one run of a suite's program may take */

struct conf_case {
	char *name;
	unsigned char res[CONF_COLS];
	char *why[CONF_COLS]; /* a failure's first line, a crash's message; NULL */
	int wanted;	      /* named by --cases: a pass expected in every Ember column */
};

struct conf_file {
	const struct conf_suite *suite;
	char name[128];
	struct conf_target t;
	struct conf_case *cases;
	size_t ncases;
	int selected;		/* only the wanted cases run (--cases) */
	char err[256];		/* why it could not run at all; "" */
	double secs[CONF_COLS]; /* wall time of each column */
};

struct conf_opts {
	const char *build;  /* the build folder: its conformance/ holds the test programs */
	const char *gvisor; /* --gvisor: gVisor's built test programs; NULL: not that suite */
	const char *ember;  /* the ember binary that runs the cases */
	const char *state;  /* ember run --state: the packed roots kept between runs */
	double timeout_s;   /* one case */
	int cols[CONF_COLS];
};

struct conf_suite {
	const char *name;
	const char *package;	  /* the Debian package its source is, for the version */
	const char *const *files; /* the default files (packages, modules, test programs) */
	/* t for file, or -1 with why (not built: the command that builds it) */
	int (*target)(const struct conf_opts *o, const char *file, struct conf_target *t, char *why,
		      size_t len);
	/* the arguments that list the cases; the names from that output into f */
	int (*list_args)(const struct conf_file *f, const char **args);
	int (*list)(struct conf_file *f, char *out);
	/* the arguments that run the file's cases (only the wanted ones when f->selected), or one
	 */
	int (*batch_args)(const struct conf_file *f, const char **args, char *buf, size_t len);
	int (*case_args)(const struct conf_file *f, const char *name, const char **args, char *buf,
			 size_t len);
	/* what out says of case name (CONF_NONE: nothing), the first failure line into why */
	enum conf_res (*result)(const char *out, const char *name, char *why, size_t len);
};
extern const struct conf_suite conf_go, conf_python, conf_gvisor;

/* conf_case_add: a case named name (len bytes) appended to f; -1 out of memory */
int conf_case_add(struct conf_file *f, const char *name, size_t len);
/* the line of out starting at p, without its newline, trimmed, into buf */
void conf_line(const char *p, char *buf, size_t len);

/* One run of a program: argv in cwd with envp, stdin empty, stdout and stderr together (the
 * first cap bytes kept), killed with its process group past timeout_s. */
struct conf_run {
	int status;	  /* as waitpid gives it */
	int killed;	  /* past the timeout, killed by us */
	int leaked_procs; /* processes of its group alive after it ended (killed then) */
	char *out;	  /* NUL-terminated */
	size_t len;
	double secs;
};
int conf_exec(const char *const *argv, const char *cwd, const char *const *envp, double timeout_s,
	      struct conf_run *r);
void conf_run_free(struct conf_run *r);

struct conf_totals {
	int host_crashes, hangs, leaked_procs, leaked_fds;
};

/* bench_conf.c: the help, what Ember did over all runs, a file's cases listed, the runs of
 * the files in columns cols, njobs at once */
extern struct conf_totals conf_totals;
void conf_open_file(struct conf_file *f, const struct conf_opts *o);
void conf_phase(struct conf_file **files, size_t nfiles, const int *cols, int ncols,
		const struct conf_opts *o, int njobs);

/* bench_conf_report.c: the table, the JSON, the cases that regressed */
void conf_print_table(struct conf_file *const *files, size_t n, const struct conf_opts *o);
int conf_write_json(struct conf_file *const *files, size_t n, const struct conf_opts *o,
		    const struct conf_totals *tot, const char *path);
/* the wanted cases that did not pass in a column that ran: said on stderr, counted */
int conf_regressions(struct conf_file *const *files, size_t n, const struct conf_opts *o);

#endif
