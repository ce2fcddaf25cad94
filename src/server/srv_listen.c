/* The listening socket: ADDR:PORT resolved, bound and listening, made by the server itself or
 * ahead of it by a caller that binds as root and then gives root up (ember serve --user). */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/srv_serve.h"

/* "ADDR:PORT" or "[V6ADDR]:PORT" */
static int resolve(const char *listen, struct addrinfo **ai, char *err, size_t errlen)
{
	char host[128];
	const char *colon = strrchr(listen, ':');
	size_t hl = colon ? (size_t)(colon - listen) : 0;
	if (!colon || hl >= sizeof(host) || !colon[1])
		return snprintf(err, errlen, "--listen needs ADDR:PORT, not '%s'", listen), -1;
	if (listen[0] == '[' && hl >= 2 && listen[hl - 1] == ']')
		memcpy(host, listen + 1, hl - 2), host[hl - 2] = 0;
	else
		memcpy(host, listen, hl), host[hl] = 0;
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
	int rc = getaddrinfo(host[0] ? host : NULL, colon + 1, &hints, ai);
	if (rc)
		return snprintf(err, errlen, "%s: %s", listen, gai_strerror(rc)), -1;
	return 0;
}

int srv_listen(const char *addr, int *fd, char *err, size_t errlen)
{
	struct addrinfo *ai;
	if (!addr)
		addr = SRV_DEFAULT_LISTEN;
	if (resolve(addr, &ai, err, errlen))
		return -1;
	int one = 1, s = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	/* as libmicrohttpd sets up its own: a restart may bind at once, IPv6 only on [::] */
	if (s < 0 || setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    (ai->ai_family == AF_INET6 &&
	     setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one))) ||
	    bind(s, ai->ai_addr, ai->ai_addrlen) || listen(s, SOMAXCONN)) {
		snprintf(err, errlen, "cannot listen on %s: %s", addr, strerror(errno));
		if (s >= 0)
			close(s);
		freeaddrinfo(ai);
		return -1;
	}
	freeaddrinfo(ai);
	*fd = s;
	return 0;
}
