/* `ember run`: one program, its request on stdin, its output on stdout and stderr. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "ember/ember.h"

#define MAX_ENV     1024
#define MAX_REQUEST (1ULL << 30)

static const char run_help[] =
	"usage: ember run [OPTIONS] PROGRAM [ARGS...]\n"
	"\n"
	"Runs PROGRAM, a static x86-64 Linux executable, in a virtine. The request is read from\n"
	"stdin; the program's stdout and stderr are written to ours; the exit status is its own.\n"
	"\n"
	"options:\n"
	"  --mem SIZE        guest memory, e.g. 64M, 1G (default 64M, rounded up to 2M)\n"
	"  --timeout SECS    wall-clock limit per invocation (default 10)\n"
	"  --env K=V         set an environment variable for the program (repeatable)\n"
	"  --output-limit SIZE  stdout + stderr limit (default 6M)\n"
	"  --backend NAME    kvm (default), ptrace (no hardware isolation; for hosts without\n"
	"                    /dev/kvm) or auto (kvm when available, else ptrace)\n"
	"  --stats           write one JSON object with counters as the last line of stderr\n"
	"  -h, --help        show this help\n"
	"\n"
	"exit status: the program's own; 124 timeout; 125 Ember could not run it (bad image,\n"
	"bad usage, no KVM); 126 a limit was exceeded; 128+N the program died as of signal N\n"
	"(139 page fault or general protection fault, 136 divide error, 132 invalid opcode,\n"
	"134 abort).\n";

static const char *const outcome_names[] = {"ok", "crash", "timeout", "limit", "error"};

static json_t *stats_json(const struct ember_function *fn, const struct ember_result *r)
{
	struct ember_info info;
	ember_info(fn, &info);
	json_t *sys = json_array();
	for (size_t i = 0; i < r->nsyscalls; i++) {
		const struct ember_syscall_count *c = &r->syscalls[i];
		json_array_append_new(sys, json_pack("{s:i,s:s?,s:I,s:I}", "nr", c->nr, "name",
						     c->name, "served", (json_int_t)c->served,
						     "denied", (json_int_t)c->denied));
	}
	return json_pack("{s:s,s:s,s:i,s:I,s:{s:I,s:I,s:I,s:I,s:I},s:o,s:{s:I,s:I,s:I}}", "backend",
			 info.backend, "outcome", outcome_names[r->outcome], "exit_code",
			 r->exit_code, "rewritten_sites", (json_int_t)info.rewritten_sites, "exits",
			 "total", (json_int_t)r->exits, "hypercall",
			 (json_int_t)r->exits_by_reason[0], "fault",
			 (json_int_t)r->exits_by_reason[1], "timeout",
			 (json_int_t)r->exits_by_reason[2], "error",
			 (json_int_t)r->exits_by_reason[3], "syscalls", sys, "time_us", "setup",
			 (json_int_t)r->setup_us, "load", (json_int_t)r->load_us, "run",
			 (json_int_t)r->run_us);
}

static int usage_error(const char *msg)
{
	fprintf(stderr, "ember run: %s\n(see 'ember run --help')\n", msg);
	return CLI_EXIT_EMBER;
}

int cli_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{"mem", required_argument, NULL, 'm'},	 {"timeout", required_argument, NULL, 't'},
		{"env", required_argument, NULL, 'e'},	 {"stats", no_argument, NULL, 's'},
		{"backend", required_argument, NULL, 'b'}, {"output-limit", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},	 {NULL, 0, NULL, 0},
	};
	struct ember_config cfg = {0};
	const char *envp[MAX_ENV + 1];
	int nenv = 0, stats = 0, c;
	uint64_t size;
	char *end;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (cli_parse_size(optarg, &size) || size == 0)
				return usage_error("--mem needs a size such as 64M or 1G");
			cfg.mem_bytes = (size + (2ULL << 20) - 1) & ~((2ULL << 20) - 1);
			break;
		case 't':
			cfg.timeout_s = strtod(optarg, &end);
			if (*end || end == optarg || !(cfg.timeout_s > 0))
				return usage_error("--timeout needs a positive number of seconds");
			break;
		case 'e':
			if (!strchr(optarg, '=') || optarg[0] == '=')
				return usage_error("--env needs NAME=VALUE");
			if (nenv == MAX_ENV)
				return usage_error("too many --env options");
			envp[nenv++] = optarg;
			break;
		case 'o':
			if (cli_parse_size(optarg, &cfg.output_limit) || cfg.output_limit == 0)
				return usage_error("--output-limit needs a size such as 6M");
			break;
		case 'b':
			cfg.backend = optarg;
			break;
		case 's':
			stats = 1;
			break;
		case 'h':
			fputs(run_help, stdout);
			return 0;
		default:
			return usage_error("unknown option");
		}
	}
	if (optind >= argc)
		return usage_error("no PROGRAM given");
	envp[nenv] = NULL;
	cfg.image = argv[optind];
	cfg.argv = (const char *const *)&argv[optind];
	cfg.envp = envp;
	char err[256];
	struct ember_function *fn;
	int rc = ember_load(&cfg, &fn, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "ember: %s\n", err);
		if (rc == EMBER_ERR_NOKVM)
			fprintf(stderr, "ember: use --backend=ptrace to run without hardware "
					"virtualization\n");
		return CLI_EXIT_EMBER;
	}
	uint8_t *req;
	size_t req_len;
	if (cli_read_all(0, &req, &req_len, MAX_REQUEST)) {
		ember_unload(fn);
		fprintf(stderr, "ember: cannot read the request from stdin\n");
		return CLI_EXIT_EMBER;
	}
	struct ember_result res;
	ember_invoke(fn, req, req_len, &res);
	free(req);
	cli_write_all(1, res.out, res.out_len);
	cli_write_all(2, res.log, res.log_len);
	if (res.outcome != EMBER_OK)
		fprintf(stderr, "ember: %s\n", res.message);
	if (stats) {
		json_t *j = stats_json(fn, &res);
		char *s = json_dumps(j, JSON_COMPACT);
		fprintf(stderr, "%s\n", s);
		free(s);
		json_decref(j);
	}
	int code = res.exit_code;
	ember_result_free(&res);
	ember_unload(fn);
	return code;
}
