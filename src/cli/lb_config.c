/* `ember lb-config NODES...`: a HAProxy configuration for Ember nodes, on stdout. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/lb.h"
#include "ember/ember.h"

static const char lb_help[] =
    "usage: ember lb-config [--listen ADDR:PORT] [--timeout SECS] [--check-interval MS]\n"
    "                       NODE...\n"
    "\n"
    "Prints a HAProxy configuration that spreads function calls over the ember serve nodes\n"
    "NODE... (each HOST:PORT: an IPv4 address, [IPv6]:PORT or a host name, as the node's\n"
    "--listen). A function's calls go to one node: /function/NAME/... and\n"
    "/async-function/NAME/... hash by NAME alone (balance hash, hash-type consistent), so its\n"
    "warm virtines and snapshots stay on that node and a node's loss moves only its functions.\n"
    "A node takes calls while GET /readyz answers 200 (checked every --check-interval). Calls\n"
    "to /system/ that change state are refused by the balancer: deploy to every node with\n"
    "ember deploy --gateway URL,URL,... (see docs/cluster.md).\n"
    "\n"
    "options:\n"
    "  --listen ADDR:PORT    where HAProxy listens (default " CLI_LB_DEFAULT_LISTEN ")\n"
    "  --timeout SECS        the longest a call may take, HAProxy's timeout server\n"
    "                        (default 60; above your functions' own timeouts)\n"
    "  --check-interval MS   between two health checks of a node (default 1000); a node is\n"
    "                        out after 2 failed checks, back after 2 good ones\n"
    "  --balance-factor PCT  bounded loads (HAProxy's hash-balance-factor, default 150): a\n"
    "                        node serving more than PCT% of the average load passes new calls\n"
    "                        to the next node on the ring, so a hot function spills over;\n"
    "                        0: every call of a function goes to its owner\n"
    "  -h, --help            show this help\n"
    "\n"
    "Check the result with: haproxy -c -f FILE. Exit status: 0, or 125 on a bad option or\n"
    "node address.\n";

static int number(const char *s, unsigned lo, unsigned hi, unsigned *out)
{
	char *end;
	if (!*s || strspn(s, "0123456789") != strlen(s))
		return -1;
	unsigned long v = strtoul(s, &end, 10);
	if (v < lo || v > hi)
		return -1;
	*out = (unsigned)v;
	return 0;
}

int cli_lb_config(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"listen", required_argument, NULL, 'l'},
	    {"timeout", required_argument, NULL, 't'},
	    {"check-interval", required_argument, NULL, 'i'},
	    {"balance-factor", required_argument, NULL, 'f'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct cli_lb_conf c = {
	    .timeout_s = 60, .check_ms = 1000, .balance = 150, .version = EMBER_VERSION};
	const char *listen = CLI_LB_DEFAULT_LISTEN;
	char why[512];
	int opt, rc = CLI_EXIT_EMBER;
	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (opt == 'h')
			return fputs(lb_help, stdout), 0;
		if (opt == 'l')
			listen = optarg;
		else if (opt == 't' && number(optarg, 1, 86400, &c.timeout_s))
			return cli_usage_error("lb-config", "--timeout takes 1 to 86400 seconds");
		else if (opt == 'i' && number(optarg, 100, 3600000, &c.check_ms))
			return cli_usage_error("lb-config",
					       "--check-interval takes 100 to 3600000 ms");
		else if (opt == 'f' &&
			 (number(optarg, 0, 100000, &c.balance) || (c.balance && c.balance <= 100)))
			return cli_usage_error("lb-config",
					       "--balance-factor takes 0 or 101 to 100000");
		else if (opt == '?')
			return cli_usage_error("lb-config",
					       optopt ? "an option is missing its value or unknown"
						      : "unknown option");
	}
	if (cli_lb_addr_parse(listen, &c.listen, why, sizeof(why)))
		return fprintf(stderr, "ember lb-config: --listen %s\n", why), CLI_EXIT_EMBER;
	c.n = (size_t)(argc - optind);
	if (!c.n)
		return cli_usage_error("lb-config", "no node given: name each node's HOST:PORT");
	struct cli_lb_addr *nodes = calloc(c.n, sizeof(*nodes));
	if (!nodes)
		return fprintf(stderr, "ember lb-config: out of memory\n"), CLI_EXIT_EMBER;
	for (size_t i = 0; i < c.n; i++)
		if (cli_lb_addr_parse(argv[optind + (int)i], &nodes[i], why, sizeof(why))) {
			fprintf(stderr, "ember lb-config: node %s\n", why);
			goto out;
		}
	c.nodes = nodes;
	if (cli_lb_check(&c, why, sizeof(why))) {
		fprintf(stderr, "ember lb-config: %s\n", why);
		goto out;
	}
	if (cli_lb_render(stdout, &c) || fflush(stdout)) {
		perror("ember lb-config: writing the configuration");
		goto out;
	}
	rc = 0;
out:
	free(nodes);
	return rc;
}
