/* `ember bench conformance`: every case of the suites run natively, then in Ember on each backend
 * and syscall mode; a case failing natively is not applicable, never a pass. */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/bench_conf.h"
#include "cli/cli.h"

#define BATCH_S 900.0 /* a whole file at once */
#define GRACE_S 30.0  /* past Ember's own timeout, a run is a hang */

const struct conf_col conf_cols[CONF_COLS] = {
    {"native", NULL, NULL, "the test program as a process here"},
    {"kvm_guest", "kvm", "guest", "ember run --backend kvm --syscalls guest"},
    {"kvm_trap", "kvm", "trap", "ember run --backend kvm --syscalls trap"},
    {"ptrace", "ptrace", "guest", "ember run --backend ptrace"},
};

static const char *const common_env[] = {"PATH=/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8",
					 "TMPDIR=/tmp"};

/* one run of f's program in column col with args: natively, or through `ember run` */
static int run(const struct conf_file *f, int col, const struct conf_opts *o, const char **args,
	       int nargs, double timeout_s, struct conf_run *r)
{
	const struct conf_target *t = &f->t;
	const char *argv[CONF_ARGS + 40], *envp[16];
	char tmo[32], cpus[16], state[PATH_MAX + 32];
	int n = 0, e = 0;
	for (size_t i = 0; i < sizeof(common_env) / sizeof(common_env[0]); i++)
		envp[e++] = common_env[i];
	for (int i = 0; i < 4 && t->env[i]; i++)
		envp[e++] = t->env[i];
	envp[e] = NULL;
	if (col != CONF_NATIVE) {
		snprintf(tmo, sizeof(tmo), "%g", timeout_s);
		if (o->state)
			snprintf(state, sizeof(state), "%s", o->state);
		else
			snprintf(state, sizeof(state), "%s/conformance/state", o->build);
		const char *head[] = {o->ember,	    "run",
				      "--backend",  conf_cols[col].backend,
				      "--syscalls", conf_cols[col].syscalls,
				      "--mem",	    t->mem,
				      "--timeout",  tmo,
				      "--stats"};
		for (size_t i = 0; i < sizeof(head) / sizeof(head[0]); i++)
			argv[n++] = head[i];
		/* as many processors as the tests see natively (up to 16), where the backend has
		 * them: the ptrace backend runs one */
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		snprintf(cpus, sizeof(cpus), "%ld", ncpu < 1 ? 1 : ncpu > 16 ? 16 : ncpu);
		if (col != CONF_PTRACE && ncpu > 1) {
			argv[n++] = "--cpus";
			argv[n++] = cpus;
		}
		if (t->root[0]) {
			const char *files[] = {
			    "--files",	 t->root,
			    "--workdir", t->guest_cwd[0] ? t->guest_cwd : t->workdir,
			    "--state",	 state};
			for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
				argv[n++] = files[i];
		}
		for (int i = 0; envp[i]; i++) {
			argv[n++] = "--env";
			argv[n++] = envp[i];
		}
		argv[n++] = "--";
	}
	argv[n++] = col != CONF_NATIVE && t->guest_prog[0] ? t->guest_prog : t->prog;
	for (int i = 0; i < t->npre; i++)
		argv[n++] = t->pre[i];
	for (int i = 0; i < nargs && n < (int)(sizeof(argv) / sizeof(argv[0])) - 1; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	double bound = col == CONF_NATIVE ? timeout_s : timeout_s + GRACE_S;
	return conf_exec(argv, col == CONF_NATIVE ? t->workdir : NULL, envp, bound, r);
}

struct conf_totals conf_totals;

/* what Ember left behind after a run; whether Ember itself crashed or hung */
static void account(int col, const struct conf_run *r)
{
	if (col == CONF_NATIVE)
		return;
	if (r->leaked_procs)
		__atomic_fetch_add(&conf_totals.leaked_procs, 1, __ATOMIC_RELAXED);
	const char *k = r->out ? strstr(r->out, "\"host_fds_leaked\":") : NULL;
	int fds = k ? atoi(k + 18) : 0;
	if (fds > 0)
		__atomic_fetch_add(&conf_totals.leaked_fds, fds, __ATOMIC_RELAXED);
	if (r->killed)
		__atomic_fetch_add(&conf_totals.hangs, 1, __ATOMIC_RELAXED);
	else if (WIFSIGNALED(r->status))
		__atomic_fetch_add(&conf_totals.host_crashes, 1, __ATOMIC_RELAXED);
}

/* the last line of out starting with prefix */
static int last_line(const char *out, const char *prefix, char *why, size_t len)
{
	const char *hit = NULL;
	size_t n = strlen(prefix);
	for (const char *p = out; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, prefix, n))
			hit = p;
	if (hit)
		conf_line(hit, why, len);
	return hit != NULL;
}

/* a run that said nothing of the case: how it ended */
static enum conf_res ended(int col, const struct conf_run *r, double timeout_s, char *why,
			   size_t len)
{
	static const char *const fatal[] = {
	    "ember: ", "panic: ", "fatal error: ", "Fatal Python error: "};
	if (r->killed) {
		snprintf(why, len, "%s past %.0f s, killed", col ? "Ember hung" : "ran",
			 timeout_s + (col ? GRACE_S : 0));
		return CONF_TIMEOUT;
	}
	if (WIFSIGNALED(r->status)) {
		snprintf(why, len, "%s died of signal %d", col ? "ember" : "the program",
			 WTERMSIG(r->status));
		return CONF_CRASH;
	}
	if (col && WEXITSTATUS(r->status) == 124) {
		snprintf(why, len, "ember: timed out after %.0f s", timeout_s);
		return CONF_TIMEOUT;
	}
	for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
		if (last_line(r->out, fatal[i], why, len))
			return CONF_CRASH;
	snprintf(why, len, "exit status %d without a result", WEXITSTATUS(r->status));
	return CONF_CRASH;
}

static void set(struct conf_case *c, int col, enum conf_res res, const char *why)
{
	/* a skip where the native run passed is a case Ember did not run: a failure */
	if (col != CONF_NATIVE && res == CONF_SKIP)
		res = CONF_FAIL;
	if (col == CONF_NATIVE && res != CONF_PASS)
		res = CONF_NA;
	c->res[col] = (unsigned char)res;
	free(c->why[col]);
	c->why[col] = res == CONF_PASS || !why || !why[0] ? NULL : strdup(why);
}

/* f in column col: the whole file, then each case that did not pass, alone */
static void run_col(struct conf_file *f, int col, const struct conf_opts *o)
{
	const struct conf_suite *s = f->suite;
	const char *args[CONF_ARGS];
	char buf[16384], why[512];
	struct conf_run r;
	double t0 = bench_now_us();
	int todo = 0;
	for (size_t i = 0; i < f->ncases; i++) {
		struct conf_case *c = &f->cases[i];
		if (f->selected && !c->wanted)
			continue;
		if (col != CONF_NATIVE && c->res[CONF_NATIVE] != CONF_PASS)
			c->res[col] = CONF_NA;
		else
			todo++;
	}
	if (!todo)
		return;
	int n = s->batch_args(f, args, buf, sizeof(buf));
	double bound = 30 + todo * o->timeout_s; /* a hang in it costs no more than the cases */
	if (run(f, col, o, args, n, bound < BATCH_S ? bound : BATCH_S, &r) == 0) {
		account(col, &r);
		for (size_t i = 0; i < f->ncases; i++) {
			struct conf_case *c = &f->cases[i];
			if ((f->selected && !c->wanted) || c->res[col] == CONF_NA)
				continue;
			why[0] = 0;
			if (s->result(r.out, c->name, why, sizeof(why)) == CONF_PASS)
				set(c, col, CONF_PASS, NULL);
		}
	}
	conf_run_free(&r);
	for (size_t i = 0; i < f->ncases; i++) {
		struct conf_case *c = &f->cases[i];
		if ((f->selected && !c->wanted) || c->res[col] == CONF_NA ||
		    c->res[col] == CONF_PASS)
			continue;
		n = s->case_args(f, c->name, args, buf, sizeof(buf));
		if (run(f, col, o, args, n, o->timeout_s, &r)) {
			set(c, col, CONF_CRASH, "the harness could not start it");
			continue;
		}
		account(col, &r);
		why[0] = 0;
		enum conf_res res = s->result(r.out, c->name, why, sizeof(why));
		if (res == CONF_NONE)
			res = ended(col, &r, o->timeout_s, why, sizeof(why));
		set(c, col, res, why);
		conf_run_free(&r);
	}
	f->secs[col] = (bench_now_us() - t0) / 1e6;
	int pass = 0, na = 0, all = 0;
	for (size_t i = 0; i < f->ncases; i++) {
		if (f->selected && !f->cases[i].wanted)
			continue;
		all++;
		pass += f->cases[i].res[col] == CONF_PASS;
		na += f->cases[i].res[col] == CONF_NA;
	}
	fprintf(stderr, "conformance: %s %s %s: %d/%d pass, %d n/a (%.1f s)\n", s->name, f->name,
		conf_cols[col].name, pass, all - na, na, f->secs[col]);
}

/* the work of a phase: (file, column) pairs taken by the workers in turn */
struct jobs {
	struct conf_file **files;
	size_t nfiles;
	int cols[CONF_COLS], ncols;
	const struct conf_opts *o;
	size_t next;
	pthread_mutex_t mu;
};

static void *worker(void *p)
{
	struct jobs *j = p;
	for (;;) {
		pthread_mutex_lock(&j->mu);
		size_t k = j->next++;
		pthread_mutex_unlock(&j->mu);
		if (k >= j->nfiles * (size_t)j->ncols)
			return NULL;
		struct conf_file *f = j->files[k / (size_t)j->ncols];
		if (!f->err[0])
			run_col(f, j->cols[k % (size_t)j->ncols], j->o);
	}
}

void conf_phase(struct conf_file **files, size_t nfiles, const int *cols, int ncols,
		const struct conf_opts *o, int njobs)
{
	struct jobs jb = {.files = files, .nfiles = nfiles, .ncols = ncols, .o = o}, *j = &jb;
	memcpy(jb.cols, cols, (size_t)ncols * sizeof(*cols));
	pthread_t th[16];
	int n = 0;
	pthread_mutex_init(&j->mu, NULL);
	for (; n < njobs && n < 16; n++)
		if (pthread_create(&th[n], NULL, worker, j))
			break;
	if (n == 0)
		worker(j);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	pthread_mutex_destroy(&j->mu);
}

/* f's target and its cases, listed natively */
void conf_open_file(struct conf_file *f, const struct conf_opts *o)
{
	const char *args[8];
	struct conf_run r;
	if (f->suite->target(o, f->name, &f->t, f->err, sizeof(f->err)))
		return;
	int n = f->suite->list_args(f, args);
	if (run(f, CONF_NATIVE, o, args, n, 120, &r) || !WIFEXITED(r.status) ||
	    WEXITSTATUS(r.status)) {
		snprintf(f->err, sizeof(f->err), "listing its cases failed: %.200s",
			 r.out ? r.out : "");
		conf_run_free(&r);
		return;
	}
	if (f->suite->list(f, r.out))
		snprintf(f->err, sizeof(f->err), "out of memory");
	conf_run_free(&r);
}
