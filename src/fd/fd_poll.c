/* poll, ppoll, select and pselect6 over any descriptor, and the waits that the readiness calls
 * share with epoll: until a descriptor changes, a timer watched expires, the timeout or a signal.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/time.h>

#include "fd/fd.h"

#define NS 1000000000ULL

long sys_poll_begin(struct sys_state *st, uint64_t timeout_ns, uint64_t mask_addr,
		    uint64_t mask_size)
{
	struct proc_thread *t = sys_cur(st);
	if (sys_retrying(st))
		return 0;
	if (mask_addr) {
		uint64_t mask;
		if (mask_size != sizeof(mask))
			return -EINVAL;
		if (sys_get(st, &mask, mask_addr, sizeof(mask)))
			return -EFAULT;
		/* as sigsuspend: a handler that runs meanwhile returns to the mask of before */
		t->saved_mask = sys_sigmask(st, t);
		t->suspended = 1;
		sys_set_sigmask(st, t, mask);
	}
	uint64_t now = base_now_ns();
	if (!timeout_ns)
		t->wuntil = UINT64_MAX; /* looks once, never waits */
	else if (timeout_ns >= UINT64_MAX - 1 - now)
		t->wuntil = 0; /* none */
	else
		t->wuntil = now + timeout_ns;
	return 0;
}

long sys_poll_block(struct sys_state *st, uint64_t next)
{
	struct proc_thread *t = sys_cur(st);
	if (t->wuntil == UINT64_MAX)
		return 0;
	if (sys_signal_ready(st, t)) /* one the call's mask lets through: EINTR at once */
		return sys_wait(st, SYS_KEY_FD, ~0u, 1);
	uint64_t now = base_now_ns();
	if (t->wuntil && now >= t->wuntil)
		return 0;
	uint64_t until = t->wuntil;
	if (next && (!until || next < until))
		until = next;
	return sys_wait(st, SYS_KEY_FD, ~0u, until);
}

void sys_poll_done(struct sys_state *st)
{
	struct proc_thread *t = sys_cur(st);
	if (t->suspended) {
		sys_set_sigmask(st, t, t->saved_mask);
		t->suspended = 0;
	}
}

long sys_poll_timespec(struct sys_state *st, uint64_t addr, uint64_t *ns)
{
	struct timespec ts;
	*ns = UINT64_MAX;
	if (!addr)
		return 0;
	if (sys_get(st, &ts, addr, sizeof(ts)))
		return -EFAULT;
	if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= (long)NS)
		return -EINVAL;
	*ns = (uint64_t)ts.tv_sec > (UINT64_MAX - NS) / NS
		  ? UINT64_MAX - 1
		  : (uint64_t)ts.tv_sec * NS + (uint64_t)ts.tv_nsec;
	return 0;
}

/* the time a timeout had left when the call returns, written back as Linux does */
static uint64_t left_ns(struct sys_state *st)
{
	uint64_t until = sys_cur(st)->wuntil, now = base_now_ns();
	return until == UINT64_MAX || until <= now ? 0 : until - now;
}

/* what fd is ready for now: POLLNVAL when it is not open */
static uint32_t ready(struct sys_state *st, uint64_t fd, uint64_t *next)
{
	struct sys_obj *o = sys_fd_obj(st, fd);
	return o ? sys_obj_ops(o)->poll(st, o, next) : POLLNVAL;
}

#define POLL_MAX SYS_FDS /* nfds past RLIMIT_NOFILE: EINVAL */

static long do_poll(struct sys_state *st, uint64_t addr, uint64_t nfds, uint64_t timeout_ns,
		    uint64_t ts_addr, uint64_t mask, uint64_t mask_size)
{
	if (nfds > POLL_MAX)
		return -EINVAL;
	long rc = sys_poll_begin(st, timeout_ns, mask, mask_size);
	if (rc)
		return rc;
	struct pollfd p[POLL_MAX];
	if (nfds && sys_get(st, p, addr, nfds * sizeof(p[0]))) {
		sys_poll_done(st);
		return -EFAULT;
	}
	long n = 0;
	uint64_t next = 0;
	for (uint64_t i = 0; i < nfds; i++) {
		uint32_t want = (uint16_t)p[i].events | POLLERR | POLLHUP | POLLNVAL;
		p[i].revents =
		    p[i].fd < 0 ? 0 : (short)(ready(st, (uint64_t)p[i].fd, &next) & want);
		n += p[i].revents != 0;
	}
	if (!n && (rc = sys_poll_block(st, next)) == SYS_WAITS)
		return rc;
	sys_poll_done(st);
	if (ts_addr && timeout_ns != UINT64_MAX) {
		uint64_t left = left_ns(st);
		const struct timespec ts = {(time_t)(left / NS), (long)(left % NS)};
		sys_put(st, ts_addr, &ts, sizeof(ts));
	}
	return nfds && sys_put(st, addr, p, nfds * sizeof(p[0])) ? -EFAULT : n;
}

static long sys_poll(struct sys_state *st, const uint64_t a[6])
{
	int ms = (int)a[2];
	return do_poll(st, a[0], a[1], ms < 0 ? UINT64_MAX : (uint64_t)ms * 1000000ULL, 0, 0, 0);
}

static long sys_ppoll(struct sys_state *st, const uint64_t a[6])
{
	uint64_t ns;
	long rc = sys_poll_timespec(st, a[2], &ns);
	return rc ? rc : do_poll(st, a[0], a[1], ns, a[2], a[3], a[4]);
}

/* select's three sets, a 64-bit word per 64 descriptors */
#define SET_WORDS (SYS_FDS / 64)
#define IN_SET	  (POLLIN | POLLRDNORM | POLLRDBAND | POLLHUP | POLLERR)
#define OUT_SET	  (POLLOUT | POLLWRNORM | POLLWRBAND | POLLERR)
#define EX_SET	  (POLLPRI)

static long do_select(struct sys_state *st, uint64_t nfds, const uint64_t sets[3],
		      uint64_t timeout_ns, uint64_t mask, uint64_t mask_size)
{
	if ((int)nfds < 0)
		return -EINVAL;
	/* as Linux: descriptors past the table are not looked at */
	uint64_t n = (uint32_t)nfds > SYS_FDS ? SYS_FDS : (uint32_t)nfds, words = (n + 63) / 64;
	static const uint32_t bits[3] = {IN_SET, OUT_SET, EX_SET};
	uint64_t in[3][SET_WORDS], out[3][SET_WORDS];
	memset(in, 0, sizeof(in));
	memset(out, 0, sizeof(out));
	for (int s = 0; s < 3; s++) {
		if (sets[s] && words && sys_get(st, in[s], sets[s], words * 8))
			return -EFAULT;
		if (n % 64)
			in[s][n / 64] &= (1ULL << (n % 64)) - 1;
	}
	/* a descriptor asked about must be open */
	for (uint64_t fd = 0; fd < n; fd++)
		if ((in[0][fd / 64] | in[1][fd / 64] | in[2][fd / 64]) >> (fd % 64) & 1 &&
		    !sys_fd_obj(st, fd))
			return -EBADF;
	long rc = sys_poll_begin(st, timeout_ns, mask, mask_size);
	if (rc)
		return rc;
	long count = 0;
	uint64_t next = 0;
	for (uint64_t fd = 0; fd < n; fd++) {
		uint64_t bit = 1ULL << (fd % 64);
		if (!((in[0][fd / 64] | in[1][fd / 64] | in[2][fd / 64]) & bit))
			continue;
		uint32_t r = ready(st, fd, &next);
		for (int s = 0; s < 3; s++)
			if ((in[s][fd / 64] & bit) && (r & bits[s])) {
				out[s][fd / 64] |= bit;
				count++;
			}
	}
	if (!count && (rc = sys_poll_block(st, next)) == SYS_WAITS)
		return rc;
	sys_poll_done(st);
	for (int s = 0; s < 3; s++)
		if (sets[s] && words && sys_put(st, sets[s], out[s], words * 8))
			return -EFAULT;
	return count;
}

static long sys_select(struct sys_state *st, const uint64_t a[6])
{
	uint64_t ns = UINT64_MAX;
	struct timeval tv;
	if (a[4]) {
		if (sys_get(st, &tv, a[4], sizeof(tv)))
			return -EFAULT;
		if (tv.tv_sec < 0 || tv.tv_usec < 0 || tv.tv_usec >= 1000000)
			return -EINVAL;
		ns = (uint64_t)tv.tv_sec > (UINT64_MAX - NS) / NS
			 ? UINT64_MAX - 1
			 : (uint64_t)tv.tv_sec * NS + (uint64_t)tv.tv_usec * 1000;
	}
	const uint64_t sets[3] = {a[1], a[2], a[3]};
	long rc = do_select(st, a[0], sets, ns, 0, 0);
	if (rc >= 0 && a[4]) {
		uint64_t left = left_ns(st);
		tv = (struct timeval){(time_t)(left / NS), (suseconds_t)(left % NS / 1000)};
		sys_put(st, a[4], &tv, sizeof(tv));
	}
	return rc;
}

static long sys_pselect6(struct sys_state *st, const uint64_t a[6])
{
	uint64_t ns, sig[2] = {0, 0}; /* the mask's address and size */
	long rc = sys_poll_timespec(st, a[4], &ns);
	if (rc)
		return rc;
	if (a[5] && sys_get(st, sig, a[5], sizeof(sig)))
		return -EFAULT;
	const uint64_t sets[3] = {a[1], a[2], a[3]};
	rc = do_select(st, a[0], sets, ns, sig[0], sig[1]);
	if (rc >= 0 && a[4]) {
		uint64_t left = left_ns(st);
		const struct timespec ts = {(time_t)(left / NS), (long)(left % NS)};
		sys_put(st, a[4], &ts, sizeof(ts));
	}
	return rc;
}

const struct sys_entry sys_poll_table[] = {
    {SYS_poll, "poll", sys_poll, 0, NULL},
    {SYS_ppoll, "ppoll", sys_ppoll, 0, NULL},
    {SYS_select, "select", sys_select, 0, NULL},
    {SYS_pselect6, "pselect6", sys_pselect6, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};
