/* `ember lb-config NODES...`: a HAProxy configuration for Ember nodes, on stdout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/opt.h"
#include "client/lb.h"
#include "ember/ember.h"

/* --balance-factor PCT: 0 (off) or 101 to 100000, HAProxy's hash-balance-factor's range */
static const char *balance(void *at, const char *s)
{
	char *end;
	unsigned long v = s[0] >= '0' && s[0] <= '9' ? strtoul(s, &end, 10) : 1;
	if (s[0] < '0' || s[0] > '9' || *end || (v && (v <= 100 || v > 100000)))
		return "--balance-factor takes 0 or 101 to 100000";
	*(unsigned *)at = (unsigned)v;
	return NULL;
}

/* what the command line sets */
struct lb_args {
	struct cli_lb_conf c;
	const char *listen;
};

static const char lb_head[] =
    "usage: ember lb-config [--listen ADDR:PORT] [--timeout SECS] [--check-interval MS]\n"
    "                       [--balance-factor PCT] NODE...\n"
    "\n"
    "Prints a HAProxy configuration that spreads function calls over the ember serve nodes\n"
    "NODE... (each HOST:PORT: an IPv4 address, [IPv6]:PORT or a host name, as the node's\n"
    "--listen). A function's calls go to one node, its owner: /function/NAME/... and\n"
    "/async-function/NAME/... hash by NAME alone (balance hash, hash-type consistent), so its\n"
    "warm virtines and snapshots stay on that node and a node's loss moves only its "
    "functions;\n"
    "an owner past --balance-factor of the average load passes new calls to the next node\n"
    "on the ring. Nodes run with ember serve --cluster compute the same ring and load what\n"
    "they own. A node takes calls while GET /readyz answers 200 (checked every\n"
    "--check-interval). Calls to /system/ that change state are refused by the balancer:\n"
    "deploy through a node of a --cluster, or to every node with\n"
    "ember deploy --gateway URL,URL,... (see docs/cluster.md).\n"
    "\n"
    "options:\n";
static const char lb_tail[] =
    "\n"
    "Check the result with: haproxy -c -f FILE. Exit status: 0, or 125 on a bad option or\n"
    "node address.\n";

static const struct opt lb_opts[] = {
    OPT_STRING("listen", 0, struct lb_args, listen, "ADDR:PORT",
	       "where HAProxy listens (default " CLI_LB_DEFAULT_LISTEN ")"),
    OPT_UINT("timeout", 0, struct lb_args, c.timeout_s, "SECS", 1, 86400,
	     "--timeout takes 1 to 86400 seconds",
	     "the longest a call may take, HAProxy's timeout server\n"
	     "(default 60; above your functions' own timeouts)"),
    OPT_UINT("check-interval", 0, struct lb_args, c.check_ms, "MS", 100, 3600000,
	     "--check-interval takes 100 to 3600000 ms",
	     "between two health checks of a node (default 1000); a node is\n"
	     "out after 2 failed checks, back after 2 good ones"),
    OPT_CALL("balance-factor", 0, struct lb_args, c.balance, "PCT", balance,
	     "bounded loads (HAProxy's hash-balance-factor, default 150): a\n"
	     "node serving more than PCT% of the average load passes new calls\n"
	     "to the next node on the ring, so a hot function spills over;\n"
	     "0: every call of a function goes to its owner"),
    OPT_END(),
};

static const struct opt_cmd lb_cmd = OPT_CMD("lb-config", lb_head, lb_opts, lb_tail, 24, 0, NULL);

int cli_lb_config(int argc, char **argv)
{
	struct lb_args a = {
	    .c = {.timeout_s = 60, .check_ms = 1000, .balance = 150, .version = EMBER_VERSION},
	    .listen = CLI_LB_DEFAULT_LISTEN};
	char why[512];
	int optind, rc = opt_parse(&lb_cmd, &a, argc, argv, &optind);
	if (rc >= 0)
		return rc;
	struct cli_lb_conf c = a.c;
	const char *listen = a.listen;
	rc = CLI_EXIT_EMBER;
	if (cli_lb_addr_parse(listen, &c.listen, why, sizeof(why)))
		return fprintf(stderr, "ember lb-config: --listen %s\n", why), CLI_EXIT_EMBER;
	c.n = (size_t)(argc - optind);
	if (!c.n)
		return opt_usage_error(&lb_cmd, "no node given: name each node's HOST:PORT");
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
