/* embed: a host program that embeds libember: one function loaded, invoked once per input line. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ember/ember.h>

static const char usage[] =
    "usage: embed IMAGE [SOURCE] <REQUESTS\n"
    "\n"
    "Loads IMAGE, a static x86-64 program, into Ember (initialised once, snapshotted at its\n"
    "first read of a request), then invokes it once per line of stdin, the line without its\n"
    "newline as the request, and prints each answer. With SOURCE, IMAGE is a language runtime\n"
    "(PREFIX/lib/ember/runtimes/js or lua) and SOURCE the handler it runs. EMBER_BACKEND picks\n"
    "the backend: kvm (default), ptrace or auto. The function's stderr goes to ours; the last\n"
    "line of stderr counts the requests (warm: started from the snapshot). Exit status: 0\n"
    "when every request succeeded, 1 when one failed, 2 when the function could not be loaded.\n";

/* the whole of a file, or NULL */
static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	if (!f || fseek(f, 0, SEEK_END) || (*len = (size_t)ftell(f), fseek(f, 0, SEEK_SET)) ||
	    !(buf = malloc(*len + 1)) || fread(buf, 1, *len, f) != *len) {
		free(buf);
		buf = NULL;
	}
	if (f)
		fclose(f);
	return buf;
}

/* one invocation: its answer printed, 0 when the function exited 0 */
static int serve(struct ember_function *fn, const char *req, size_t len, unsigned *warm)
{
	struct ember_result res;
	ember_invoke(fn, req, len, &res);
	fwrite(res.out, 1, res.out_len, stdout);
	fflush(stdout);
	fwrite(res.log, 1, res.log_len, stderr);
	int ok = res.outcome == EMBER_OK && res.status == 0;
	if (res.outcome != EMBER_OK)
		fprintf(stderr, "embed: %s\n", res.message);
	else if (res.status)
		fprintf(stderr, "embed: the function exited %d\n", res.status);
	*warm += (unsigned)res.warm;
	ember_result_free(&res);
	return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3 || argv[1][0] == '-') {
		fputs(usage, argc == 2 && !strcmp(argv[1], "--help") ? stdout : stderr);
		return argc == 2 && !strcmp(argv[1], "--help") ? 0 : 2;
	}
	struct ember_config cfg = {.image = argv[1], .backend = getenv("EMBER_BACKEND")};
	const char *args[3] = {argv[1], NULL, NULL};
	size_t code_len = 0;
	char *code = NULL;
	if (argc == 3) {
		const char *base = strrchr(argv[2], '/');
		args[1] = base ? base + 1 : argv[2]; /* a runtime names its source by argv[1] */
		if (!(code = read_file(argv[2], &code_len))) {
			perror(argv[2]);
			return 2;
		}
		cfg.code = code;
		cfg.code_len = code_len;
	}
	cfg.argv = args;

	char err[EMBER_ERR_MAX];
	struct ember_function *fn;
	int rc = ember_load(&cfg, &fn, err, sizeof(err));
	free(code);
	if (rc) {
		/* the kind says whose fault it is: the function's (image, config, init) or the
		 * host's (nokvm, nomem, io) */
		fprintf(stderr, "embed: %s: %s (%s)\n", argv[1], err, ember_error_name(rc));
		return 2;
	}
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	unsigned count = 0, failed = 0, warm = 0;
	while ((n = getline(&line, &cap, stdin)) >= 0) {
		if (n > 0 && line[n - 1] == '\n')
			line[--n] = 0;
		count++;
		failed += serve(fn, line, (size_t)n, &warm) != 0;
	}
	struct ember_info info;
	ember_info(fn, &info);
	fprintf(stderr, "embed: requests %u, failed %u, warm %u, backend %s\n", count, failed, warm,
		info.backend);
	free(line);
	ember_unload(fn);
	return failed ? 1 : 0;
}
