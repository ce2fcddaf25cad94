/* Small helpers the subcommands share: files read with a reason, runtimes and programs, and the
 * options of what ember run and snapshot load (cli_load_opts). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/opt.h"
#include "ember/ember.h"
#include "image/img.h"

int cli_read_file(const char *path, size_t max, uint8_t **buf, size_t *len, char *why,
		  size_t whylen)
{
	int rc = base_read_file(path, max, buf, len);
	if (rc == -EFBIG)
		snprintf(why, whylen, "%s is larger than %zu bytes", path, max);
	else if (rc)
		snprintf(why, whylen, "cannot read %s: %s", path, strerror(-rc));
	return rc ? -1 : 0;
}

const char *cli_env(const char *name)
{
	const char *v = getenv(name);
	return v && v[0] ? v : NULL;
}

int cli_program(const char *runtime, const char *program, struct cli_program *p, char *why,
		size_t whylen)
{
	memset(p, 0, sizeof(*p));
	if (!runtime) {
		snprintf(p->image, sizeof(p->image), "%s", program);
		p->argv[0] = p->image;
		return 0;
	}
	char dir[4096];
	img_runtime_dir(dir, sizeof(dir));
	struct img_runtime lang;
	if (img_runtime_find(dir, runtime, &lang, why, whylen))
		return -1;
	int fd = open(program, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || base_read_fd(fd, 64 << 20, &p->code, &p->code_len)) {
		snprintf(why, whylen, "%s: cannot read the source", program);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	const char *base = strrchr(program, '/');
	snprintf(p->source, sizeof(p->source), "%s", base ? base + 1 : program);
	snprintf(p->path, sizeof(p->path), "%s", program);
	snprintf(p->image, sizeof(p->image), "%s", lang.image);
	snprintf(p->files, sizeof(p->files), "%s", lang.files);
	for (int i = 0; lang.argv[i]; i++) /* the loader's script: a string of the table's */
		p->argv[i] = lang.argv[i];
	p->argv[0] = p->image;
	p->argv[lang.handler_arg] = p->source;
	p->mem = lang.mem;
	return 0;
}

const char *cli_runtime_ext(const char *runtime)
{
	return !strncmp(runtime, "python", 6) ? "py" : !strcmp(runtime, "lua") ? "lua" : "js";
}

const char *cli_suite_files(const char *build, const char *name, char *buf, size_t len)
{
	struct stat st;
	if ((size_t)snprintf(buf, len, "%s/functions/%s/files", build, name) >= len)
		return NULL;
	return !stat(buf, &st) && S_ISDIR(st.st_mode) ? buf : NULL;
}

int cli_program_config(const struct cli_program *p, struct ember_config *cfg, char *why,
		       size_t whylen)
{
	cfg->image = p->image;
	cfg->argv = p->argv;
	cfg->code = p->code;
	cfg->code_len = p->code_len;
	(void)why;
	(void)whylen;
	cfg->runtime_files = p->files[0] ? p->files : NULL;
	if (!cfg->mem_bytes)
		cfg->mem_bytes = p->mem;
	return 0;
}

static const char *opt_mem(void *out, const char *s)
{
	static char why[96];
	uint64_t size;
	if (base_parse_size(s, &size) || size < EMBER_MEM_MIN || size > EMBER_MEM_MAX) {
		snprintf(why, sizeof(why), "--mem needs a size from %lluM to %lluG, such as 64M",
			 EMBER_MEM_MIN >> 20, EMBER_MEM_MAX >> 30);
		return why;
	}
	*(uint64_t *)out = BASE_ROUND_UP(size, EMBER_MEM_ALIGN);
	return NULL;
}

/* what went wrong, by kind, said before the loader's reason */
static const struct {
	int kind;
	const char *what;
} load_errors[] = {
    {EMBER_ERR_IMAGE, "bad image: "},
    {EMBER_ERR_CONFIG, "bad configuration: "},
    {EMBER_ERR_INIT, "the initialisation failed: "},
    {EMBER_ERR_NOMEM, "out of memory: "},
    {EMBER_ERR_IO, "cannot read or write files: "},
};

void cli_load_error(const char *prefix, int rc, const char *err)
{
	const char *what = "";
	for (size_t i = 0; i < sizeof(load_errors) / sizeof(load_errors[0]); i++)
		if (load_errors[i].kind == rc)
			what = load_errors[i].what;
	fprintf(stderr, "%s: %s%s\n", prefix, what, err);
	if (rc == EMBER_ERR_NOKVM)
		fprintf(stderr, "%s: use --backend=ptrace to run without hardware virtualization\n",
			prefix);
}

static const char *opt_env(void *envs, const char *kv)
{
	struct cli_envs *e = envs;
	if (!strchr(kv, '=') || kv[0] == '=')
		return "--env needs NAME=VALUE";
	if (e->n == CLI_MAX_ENV)
		return "too many --env options";
	e->v[e->n++] = kv;
	return NULL;
}

void cli_print_json(FILE *f, json_t *o)
{
	char *s = json_dumps(o, JSON_COMPACT);
	if (s)
		fprintf(f, "%s\n", s);
	free(s);
	json_decref(o);
}

json_t *cli_load_json(const struct ember_load_parts *p)
{
	return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:s?,s:s?,s:s?,s:s?}", "total_us",
			 (json_int_t)p->total_us, "image_us", (json_int_t)p->image_us, "sites_us",
			 (json_int_t)p->sites_us, "interp_us", (json_int_t)p->interp_us,
			 "bundle_us", (json_int_t)p->bundle_us, "state_us", (json_int_t)p->state_us,
			 "plan_us", (json_int_t)p->plan_us, "image_from", p->image_from,
			 "bundle_from", p->bundle_from, "damaged", p->damaged, "state_from",
			 p->state_from);
}

const struct opt cli_load_opts[] = {
    OPT_CALL("mem", 0, struct cli_load_args, cfg.mem_bytes, "SIZE", opt_mem,
	     "guest memory, 8M to 64G, e.g. 64M, 1G (default 64M, 2G for a Go\n"
	     "program; rounded up to 2M)"),
    OPT_CALL("env", 0, struct cli_load_args, env, "K=V", opt_env,
	     "set an environment variable for the program (repeatable)"),
    OPT_STRING("backend", 0, struct cli_load_args, cfg.backend, "NAME",
	       "kvm (default), ptrace (no hardware isolation; for hosts without\n"
	       "/dev/kvm) or auto (kvm when available, else ptrace)"),
    OPT_STRING("runtime", 0, struct cli_load_args, runtime, "NAME",
	       "run a function's source with a language runtime: js (Node.js),\n"
	       "python (CPython), or the small static duktape, lua and\n"
	       "python-static; PROGRAM is then the source file (OpenFaaS's\n"
	       "module.exports = async (event, context) => ... or\n"
	       "handle(event, context), or handler(input, env))"),
    OPT_STRING("files", 0, struct cli_load_args, cfg.files, "PATH",
	       "the function's read-only files, seen at /: a folder or a tar or\n"
	       "zip archive, checked and read once (files, folders and links\n"
	       "only); a root filesystem too: a PROGRAM path naming one of its\n"
	       "files runs that file"),
    OPT_STRING("syscalls", 0, struct cli_load_args, cfg.syscalls, "MODE",
	       "guest (default; trap where the ptrace backend cannot map page 0):\n"
	       "an in-guest runtime serves the common syscalls without leaving the\n"
	       "virtine; trap: every syscall exits to the host (a null-pointer read\n"
	       "faults, as on Linux); EMBER_SYSCALLS sets the default"),
    OPT_END(),
};
