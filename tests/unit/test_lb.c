/* Unit tests for ember lb-config's generator: node addresses checked, HAProxy's lines written. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/lb.h"
#include "server/srv_ring.h"

static void expect_addr(const char *s, const char *host, unsigned port, int v6)
{
	struct cli_lb_addr a;
	char why[512];
	if (cli_lb_addr_parse(s, &a, why, sizeof(why)))
		fail_msg("'%s' refused: %s", s, why);
	if (strcmp(a.host, host) || a.port != port || a.v6 != v6)
		fail_msg("'%s' -> host '%s' port %u v6 %d", s, a.host, a.port, a.v6);
}

/* refused, with a reason that names the input and says want */
static void expect_refused(const char *s, const char *want)
{
	struct cli_lb_addr a;
	char why[512] = "";
	if (!cli_lb_addr_parse(s, &a, why, sizeof(why)))
		fail_msg("'%s' accepted as host '%s' port %u", s, a.host, a.port);
	if (!strstr(why, s) || !strstr(why, want))
		fail_msg("'%s' refused with '%s', wanted it named and '%s'", s, why, want);
}

static void test_addresses(void **state)
{
	(void)state;
	expect_addr("10.0.0.1:8080", "10.0.0.1", 8080, 0);
	expect_addr("node-1.example.com:1", "node-1.example.com", 1, 0);
	expect_addr("localhost:65535", "localhost", 65535, 0);
	expect_addr("[::1]:8080", "::1", 8080, 1);
	expect_addr("[fd00::2]:80", "fd00::2", 80, 1);
}

static void test_bad_addresses(void **state)
{
	(void)state;
	expect_refused("10.0.0.1", "no port");
	expect_refused("10.0.0.1:", "port");
	expect_refused("10.0.0.1:0", "1 to 65535");
	expect_refused("10.0.0.1:65536", "1 to 65535");
	expect_refused("10.0.0.1:80x", "port");
	expect_refused("10.0.0.1:+80", "port");
	expect_refused(":8080", "host is missing");
	expect_refused("10.0.0.300:80", "not an IPv4 address");
	expect_refused("bad_host:80", "not an IPv4 address");
	expect_refused("-bad.example:80", "not an");
	expect_refused("bad-.example:80", "not an");
	expect_refused("a..b:80", "not an");
	expect_refused("::1:8080", "brackets");
	expect_refused("[::1]8080", "[ADDR]:PORT");
	expect_refused("[10.0.0.1]:80", "not an IPv6 address");
	expect_refused("a b:80", "not an");
}

static char *render(const struct cli_lb_conf *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(cli_lb_render(f, c), 0);
	fclose(f);
	return buf;
}

static void expect_has(const char *text, const char *want)
{
	if (!strstr(text, want))
		fail_msg("no '%s' in:\n%s", want, text);
}

static void test_render(void **state)
{
	(void)state;
	struct cli_lb_addr nodes[3];
	char why[512];
	assert_int_equal(cli_lb_addr_parse("10.1.0.1:8080", &nodes[0], why, sizeof(why)), 0);
	assert_int_equal(cli_lb_addr_parse("ember-b:9000", &nodes[1], why, sizeof(why)), 0);
	assert_int_equal(cli_lb_addr_parse("[fd00::3]:8080", &nodes[2], why, sizeof(why)), 0);
	struct cli_lb_conf c = {.nodes = nodes,
				.n = 3,
				.timeout_s = 90,
				.check_ms = 250,
				.balance = 150,
				.version = "test"};
	assert_int_equal(cli_lb_addr_parse("127.0.0.1:9999", &c.listen, why, sizeof(why)), 0);
	assert_int_equal(cli_lb_check(&c, why, sizeof(why)), 0);
	char *t = render(&c);
	expect_has(t, "3 Ember nodes");
	expect_has(t, "\n    bind 127.0.0.1:9999\n");
	/* the function's name alone: field 3 of /function/NAME/... and /async-function/NAME/... */
	expect_has(t, "\n    balance hash path,field(3,/)\n");
	expect_has(t, "\n    hash-type consistent sdbm avalanche\n");
	expect_has(t, "\n    hash-balance-factor 150\n");
	expect_has(t, "\n    option httpchk\n");
	expect_has(t, "http-check send meth GET uri /readyz\n");
	expect_has(t, "http-check expect status 200\n");
	expect_has(t, "timeout server 90s\n");
	expect_has(t, "default-server check inter 250ms fall 2 rise 2\n");
	expect_has(t, "\n    server node1 10.1.0.1:8080 id ");
	expect_has(t, "\n    server node2 ember-b:9000 id ");
	expect_has(t, "\n    server node3 ipv6@fd00::3:8080 id ");
	expect_has(t, "if { path_beg /system/ } !{ method GET HEAD }");
	assert_null(strstr(t, "node4"));
	free(t);
}

/* the id of the server line of host:port in t */
static unsigned long id_of(const char *t, const char *addr)
{
	char want[300];
	snprintf(want, sizeof(want), " %s id ", addr);
	const char *p = strstr(t, want);
	if (!p)
		fail_msg("no '%s' in:\n%s", want, t);
	return strtoul(p + strlen(want), NULL, 10);
}

/* a node's id (its place on the hash ring) is its address's: the same in any order, with
 * other nodes added or gone, and each node's own */
static void test_ids(void **state)
{
	(void)state;
	static const char *const addrs[] = {"10.0.0.1:8080", "10.0.0.2:8080", "10.0.0.3:8080"};
	struct cli_lb_addr fwd[3], rev[3];
	char why[512];
	for (int i = 0; i < 3; i++) {
		assert_int_equal(cli_lb_addr_parse(addrs[i], &fwd[i], why, sizeof(why)), 0);
		rev[2 - i] = fwd[i];
	}
	struct cli_lb_conf a = {.nodes = fwd, .n = 3, .version = "t"}, b = a, one = a;
	b.nodes = rev;
	one.nodes = &fwd[1];
	one.n = 1;
	char *ta = render(&a), *tb = render(&b), *t1 = render(&one);
	for (int i = 0; i < 3; i++) {
		unsigned long id = id_of(ta, addrs[i]);
		assert_true(id >= 1 && id <= 0x7fffffffUL);
		assert_int_equal(id, id_of(tb, addrs[i]));
		for (int j = 0; j < i; j++)
			assert_int_not_equal(id, id_of(ta, addrs[j]));
	}
	assert_int_equal(id_of(ta, addrs[1]), id_of(t1, addrs[1]));
	free(ta);
	free(tb);
	free(t1);
}

static void test_check(void **state)
{
	(void)state;
	struct cli_lb_addr nodes[2];
	char why[512];
	struct cli_lb_conf c = {.nodes = nodes, .n = 2, .version = "test"};
	assert_int_equal(cli_lb_addr_parse("Node-A:80", &nodes[0], why, sizeof(why)), 0);
	assert_int_equal(cli_lb_addr_parse("node-a:80", &nodes[1], why, sizeof(why)), 0);
	assert_int_equal(cli_lb_check(&c, why, sizeof(why)), -1);
	expect_has(why, "node 2 (node-a:80) is node 1 again");
	assert_int_equal(cli_lb_addr_parse("node-a:81", &nodes[1], why, sizeof(why)), 0);
	assert_int_equal(cli_lb_check(&c, why, sizeof(why)), 0);
	c.n = 0;
	assert_int_equal(cli_lb_check(&c, why, sizeof(why)), -1);
	expect_has(why, "no node");
	c.n = CLI_LB_MAX_NODES + 1;
	assert_int_equal(cli_lb_check(&c, why, sizeof(why)), -1);
	expect_has(why, "at most");
}

/* the ring of `ember serve --cluster` picks as HAProxy 2.6.12 (Debian 12) picked, given
 * lb-config's output for these three nodes: the owners, and the next owners once node 2 was
 * down (read from X-Ember-Node through a real HAProxy) */
static void test_ring(void **state)
{
	(void)state;
	static const struct {
		const char *name;
		long owner, next; /* node1 = 0; next: with node2 (1) down */
	} want[] = {
	    {"f0", 0, 0},     {"f1", 1, 0},   {"f2", 1, 2},
	    {"f3", 0, 0},     {"f4", 2, 2},   {"f5", 1, 2},
	    {"hello", 1, 2},  {"args", 2, 2}, {"something-longer", 2, 2},
	    {"abcdef", 0, 0}, {"x", 1, 0},    {"image-resize", 1, 0},
	    {"n3", 2, 2},     {"n4", 0, 0},   {"n8", 1, 2},
	};
	uint32_t ids[3] = {ring_addr_id("127.0.0.1:24101"), ring_addr_id("127.0.0.1:24102"),
			   ring_addr_id("127.0.0.1:24103")};
	assert_int_equal(ids[0], 190077238); /* the ids lb-config wrote */
	assert_int_equal(ids[1], 173299619);
	assert_int_equal(ids[2], 156522000);
	assert_int_equal(ring_addr_id("[fd00::3]:8080"), ring_node_id("FD00::3", 7, 8080));
	assert_int_equal(ring_addr_id("nohost"), 0);
	struct ring r;
	assert_int_equal(ring_build(&r, ids, 3), 0);
	assert_int_equal(r.n, 3 * RING_POINTS);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		assert_int_equal(ring_pick(&r, want[i].name, -1), want[i].owner);
		if (want[i].owner == 1)
			assert_int_equal(ring_pick(&r, want[i].name, 1), want[i].next);
	}
	ring_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_addresses), cmocka_unit_test(test_bad_addresses),
	    cmocka_unit_test(test_render),    cmocka_unit_test(test_ids),
	    cmocka_unit_test(test_check),     cmocka_unit_test(test_ring),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
