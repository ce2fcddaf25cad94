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

/* one socket bound to sa and listening (reuseport: SO_REUSEPORT, for --workers): the fd, or -1 */
static int bind_one(const struct sockaddr *sa, socklen_t len, int reuseport)
{
	int one = 1, s = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	/* as libmicrohttpd sets up its own: a restart may bind at once, IPv6 only on [::] */
	if (s < 0 || setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    (reuseport && setsockopt(s, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one))) ||
	    (sa->sa_family == AF_INET6 &&
	     setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one))) ||
	    bind(s, sa, len) || listen(s, SOMAXCONN)) {
		int e = errno;
		if (s >= 0)
			close(s);
		errno = e;
		return -1;
	}
	return s;
}

int srv_listen_many(const char *addr, int *fds, unsigned n, char *err, size_t errlen)
{
	struct addrinfo *ai;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	unsigned i = 0;
	if (!addr)
		addr = SRV_DEFAULT_LISTEN;
	if (resolve(addr, &ai, err, errlen))
		return -1;
	fds[0] = bind_one(ai->ai_addr, ai->ai_addrlen, n > 1);
	freeaddrinfo(ai);
	/* port 0 picked a port: the others bind the same one */
	if (fds[0] < 0)
		goto fail;
	i = 1;
	if (getsockname(fds[0], (struct sockaddr *)&ss, &sl))
		goto fail;
	for (; i < n; i++)
		if ((fds[i] = bind_one((struct sockaddr *)&ss, sl, 1)) < 0)
			goto fail;
	return 0;
fail:
	snprintf(err, errlen, "cannot listen on %s: %s", addr, strerror(errno));
	while (i-- > 0)
		close(fds[i]);
	return -1;
}

int srv_listen(const char *addr, int *fd, char *err, size_t errlen)
{
	return srv_listen_many(addr, fd, 1, err, errlen);
}
