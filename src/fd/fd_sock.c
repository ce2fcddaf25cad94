/* Connected pairs of Unix stream sockets inside one invocation (socketpair): each end holds a
 * ring its peer writes (fd_pipe.c's), shut down in either direction as Linux's sk_shutdown
 * says; the socket calls on them. Every other socket stays refused (the network). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "fd/fd.h"

/* an end's at: what is shut of it (its own shutdown, or its peer's, or its peer closed) */
#define RCV_SHUT  1
#define SEND_SHUT 2
#define SOCK_BUF  65536 /* SO_SNDBUF and SO_RCVBUF: the ring */

static struct sys_obj *peer(struct sys_state *st, const struct sys_obj *o)
{
	return o->id ? &st->obj[o->id - 1] : NULL;
}

/* fd's socket, or NULL with *rc: EBADF (not open) or ENOTSOCK */
static struct sys_obj *sock_of(struct sys_state *st, uint64_t fd, long *rc)
{
	struct sys_obj *o = sys_fd_obj(st, fd);
	*rc = !o ? -EBADF : o->kind != SYS_KIND_SOCK ? -ENOTSOCK : 0;
	return *rc ? NULL : o;
}

static long sock_recv(struct sys_state *st, struct sys_obj *o, const struct sys_iov *v, int n,
		      int flags)
{
	int how = (o->at & RCV_SHUT ? SYS_RING_END : 0) |
		  (o->flags & O_NONBLOCK || flags & MSG_DONTWAIT ? SYS_RING_NONBLOCK : 0) |
		  (flags & MSG_PEEK ? SYS_RING_PEEK : 0);
	return sys_ring_read(st, o, peer(st, o), how, v, n);
}

static long sock_send(struct sys_state *st, struct sys_obj *o, const struct sys_iov *v, int n,
		      int flags)
{
	struct sys_obj *p = peer(st, o);
	if (!p || o->at & SEND_SHUT)
		return sys_ring_broken(st, !(flags & MSG_NOSIGNAL));
	return sys_ring_write(st, p, o->flags & O_NONBLOCK || flags & MSG_DONTWAIT, v, n);
}

static long sock_read(struct sys_state *st, uint64_t fd, struct sys_obj *o, const struct sys_iov *v,
		      int n)
{
	(void)fd;
	return sock_recv(st, o, v, n, 0);
}

static long sock_write(struct sys_state *st, uint64_t fd, struct sys_obj *o,
		       const struct sys_iov *v, int n)
{
	(void)fd;
	return sock_send(st, o, v, n, 0);
}

/* as Linux's unix_poll: writable whenever a write would not wait (it may fail) */
static uint32_t sock_poll(struct sys_state *st, struct sys_obj *o, uint64_t *next)
{
	(void)next;
	struct sys_obj *p = peer(st, o);
	uint32_t ev = o->len ? EPOLLIN | EPOLLRDNORM : 0;
	if (o->at & RCV_SHUT)
		ev |= EPOLLIN | EPOLLRDNORM | EPOLLRDHUP;
	if (o->at == (RCV_SHUT | SEND_SHUT))
		ev |= EPOLLHUP;
	if (!p || o->at & SEND_SHUT || sys_ring_room(p))
		ev |= EPOLLOUT | EPOLLWRNORM | EPOLLWRBAND;
	return ev;
}

static void sock_stat(struct sys_state *st, struct sys_obj *o, struct stat *s)
{
	s->st_mode = S_IFSOCK | 0777;
	s->st_ino = sys_obj_slot(st, o) + 1;
	s->st_dev = 0x8; /* sockfs's */
}

/* the peer sees both directions shut: EOF, then EPIPE */
static void sock_close(struct sys_state *st, struct sys_obj *o)
{
	struct sys_obj *p = peer(st, o);
	sys_ring_free(st, o);
	if (p) {
		p->id = 0;
		p->at = RCV_SHUT | SEND_SHUT;
		sys_fd_changed(st, p);
	}
}

static int sock_pollable(const struct sys_obj *o)
{
	(void)o;
	return 1;
}

const struct sys_fd_ops sys_sock_ops = {
    .read = sock_read,
    .write = sock_write,
    .poll = sock_poll,
    .stat = sock_stat,
    .close = sock_close,
    .pollable = sock_pollable,
};

static long sys_socketpair(struct sys_state *st, const uint64_t a[6])
{
	int type = (int)a[1] & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (a[0] != AF_UNIX)
		return -EAFNOSUPPORT;
	if (type != SOCK_STREAM)
		return -EACCES; /* datagrams and packets: not served, as sockets in general */
	if (a[2] && a[2] != PF_UNIX)
		return -EPROTONOSUPPORT;
	int cloexec = (a[1] & SOCK_CLOEXEC) != 0;
	uint32_t nb = a[1] & SOCK_NONBLOCK ? O_NONBLOCK : 0;
	long fd0 = sys_fd_lowest(st, 0), fd1 = fd0 < 0 ? fd0 : sys_fd_lowest(st, (uint64_t)fd0 + 1);
	if (fd1 < 0)
		return fd1;
	if (!sys_obj_room(st, 2))
		return -ENFILE;
	const int fds[2] = {(int)fd0, (int)fd1};
	if (!sys_user(st, a[3], sizeof(fds), PROT_WRITE))
		return -EFAULT;
	struct sys_obj *x = sys_obj_new(st, SYS_KIND_SOCK, O_RDWR | nb);
	struct sys_obj *y = sys_obj_new(st, SYS_KIND_SOCK, O_RDWR | nb);
	x->id = sys_obj_slot(st, y) + 1;
	y->id = sys_obj_slot(st, x) + 1;
	sys_fd_set(st, (uint64_t)fd0, x, cloexec);
	sys_fd_set(st, (uint64_t)fd1, y, cloexec);
	return sys_put(st, a[3], fds, sizeof(fds));
}

/* send, sendto: a connected socket takes no address */
static long sys_sendto(struct sys_state *st, const uint64_t a[6])
{
	long rc;
	struct sys_obj *o = sock_of(st, a[0], &rc);
	if (!o)
		return rc;
	if (a[4])
		return -EISCONN;
	if (a[3] & MSG_OOB)
		return -EOPNOTSUPP;
	const struct sys_iov v = {a[1], a[2]};
	return sock_send(st, o, &v, 1, (int)a[3]);
}

/* recv, recvfrom: the peer has no name (an address of length 0) */
static long sys_recvfrom(struct sys_state *st, const uint64_t a[6])
{
	long rc;
	struct sys_obj *o = sock_of(st, a[0], &rc);
	if (!o)
		return rc;
	if (a[3] & MSG_OOB)
		return -EINVAL;
	const struct sys_iov v = {a[1], a[2]};
	rc = sock_recv(st, o, &v, 1, (int)a[3]);
	const uint32_t none = 0;
	if (rc >= 0 && a[4] && a[5] && sys_put(st, a[5], &none, sizeof(none)))
		return -EFAULT;
	return rc;
}

/* sendmsg and recvmsg: the pieces of a msghdr; no address, no control data (no descriptor is
 * passed: EOPNOTSUPP) */
static long msg_call(struct sys_state *st, const uint64_t a[6], int out)
{
	long rc;
	struct sys_obj *o = sock_of(st, a[0], &rc);
	if (!o)
		return rc;
	struct msghdr m;
	struct sys_iov v[SYS_IOV_MAX];
	uint64_t total;
	if (sys_get(st, &m, a[1], sizeof(m)))
		return -EFAULT;
	if (out && m.msg_name && m.msg_namelen)
		return -EISCONN;
	if ((out && m.msg_controllen) || a[2] & MSG_OOB)
		return -EOPNOTSUPP;
	if ((rc = sys_iov_get(st, (uint64_t)(uintptr_t)m.msg_iov, m.msg_iovlen, v, &total)))
		return rc;
	rc = out ? sock_send(st, o, v, (int)m.msg_iovlen, (int)a[2])
		 : sock_recv(st, o, v, (int)m.msg_iovlen, (int)a[2]);
	if (rc < 0 || out)
		return rc;
	m.msg_namelen = 0;
	m.msg_controllen = 0;
	m.msg_flags = 0;
	return sys_put(st, a[1], &m, sizeof(m)) ? -EFAULT : rc;
}

static long sys_sendmsg(struct sys_state *st, const uint64_t a[6])
{
	return msg_call(st, a, 1);
}

static long sys_recvmsg(struct sys_state *st, const uint64_t a[6])
{
	return msg_call(st, a, 0);
}

static long sys_shutdown(struct sys_state *st, const uint64_t a[6])
{
	long rc;
	struct sys_obj *o = sock_of(st, a[0], &rc), *p;
	if (!o)
		return rc;
	if (a[1] > SHUT_RDWR)
		return -EINVAL;
	uint32_t rd = a[1] != SHUT_WR, wr = a[1] != SHUT_RD;
	o->at |= (rd ? RCV_SHUT : 0) | (wr ? SEND_SHUT : 0);
	if ((p = peer(st, o))) {
		p->at |= (rd ? SEND_SHUT : 0) | (wr ? RCV_SHUT : 0);
		sys_fd_changed(st, p);
	}
	sys_fd_changed(st, o);
	return 0;
}

/* the options a program asks of a Unix stream socket; the sizes it sets are kept as they are */
static long sys_getsockopt(struct sys_state *st, const uint64_t a[6])
{
	long rc;
	struct sys_obj *o = sock_of(st, a[0], &rc);
	if (!o)
		return rc;
	int v;
	uint32_t len;
	if (sys_get(st, &len, a[4], sizeof(len)))
		return -EFAULT;
	if (a[1] != SOL_SOCKET)
		return -EOPNOTSUPP;
	switch ((int)a[2]) {
	case SO_TYPE:
		v = SOCK_STREAM;
		break;
	case SO_DOMAIN:
		v = AF_UNIX;
		break;
	case SO_ERROR:
	case SO_ACCEPTCONN:
	case SO_PROTOCOL:
		v = 0;
		break;
	case SO_SNDBUF:
	case SO_RCVBUF:
		v = SOCK_BUF;
		break;
	default:
		return -ENOPROTOOPT;
	}
	if ((int32_t)len < 0)
		return -EINVAL;
	len = len < sizeof(v) ? len : sizeof(v);
	if (sys_put(st, a[3], &v, len) || sys_put(st, a[4], &len, sizeof(len)))
		return -EFAULT;
	return 0;
}

static long sys_setsockopt(struct sys_state *st, const uint64_t a[6])
{
	long rc;
	if (!sock_of(st, a[0], &rc))
		return rc;
	if (a[1] != SOL_SOCKET)
		return -EOPNOTSUPP;
	return a[2] == SO_SNDBUF || a[2] == SO_RCVBUF || a[2] == SO_PASSCRED ? 0 : -ENOPROTOOPT;
}

/* getsockname and getpeername: unnamed, the family only */
static long sys_sockname(struct sys_state *st, const uint64_t a[6])
{
	long rc;
	struct sys_obj *o = sock_of(st, a[0], &rc);
	if (!o)
		return rc;
	const uint16_t family = AF_UNIX;
	uint32_t len;
	if (sys_get(st, &len, a[2], sizeof(len)))
		return -EFAULT;
	if ((int32_t)len < 0)
		return -EINVAL;
	uint32_t k = len < sizeof(family) ? len : sizeof(family), full = sizeof(family);
	if (sys_put(st, a[1], &family, k) || sys_put(st, a[2], &full, sizeof(full)))
		return -EFAULT;
	return 0;
}

/* connect, bind, listen and accept on a connected pair: as Linux's answers */
static long sys_connected(struct sys_state *st, const uint64_t a[6])
{
	long rc;
	return sock_of(st, a[0], &rc) ? -EINVAL : rc;
}

static long sys_connect(struct sys_state *st, const uint64_t a[6])
{
	long rc;
	return sock_of(st, a[0], &rc) ? -EISCONN : rc;
}

const struct sys_entry sys_sock_table[] = {
    {SYS_socketpair, "socketpair", sys_socketpair, 0, NULL},
    {SYS_sendto, "sendto", sys_sendto, 0, NULL},
    {SYS_recvfrom, "recvfrom", sys_recvfrom, 0, NULL},
    {SYS_sendmsg, "sendmsg", sys_sendmsg, 0, NULL},
    {SYS_recvmsg, "recvmsg", sys_recvmsg, 0, NULL},
    {SYS_shutdown, "shutdown", sys_shutdown, 0, NULL},
    {SYS_getsockopt, "getsockopt", sys_getsockopt, 0, NULL},
    {SYS_setsockopt, "setsockopt", sys_setsockopt, 0, NULL},
    {SYS_getsockname, "getsockname", sys_sockname, 0, NULL},
    {SYS_getpeername, "getpeername", sys_sockname, 0, NULL},
    {SYS_connect, "connect", sys_connect, 0, NULL},
    {SYS_bind, "bind", sys_connected, 0, NULL},
    {SYS_listen, "listen", sys_connected, 0, NULL},
    {SYS_accept, "accept", sys_connected, 0, NULL},
    {SYS_accept4, "accept4", sys_connected, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};
