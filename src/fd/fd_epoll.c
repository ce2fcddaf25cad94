/* epoll: interest lists over the process's descriptors, level- or edge-triggered, one-shot, and
 * the waits for them (epoll_wait, epoll_pwait, epoll_pwait2). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "fd/fd.h"

/* the flags of an entry rather than events (Linux's EP_PRIVATE_BITS) */
#define PRIVATE (EPOLLWAKEUP | EPOLLONESHOT | EPOLLET | EPOLLEXCLUSIVE)
/* what an EPOLLEXCLUSIVE entry may ask for */
#define EXCLUSIVE_OK                                                                               \
	(EPOLLIN | EPOLLOUT | EPOLLRDNORM | EPOLLRDBAND | EPOLLWRNORM | EPOLLWRBAND | EPOLLERR |   \
	 EPOLLHUP | EPOLLWAKEUP | EPOLLET | EPOLLEXCLUSIVE)
/* epolls inside epolls at most (Linux's EP_MAX_NESTS) */
#define NESTS 4
/* events one wait reports at most; a program asking for more gets the rest at its next wait */
#define BATCH 256

/* struct epoll_event as x86-64 lays it out: packed, 12 bytes */
struct event {
	uint32_t events;
	uint64_t data;
} __attribute__((packed));

/* what entry e reports now, 0 if nothing */
static uint32_t entry_ready(struct sys_state *st, const struct sys_epi *e, uint64_t *next)
{
	struct sys_obj *o = &st->obj[e->obj];
	uint32_t ev = sys_obj_ops(o)->poll(st, o, next) & e->events & ~(uint32_t)PRIVATE;
	/* edge-triggered: once per change of the object */
	return ev && (e->events & EPOLLET) && e->seen == o->seq ? 0 : ev;
}

static uint32_t epoll_poll(struct sys_state *st, struct sys_obj *o, uint64_t *next)
{
	uint32_t slot = sys_obj_slot(st, o);
	for (size_t i = 0; i < st->nepi; i++)
		if (st->epi[i].ep == slot && entry_ready(st, &st->epi[i], next))
			return EPOLLIN | EPOLLRDNORM;
	return 0;
}

static void epoll_stat(struct sys_state *st, struct sys_obj *o, struct stat *s)
{
	(void)st, (void)o;
	s->st_mode = 0600; /* an anonymous inode */
	s->st_uid = s->st_gid = 0;
}

static int epoll_pollable(const struct sys_obj *o)
{
	(void)o;
	return 1;
}

const struct sys_fd_ops sys_epoll_ops = {
    .poll = epoll_poll,
    .stat = epoll_stat,
    .pollable = epoll_pollable,
};

void sys_epoll_forget(struct sys_state *st, uint32_t slot)
{
	size_t k = 0;
	for (size_t i = 0; i < st->nepi; i++)
		if (st->epi[i].obj != slot && st->epi[i].ep != slot)
			st->epi[k++] = st->epi[i];
	st->nepi = k;
}

/* entries that watch epolls (with the one of ep watching obj, if ep is not UINT32_MAX) make a
 * loop, or nest epolls deeper than Linux allows: the depth of each epoll (how many epolls down
 * a path from it goes) relaxed until it settles, which it never does around a loop */
static int too_deep(const struct sys_state *st, uint32_t ep, uint32_t obj)
{
	uint8_t depth[SYS_FDS];
	memset(depth, 0, sizeof(depth));
	for (int round = 0; round <= NESTS + 1; round++) {
		for (size_t i = 0; i <= st->nepi; i++) {
			uint32_t from = i < st->nepi ? st->epi[i].ep : ep;
			uint32_t to = i < st->nepi ? st->epi[i].obj : obj;
			if (from >= SYS_FDS || st->obj[to].kind != SYS_KIND_EPOLL)
				continue;
			if (depth[to] + 1 > depth[from])
				depth[from] = (uint8_t)(depth[to] + 1);
			if (depth[from] > NESTS)
				return 1;
		}
	}
	return 0;
}

int sys_epoll_loops(const struct sys_state *st)
{
	return too_deep(st, UINT32_MAX, 0);
}

static long create(struct sys_state *st, int cloexec)
{
	if (sys_fd_lowest(st, 0) < 0)
		return -EMFILE;
	return sys_fd_open(st, sys_obj_new(st, SYS_KIND_EPOLL, O_RDWR), cloexec);
}

static long sys_epoll_create(struct sys_state *st, const uint64_t a[6])
{
	return (int)a[0] <= 0 ? -EINVAL : create(st, 0);
}

static long sys_epoll_create1(struct sys_state *st, const uint64_t a[6])
{
	return a[0] & ~(uint64_t)EPOLL_CLOEXEC ? -EINVAL : create(st, 1);
}

static long find(const struct sys_state *st, uint32_t ep, uint64_t fd, uint32_t obj)
{
	for (size_t i = 0; i < st->nepi; i++)
		if (st->epi[i].ep == ep && st->epi[i].fd == fd && st->epi[i].obj == obj)
			return (long)i;
	return -1;
}

static long add(struct sys_state *st, const struct sys_epi *e)
{
	if (st->nepi == SYS_EPI_MAX)
		return -ENOSPC; /* Linux's max_user_watches */
	if (st->nepi == st->epi_cap) {
		size_t cap = st->epi_cap ? st->epi_cap * 2 : 16;
		struct sys_epi *n = realloc(st->epi, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		st->epi = n;
		st->epi_cap = cap;
	}
	st->epi[st->nepi++] = *e;
	return 0;
}

/* Linux's order of checks: the event, both descriptors, whether the target can be polled, the
 * exclusive flag, whether epfd is an epoll (and not the target), loops, the entry */
static long sys_epoll_ctl(struct sys_state *st, const uint64_t a[6])
{
	int op = (int)a[1];
	struct event ev = {0, 0};
	if (op != EPOLL_CTL_DEL && sys_get(st, &ev, a[3], sizeof(ev)))
		return -EFAULT;
	struct sys_obj *ep = sys_fd_obj(st, a[0]), *o = sys_fd_obj(st, a[2]);
	if (!ep || !o)
		return -EBADF;
	const struct sys_fd_ops *ops = sys_obj_ops(o);
	if (!ops->pollable || !ops->pollable(o))
		return -EPERM;
	if (op != EPOLL_CTL_DEL && (ev.events & EPOLLEXCLUSIVE) &&
	    (op == EPOLL_CTL_MOD ||
	     (op == EPOLL_CTL_ADD &&
	      (o->kind == SYS_KIND_EPOLL || (ev.events & ~(uint32_t)EXCLUSIVE_OK)))))
		return -EINVAL;
	if (ep == o || ep->kind != SYS_KIND_EPOLL)
		return -EINVAL;
	uint32_t eps = sys_obj_slot(st, ep), os = sys_obj_slot(st, o);
	if (op == EPOLL_CTL_ADD && o->kind == SYS_KIND_EPOLL && too_deep(st, eps, os))
		return -ELOOP;
	long i = find(st, eps, a[2], os);
	/* what it asks for, with what is always reported; EPOLLWAKEUP needs a privilege */
	uint32_t events = (ev.events & ~(uint32_t)EPOLLWAKEUP) | EPOLLERR | EPOLLHUP;
	switch (op) {
	case EPOLL_CTL_ADD: {
		if (i >= 0)
			return -EEXIST;
		/* reported once at least if ready now, edge-triggered too */
		const struct sys_epi e = {eps, os, (uint32_t)a[2], events, ev.data, o->seq - 1};
		long rc = add(st, &e);
		if (!rc)
			sys_fd_changed(st, ep);
		return rc;
	}
	case EPOLL_CTL_MOD:
		if (i < 0)
			return -ENOENT;
		st->epi[i].events = events | (st->epi[i].events & EPOLLEXCLUSIVE);
		st->epi[i].data = ev.data;
		st->epi[i].seen = o->seq - 1;
		sys_fd_changed(st, ep);
		return 0;
	case EPOLL_CTL_DEL:
		if (i < 0)
			return -ENOENT;
		st->epi[i] = st->epi[--st->nepi];
		return 0;
	default:
		return -EINVAL;
	}
}

/* the wait of every epoll_wait: entries reported from where the last wait stopped (pos), so that
 * with few events asked for, each ready entry gets its turn as on Linux */
static long do_wait(struct sys_state *st, uint64_t epfd, uint64_t addr, int max,
		    uint64_t timeout_ns, uint64_t mask, uint64_t mask_size)
{
	if (max <= 0 || (uint64_t)max > INT_MAX / sizeof(struct event))
		return -EINVAL;
	struct sys_obj *ep = sys_fd_obj(st, epfd);
	if (!ep)
		return -EBADF;
	if (ep->kind != SYS_KIND_EPOLL)
		return -EINVAL;
	long rc = sys_poll_begin(st, timeout_ns, mask, mask_size);
	if (rc)
		return rc;
	uint32_t slot = sys_obj_slot(st, ep), idx[BATCH], evs[BATCH];
	int n = 0, want = max < BATCH ? max : BATCH;
	uint64_t next = 0;
	for (size_t k = 0; k < st->nepi && n < want; k++) {
		size_t i = (ep->pos + k) % st->nepi;
		if (st->epi[i].ep != slot)
			continue;
		uint32_t r = entry_ready(st, &st->epi[i], &next);
		if (r)
			idx[n] = (uint32_t)i, evs[n++] = r;
	}
	if (!n && (rc = sys_poll_block(st, next)) == SYS_WAITS)
		return rc;
	sys_poll_done(st);
	if (!n)
		return 0;
	struct event *out = sys_user(st, addr, (uint64_t)n * sizeof(*out), PROT_WRITE);
	if (!out)
		return -EFAULT;
	for (int k = 0; k < n; k++) {
		struct sys_epi *e = &st->epi[idx[k]];
		const struct event v = {evs[k], e->data};
		memcpy(&out[k], &v, sizeof(v));
		if (e->events & EPOLLONESHOT)
			e->events &= PRIVATE; /* nothing more until EPOLL_CTL_MOD */
		e->seen = st->obj[e->obj].seq;
	}
	ep->pos = (idx[n - 1] + 1) % st->nepi;
	return n;
}

static long sys_epoll_wait(struct sys_state *st, const uint64_t a[6])
{
	int ms = (int)a[3];
	return do_wait(st, a[0], a[1], (int)a[2], ms < 0 ? UINT64_MAX : (uint64_t)ms * 1000000ULL,
		       0, 0);
}

static long sys_epoll_pwait(struct sys_state *st, const uint64_t a[6])
{
	int ms = (int)a[3];
	return do_wait(st, a[0], a[1], (int)a[2], ms < 0 ? UINT64_MAX : (uint64_t)ms * 1000000ULL,
		       a[4], a[5]);
}

static long sys_epoll_pwait2(struct sys_state *st, const uint64_t a[6])
{
	uint64_t ns;
	long rc = sys_poll_timespec(st, a[3], &ns);
	return rc ? rc : do_wait(st, a[0], a[1], (int)a[2], ns, a[4], a[5]);
}

const struct sys_entry sys_epoll_table[] = {
    {SYS_epoll_create, "epoll_create", sys_epoll_create, 0, NULL},
    {SYS_epoll_create1, "epoll_create1", sys_epoll_create1, 0, NULL},
    {SYS_epoll_ctl, "epoll_ctl", sys_epoll_ctl, 0, NULL},
    {SYS_epoll_wait, "epoll_wait", sys_epoll_wait, 0, NULL},
    {SYS_epoll_pwait, "epoll_pwait", sys_epoll_pwait, 0, NULL},
    {SYS_epoll_pwait2, "epoll_pwait2", sys_epoll_pwait2, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};
