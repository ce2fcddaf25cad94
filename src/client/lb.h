/* ember lb-config's generator: node addresses checked, a HAProxy configuration written. */
#ifndef EMBER_CLI_LB_H
#define EMBER_CLI_LB_H

#include <stddef.h>
#include <stdio.h>

#define CLI_LB_DEFAULT_LISTEN "0.0.0.0:8080"
#define CLI_LB_MAX_NODES      1024

/* one address, HOST:PORT: an IPv4 address, [IPv6]:PORT or a DNS name */
struct cli_lb_addr {
	char host[254]; /* without the brackets */
	unsigned port;
	int v6;
};

struct cli_lb_conf {
	struct cli_lb_addr listen;
	const struct cli_lb_addr *nodes;
	size_t n;
	unsigned timeout_s;  /* the longest a function may answer (HAProxy's timeout server) */
	unsigned check_ms;   /* the health checks' interval */
	unsigned balance;    /* hash-balance-factor: a node past this % of the average load passes
				new calls to the next on the ring (0: off) */
	const char *version; /* Ember's, in the header comment */
};

/* s parsed into a; -1 with why (which names s) when it is not HOST:PORT */
int cli_lb_addr_parse(const char *s, struct cli_lb_addr *a, char *why, size_t whylen);
/* -1 with why when two nodes are the same address */
int cli_lb_check(const struct cli_lb_conf *c, char *why, size_t whylen);
/* the configuration on f; -1 when writing failed */
int cli_lb_render(FILE *f, const struct cli_lb_conf *c);

#endif
