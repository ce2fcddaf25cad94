/* The ember command: dispatches to a subcommand from a table. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "ember/ember.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} commands[] = {
    {"run", cli_run, "run a static x86-64 program in a virtine, request on stdin"},
    {"serve", cli_serve, "serve functions over HTTP (OpenFaaS-compatible API)"},
    {"snapshot", cli_snapshot, "build functions' snapshots on disk ahead of their first request"},
    {"bench", cli_bench, "measure Ember next to its floor and its peers"},
    {"deploy", cli_deploy, "deploy the functions of an OpenFaaS stack file (stack.yml)"},
    {"invoke", cli_invoke, "invoke a deployed function, request on stdin, answer on stdout"},
    {"list", cli_list, "list the functions deployed on a server"},
    {"lb-config", cli_lb_config, "print a HAProxy configuration for several ember serve nodes"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: ember COMMAND [OPTIONS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\n'ember COMMAND --help' tells more. Ember %s\n", EMBER_VERSION);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return CLI_EXIT_EMBER;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("ember %s\n", EMBER_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "ember: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return CLI_EXIT_EMBER;
}
