/* What bench/loadgen and bench/attack share: the clock, fatal errors, URLs, source addresses. */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client.h"

const char *client_name = "client";

double client_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void client_die(const char *msg)
{
	fprintf(stderr, "%s: %s\n", client_name, msg);
	exit(2);
}

void client_url(const char *url, struct client_url *u)
{
	int off = 0;
	memset(u, 0, sizeof(*u));
	if (sscanf(url, "http://%63[0-9.]:%u%n", u->host, &u->port, &off) != 2 || u->port > 65535)
		client_die("the URL must be http://A.B.C.D:PORT/PATH");
	u->path = url[off] ? url + off : "/";
	u->dst.sin_family = AF_INET;
	u->dst.sin_port = htons((uint16_t)u->port);
	if (inet_pton(AF_INET, u->host, &u->dst.sin_addr) != 1)
		client_die("bad address in the URL");
}

void client_src(const char *addr, struct sockaddr_in *src)
{
	memset(src, 0, sizeof(*src));
	src->sin_family = AF_INET;
	if (inet_pton(AF_INET, addr, &src->sin_addr) != 1)
		client_die("bad -S address");
}

void client_opts(int argc, char **argv, const char *spec, const struct client_opt *t, int n,
		 void (*other)(int c, char *arg))
{
	int o;
	while ((o = getopt(argc, argv, spec)) != -1) {
		int i = 0;
		while (i < n && t[i].c != o)
			i++;
		if (i == n)
			other(o, optarg);
		else if (t[i].kind == OPT_DOUBLE)
			*(double *)t[i].dst = atof(optarg);
		else if (t[i].kind == OPT_INT)
			*(int *)t[i].dst = atoi(optarg);
		else if (t[i].kind == OPT_U64)
			*(uint64_t *)t[i].dst = strtoull(optarg, NULL, 10);
		else
			*(const char **)t[i].dst = optarg;
	}
}
