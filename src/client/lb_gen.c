/* ember lb-config's generator: HOST:PORT checked, HAProxy's configuration for N nodes written. */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "client/lb.h"
#include "server/srv_ring.h"

/* a DNS name: labels of letters, digits and '-', not starting or ending with '-' */
static int dns_ok(const char *h)
{
	size_t n = strlen(h), label = 0;
	if (!n || n > 253)
		return 0;
	for (size_t i = 0; i <= n; i++) {
		char ch = h[i];
		if (ch == '.' || !ch) {
			if (!label || label > 63 || h[i - 1] == '-')
				return 0;
			label = 0;
		} else if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			   (ch >= '0' && ch <= '9') || (ch == '-' && label)) {
			label++;
		} else {
			return 0;
		}
	}
	/* all digits and dots, yet not an IPv4 address (checked before): 10.0.0.300 */
	return strspn(h, "0123456789.") != n;
}

static int port_parse(const char *p, unsigned *out)
{
	if (!*p || strlen(p) > 5 || strspn(p, "0123456789") != strlen(p))
		return -1;
	unsigned long v = strtoul(p, NULL, 10);
	if (v < 1 || v > 65535)
		return -1;
	*out = (unsigned)v;
	return 0;
}

int cli_lb_addr_parse(const char *s, struct cli_lb_addr *a, char *why, size_t whylen)
{
	unsigned char buf[16];
	const char *host = s, *colon;
	size_t hlen;
	memset(a, 0, sizeof(*a));
	if (s[0] == '[') { /* [IPv6]:PORT */
		const char *end = strchr(s, ']');
		if (!end || end[1] != ':')
			return snprintf(why, whylen, "'%s': an IPv6 address is written [ADDR]:PORT",
					s),
			       -1;
		host = s + 1;
		hlen = (size_t)(end - host);
		colon = end + 1;
		a->v6 = 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return snprintf(why, whylen, "'%s' has no port: write HOST:PORT", s), -1;
		if (memchr(s, ':', (size_t)(colon - s)))
			return snprintf(why, whylen,
					"'%s': an IPv6 address is written in brackets, [ADDR]:PORT",
					s),
			       -1;
		hlen = (size_t)(colon - s);
	}
	if (!hlen || hlen >= sizeof(a->host))
		return snprintf(why, whylen, "'%s': the host is %s", s,
				hlen ? "too long" : "missing"),
		       -1;
	memcpy(a->host, host, hlen);
	a->host[hlen] = 0;
	if (port_parse(colon + 1, &a->port))
		return snprintf(why, whylen, "'%s': the port must be a number from 1 to 65535", s),
		       -1;
	if (a->v6 ? inet_pton(AF_INET6, a->host, buf) == 1
		  : inet_pton(AF_INET, a->host, buf) == 1 || dns_ok(a->host))
		return 0;
	return snprintf(why, whylen, "'%s': '%s' is not an %s", s, a->host,
			a->v6 ? "IPv6 address" : "IPv4 address or a host name"),
	       -1;
}

int cli_lb_check(const struct cli_lb_conf *c, char *why, size_t whylen)
{
	if (!c->n)
		return snprintf(why, whylen, "no node given: name at least one HOST:PORT"), -1;
	if (c->n > CLI_LB_MAX_NODES)
		return snprintf(why, whylen, "%zu nodes: at most %d", c->n, CLI_LB_MAX_NODES), -1;
	for (size_t i = 0; i < c->n; i++)
		for (size_t j = 0; j < i; j++)
			if (c->nodes[i].port == c->nodes[j].port &&
			    !strcasecmp(c->nodes[i].host, c->nodes[j].host))
				return snprintf(why, whylen, "node %zu (%s:%u) is node %zu again",
						i + 1, c->nodes[i].host, c->nodes[i].port, j + 1),
				       -1;
	return 0;
}

/* HAProxy takes an IPv6 address with its port after the last ':' */
static void addr_print(FILE *f, const struct cli_lb_addr *a)
{
	fprintf(f, "%s%s:%u", a->v6 ? "ipv6@" : "", a->host, a->port);
}

static const char head[] =
    "global\n"
    "    maxconn 4000\n"
    "\n"
    "defaults\n"
    "    mode http\n"
    "    option http-keep-alive\n"
    "    timeout connect 5s\n"
    "    timeout client 60s\n"
    "    timeout http-request 30s\n"
    "    timeout http-keep-alive 60s\n"
    "    timeout queue 30s\n"
    /* a connection a dead node refused is tried once more, on the node the hash picks next */
    "    retries 2\n"
    "    option redispatch 1\n";

static const char frontend[] =
    /* a deployment sent here would reach one node: the others would never have it */
    "    http-request return status 405 content-type text/plain string \"management calls "
    "that change state go to every node, not through the balancer: ember deploy --gateway "
    "URL,URL,...\\n\" if { path_beg /system/ } !{ method GET HEAD }\n"
    "    default_backend ember_nodes\n"
    "\n"
    "backend ember_nodes\n"
    /* /function/NAME/... and /async-function/NAME/...: the hash is NAME's alone, so a path's
     * rest, a query string and the async route keep a function on its node */
    "    balance hash path,field(3,/)\n"
    /* spelled out (what `consistent` alone means): the nodes compute this ring (srv_ring.c) */
    "    hash-type consistent sdbm avalanche\n"
    "    option httpchk\n"
    "    http-check send meth GET uri /readyz\n"
    "    http-check expect status 200\n"
    "    http-response set-header X-Ember-Node %[srv_name]\n";

/* A node's id, the key HAProxy hashes it by (its points on the ring): made from its address,
 * not its place in the list, so that a node keeps its functions when the list is written in
 * another order or nodes are added or removed, and so that a node of `ember serve --cluster`
 * computes the same ring (srv_ring.c). A collision takes the next free id. */
static unsigned long node_id(const struct cli_lb_conf *c, size_t i, const unsigned long *ids)
{
	unsigned long id =
	    ring_node_id(c->nodes[i].host, strlen(c->nodes[i].host), c->nodes[i].port);
	for (size_t j = 0; j < i; j++)
		if (ids[j] == id) {
			id = id % 0x7fffffffu + 1;
			j = (size_t)-1; /* again, against all of them */
		}
	return id;
}

int cli_lb_render(FILE *f, const struct cli_lb_conf *c)
{
	unsigned long *ids = calloc(c->n ? c->n : 1, sizeof(*ids));
	if (!ids)
		return -1;
	fprintf(
	    f, "# HAProxy configuration for %zu Ember node%s, made by ember lb-config (Ember %s)\n",
	    c->n, c->n == 1 ? "" : "s", c->version);
	fprintf(f, "# A function's calls go to one node, picked by hashing its name (consistent:\n"
		   "# a node's loss moves only its functions), unless it is past the bounded load\n"
		   "# (hash-balance-factor); a node is used while GET /readyz answers 200.\n"
		   "# Check it with: haproxy -c -f FILE\n");
	fputs(head, f);
	fprintf(f, "    timeout server %us\n\nfrontend ember\n    bind ", c->timeout_s);
	addr_print(f, &c->listen);
	fputc('\n', f);
	fputs(frontend, f);
	if (c->balance) /* bounded loads: a function hotter than one node spills to the next */
		fprintf(f, "    hash-balance-factor %u\n", c->balance);
	fprintf(f, "    default-server check inter %ums fall 2 rise 2\n", c->check_ms);
	for (size_t i = 0; i < c->n; i++) {
		ids[i] = node_id(c, i, ids);
		fprintf(f, "    server node%zu ", i + 1);
		addr_print(f, &c->nodes[i]);
		fprintf(f, " id %lu\n", ids[i]);
	}
	free(ids);
	return ferror(f) ? -1 : 0;
}
