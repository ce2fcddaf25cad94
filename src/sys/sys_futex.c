/* futex: waits and wakes on a word of guest memory, the priority-inheriting lock operations,
 * and the robust lists a thread's end releases. */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>

#include "sys/sys.h"

/* A wait's key is the word's address, with a bit for a shared futex: Linux tells a private
 * futex from a shared one on the same word (a wake of the one never wakes the other), and the
 * waiters of a PI lock from the rest. Above any user address, below SYS_KEY_*. */
#define KEY_SHARED (1ULL << 48)
#define KEY_PI	   (1ULL << 49)
/* struct robust_list_head's size, the only one set_robust_list takes; the entries a robust
 * list may have at most, as Linux's ROBUST_LIST_LIMIT */
#define ROBUST_HEAD  24
#define ROBUST_LIMIT 2048

static uint64_t futex_key(uint64_t addr, int op)
{
	return op & FUTEX_PRIVATE_FLAG ? addr : addr | KEY_SHARED;
}

/* a timespec's ns, -EINVAL when it is not one, -EFAULT when unreadable */
static int64_t timespec_ns(struct sys_state *st, uint64_t addr, int64_t *ns)
{
	struct timespec ts;
	if (sys_get(st, &ts, addr, sizeof(ts)))
		return -EFAULT;
	if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000L)
		return -EINVAL;
	*ns = (uint64_t)ts.tv_sec > (uint64_t)INT64_MAX / 1000000000ULL
		  ? INT64_MAX
		  : ts.tv_sec * 1000000000LL + ts.tv_nsec;
	return 0;
}

/* an absolute time on clock c as a CLOCK_MONOTONIC deadline */
static uint64_t mono_of(clockid_t c, int64_t abs_ns)
{
	struct timespec now;
	clock_gettime(c, &now);
	int64_t left = abs_ns - (now.tv_sec * 1000000000LL + now.tv_nsec);
	uint64_t m = base_now_ns();
	return left <= 0 ? m : m + (uint64_t)left;
}

/* a futex op's deadline from its timeout argument (0: none); first attempt only */
static long futex_deadline(struct sys_state *st, int op, uint64_t addr, uint64_t *deadline)
{
	*deadline = 0;
	if (sys_retrying(st)) {
		*deadline = sys_cur(st)->wdeadline;
		return 0;
	}
	if (!addr)
		return 0;
	int64_t ns;
	long rc = timespec_ns(st, addr, &ns);
	if (rc)
		return rc;
	int cmd = op & FUTEX_CMD_MASK;
	/* FUTEX_WAIT's is relative; the others' absolute, FUTEX_LOCK_PI's always on the realtime
	 * clock */
	if (cmd == FUTEX_WAIT)
		*deadline = sys_deadline_in(st, (uint64_t)ns);
	else if (op & FUTEX_CLOCK_REALTIME || cmd == FUTEX_LOCK_PI)
		*deadline = mono_of(CLOCK_REALTIME, ns);
	else
		*deadline = mono_of(CLOCK_MONOTONIC, ns);
	if (!*deadline)
		*deadline = 1; /* in the past: times out at once */
	return 0;
}

static long futex_wait(struct sys_state *st, int op, const uint64_t a[6], uint32_t bits)
{
	struct proc_thread *t = sys_cur(st);
	if (sys_retrying(st)) {
		if (t->woken)
			return 0;
		if (t->expired)
			return -ETIMEDOUT;
	}
	if (!bits)
		return -EINVAL;
	uint64_t deadline;
	long rc = futex_deadline(st, op, a[3], &deadline);
	if (rc)
		return rc;
	uint32_t v;
	if (sys_get(st, &v, a[0], sizeof(v)))
		return -EFAULT;
	if (v != (uint32_t)a[2])
		return -EAGAIN;
	if (deadline && deadline <= base_now_ns())
		return -ETIMEDOUT;
	return sys_wait(st, futex_key(a[0], op), bits, deadline);
}

/* FUTEX_WAKE_OP's operation on *uaddr2, and its comparison of the old value, as the kernel's
 * futex_atomic_op_inuser: oparg and cmparg are signed 12-bit numbers, and the word is changed
 * atomically, for other vCPUs may be running the program's own atomic operations on it */
static int wake_op(struct sys_state *st, uint64_t addr, uint32_t encoded, int *cond)
{
	uint32_t op = (encoded >> 28) & 7, cmp = (encoded >> 24) & 15;
	int32_t oparg = (int32_t)(encoded << 8) >> 20, cmparg = (int32_t)(encoded << 20) >> 20;
	if (encoded & (8u << 28))
		oparg = (int32_t)(1u << (oparg & 31)); /* the kernel masks a shift out of range */
	if (addr % 4)
		return -EINVAL;
	uint32_t *p = sys_user(st, addr, sizeof(uint32_t), PROT_READ | PROT_WRITE);
	if (!p)
		return -EFAULT;
	if (op > 4)
		return -ENOSYS; /* nothing changed */
	uint32_t old = __atomic_load_n(p, __ATOMIC_RELAXED), nv, arg = (uint32_t)oparg;
	do {
		nv = op == 0   ? arg
		     : op == 1 ? old + arg
		     : op == 2 ? old | arg
		     : op == 3 ? old & ~arg
			       : old ^ arg;
	} while (!__atomic_compare_exchange_n(p, &old, nv, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
	int32_t o = (int32_t)old;
	if (cmp > 5)
		return -ENOSYS; /* the word changed, as with Linux */
	*cond = cmp == 0   ? o == cmparg
		: cmp == 1 ? o != cmparg
		: cmp == 2 ? o < cmparg
		: cmp == 3 ? o <= cmparg
		: cmp == 4 ? o > cmparg
			   : o >= cmparg;
	return 0;
}

/* a wake's count as Linux takes it: one at least, even for 0 or a negative count */
static int wake_count(uint64_t v)
{
	return (int)v < 1 ? 1 : (int)v;
}

static long op_wait(struct sys_state *st, int op, const uint64_t a[6])
{
	return futex_wait(st, op, a, FUTEX_BITSET_MATCH_ANY);
}

static long op_wait_bitset(struct sys_state *st, int op, const uint64_t a[6])
{
	return futex_wait(st, op, a, (uint32_t)a[5]);
}

static long op_wake(struct sys_state *st, int op, const uint64_t a[6])
{
	return proc_wake(&st->pr, futex_key(a[0], op), FUTEX_BITSET_MATCH_ANY, wake_count(a[2]));
}

static long op_wake_bitset(struct sys_state *st, int op, const uint64_t a[6])
{
	if (!a[5])
		return -EINVAL;
	return proc_wake(&st->pr, futex_key(a[0], op), (uint32_t)a[5], wake_count(a[2]));
}

/* FUTEX_REQUEUE and FUTEX_CMP_REQUEUE: their counts are taken as they are (0 wakes none) */
static long op_requeue(struct sys_state *st, int op, const uint64_t a[6])
{
	if (a[4] % 4)
		return -EINVAL;
	if ((op & FUTEX_CMD_MASK) == FUTEX_CMP_REQUEUE) {
		uint32_t v;
		if (sys_get(st, &v, a[0], sizeof(v)))
			return -EFAULT;
		if (v != (uint32_t)a[5])
			return -EAGAIN;
	}
	int n = (int)a[2] < 0 ? 0 : (int)a[2], m = (int)a[3] < 0 ? 0 : (int)a[3], moved;
	return proc_requeue(&st->pr, futex_key(a[0], op), futex_key(a[4], op), n, m, &moved);
}

static long op_wake_op(struct sys_state *st, int op, const uint64_t a[6])
{
	int cond = 0, rc = wake_op(st, a[4], (uint32_t)a[5], &cond);
	if (rc)
		return rc;
	int woken =
	    proc_wake(&st->pr, futex_key(a[0], op), FUTEX_BITSET_MATCH_ANY, wake_count(a[2]));
	if (!cond)
		return woken;
	return woken +
	       proc_wake(&st->pr, futex_key(a[4], op), FUTEX_BITSET_MATCH_ANY, wake_count(a[3]));
}

/* the futex word of a PI lock, for atomic operations (other vCPUs run the program's own) */
static uint32_t *pi_word(struct sys_state *st, uint64_t addr)
{
	return sys_user(st, addr, sizeof(uint32_t), PROT_READ | PROT_WRITE);
}

/* FUTEX_LOCK_PI, FUTEX_LOCK_PI2 and FUTEX_TRYLOCK_PI, with no priorities to inherit: the word
 * takes the caller's tid when it has no owner (keeping FUTEX_OWNER_DIED, FUTEX_WAITERS if
 * others wait), else FUTEX_WAITERS, and the caller waits until an unlock hands it the lock
 * (its tid in the word) or the owner's death leaves it free to take */
static long op_lock_pi(struct sys_state *st, int op, const uint64_t a[6])
{
	struct proc_thread *t = sys_cur(st);
	int cmd = op & FUTEX_CMD_MASK, try = cmd == FUTEX_TRYLOCK_PI;
	uint64_t key = futex_key(a[0], op) | KEY_PI, deadline = 0;
	uint32_t *p = pi_word(st, a[0]);
	if (!p)
		return -EFAULT;
	if (sys_retrying(st)) {
		uint32_t v = __atomic_load_n(p, __ATOMIC_ACQUIRE);
		if (t->woken && (v & FUTEX_TID_MASK) == (uint32_t)t->tid)
			return 0; /* handed over by an unlock */
		if (t->expired)
			return -ETIMEDOUT;
	}
	long rc = try ? 0 : futex_deadline(st, op, a[3], &deadline);
	if (rc)
		return rc;
	uint32_t v = __atomic_load_n(p, __ATOMIC_ACQUIRE);
	for (;;) {
		uint32_t owner = v & FUTEX_TID_MASK, nv;
		if (owner == (uint32_t)t->tid)
			return -EDEADLK;
		if (!owner) {
			int others = proc_waiter(&st->pr, key, NULL) != NULL;
			nv = (v & FUTEX_OWNER_DIED) | (uint32_t)t->tid |
			     (others ? FUTEX_WAITERS : 0);
			if (__atomic_compare_exchange_n(p, &v, nv, 0, __ATOMIC_SEQ_CST,
							__ATOMIC_ACQUIRE))
				return 0;
			continue;
		}
		if (try)
			return -EAGAIN;
		if (!proc_find(&st->pr, (int)owner))
			return -ESRCH; /* no such thread in this process */
		if (v & FUTEX_WAITERS)
			break;
		if (__atomic_compare_exchange_n(p, &v, v | FUTEX_WAITERS, 0, __ATOMIC_SEQ_CST,
						__ATOMIC_ACQUIRE))
			break;
	}
	if (deadline && deadline <= base_now_ns())
		return -ETIMEDOUT;
	return sys_wait(st, key, ~0u, deadline);
}

/* FUTEX_UNLOCK_PI: the lock goes to its first waiter (its tid and FUTEX_WAITERS in the word),
 * or the word is 0 when none waits */
static long op_unlock_pi(struct sys_state *st, int op, const uint64_t a[6])
{
	uint64_t key = futex_key(a[0], op) | KEY_PI;
	uint32_t *p = pi_word(st, a[0]);
	if (!p)
		return -EFAULT;
	struct proc_thread *next = proc_waiter(&st->pr, key, NULL);
	uint32_t v = __atomic_load_n(p, __ATOMIC_ACQUIRE);
	do {
		if ((v & FUTEX_TID_MASK) != (uint32_t)sys_cur(st)->tid)
			return -EPERM;
	} while (!__atomic_compare_exchange_n(p, &v, next ? (uint32_t)next->tid | FUTEX_WAITERS : 0,
					      0, __ATOMIC_SEQ_CST, __ATOMIC_ACQUIRE));
	if (next)
		proc_wake_thread(&st->pr, next);
	return 0;
}

/* one futex command: its handler, and whether FUTEX_CLOCK_REALTIME may go with it */
struct futex_cmd {
	long (*fn)(struct sys_state *st, int op, const uint64_t a[6]);
	int realtime;
};
/* by command; the requeue-PI pair (glibc's condition variables no longer use them) are not
 * served: ENOSYS */
static const struct futex_cmd futex_cmds[] = {
    [FUTEX_WAIT] = {op_wait, 1},
    [FUTEX_WAKE] = {op_wake, 0},
    [FUTEX_REQUEUE] = {op_requeue, 0},
    [FUTEX_CMP_REQUEUE] = {op_requeue, 0},
    [FUTEX_WAKE_OP] = {op_wake_op, 0},
    [FUTEX_LOCK_PI] = {op_lock_pi, 0},
    [FUTEX_UNLOCK_PI] = {op_unlock_pi, 0},
    [FUTEX_TRYLOCK_PI] = {op_lock_pi, 0},
    [FUTEX_WAIT_BITSET] = {op_wait_bitset, 1},
    [FUTEX_WAKE_BITSET] = {op_wake_bitset, 0},
    [FUTEX_LOCK_PI2] = {op_lock_pi, 1},
};

static long sys_futex(struct sys_state *st, const uint64_t a[6])
{
	int op = (int)a[1], cmd = op & FUTEX_CMD_MASK;
	if (a[0] % 4)
		return -EINVAL;
	if ((size_t)cmd >= sizeof(futex_cmds) / sizeof(futex_cmds[0]) || !futex_cmds[cmd].fn)
		return -ENOSYS;
	if (op & FUTEX_CLOCK_REALTIME && !futex_cmds[cmd].realtime)
		return -ENOSYS;
	return futex_cmds[cmd].fn(st, op, a);
}

static long sys_set_robust_list(struct sys_state *st, const uint64_t a[6])
{
	if (a[1] != ROBUST_HEAD)
		return -EINVAL;
	sys_cur(st)->robust = a[0];
	return 0;
}

static long sys_get_robust_list(struct sys_state *st, const uint64_t a[6])
{
	struct proc_thread *t = (int)a[0] ? proc_find(&st->pr, (int)a[0]) : sys_cur(st);
	if (!t)
		return -ESRCH;
	const uint64_t len = ROBUST_HEAD;
	if (sys_put(st, a[1], &t->robust, sizeof(t->robust)) ||
	    sys_put(st, a[2], &len, sizeof(len)))
		return -EFAULT;
	return 0;
}

/* a robust futex at addr held by t, which ends: FUTEX_OWNER_DIED in its word, and a waiter
 * woken (Linux's handle_futex_death); pending: the entry t was adding or taking away, whose
 * word may be free with a waiter to wake still */
static void futex_death(struct sys_state *st, struct proc_thread *t, uint64_t addr, int pi,
			int pending)
{
	uint32_t *p = addr % 4 ? NULL : pi_word(st, addr);
	if (!p)
		return;
	uint32_t v = __atomic_load_n(p, __ATOMIC_ACQUIRE);
	if (pending && !pi && !v) {
		proc_wake(&st->pr, addr | KEY_SHARED, FUTEX_BITSET_MATCH_ANY, 1);
		return;
	}
	do {
		if ((v & FUTEX_TID_MASK) != (uint32_t)t->tid)
			return;
	} while (!__atomic_compare_exchange_n(p, &v, (v & FUTEX_WAITERS) | FUTEX_OWNER_DIED, 0,
					      __ATOMIC_SEQ_CST, __ATOMIC_ACQUIRE));
	if (!(v & FUTEX_WAITERS))
		return;
	/* a robust lock's waiters wait shared, as glibc's do and the kernel wakes them */
	if (pi && !proc_wake(&st->pr, addr | KEY_SHARED | KEY_PI, ~0u, 1))
		proc_wake(&st->pr, addr | KEY_PI, ~0u, 1);
	else if (!pi)
		proc_wake(&st->pr, addr | KEY_SHARED, FUTEX_BITSET_MATCH_ANY, 1);
}

/* t's robust list walked as Linux's exit_robust_list: every lock still on it released */
static void robust_exit(struct sys_state *st, struct proc_thread *t)
{
	uint64_t head[3]; /* list.next, futex_offset, list_op_pending */
	if (!t->robust || sys_get(st, head, t->robust, sizeof(head)))
		return;
	int64_t off = (int64_t)head[1];
	uint64_t pending = head[2] & ~1ULL, entry = head[0];
	int pending_pi = head[2] & 1;
	for (int n = 0; (entry & ~1ULL) != t->robust && n < ROBUST_LIMIT; n++) {
		uint64_t next;
		if (sys_get(st, &next, entry & ~1ULL, sizeof(next)))
			return;
		if ((entry & ~1ULL) != pending)
			futex_death(st, t, (entry & ~1ULL) + (uint64_t)off, entry & 1, 0);
		entry = next;
	}
	if (pending)
		futex_death(st, t, pending + (uint64_t)off, pending_pi, 1);
	t->robust = 0;
}

void sys_futex_exit(struct sys_state *st, struct proc_thread *t)
{
	robust_exit(st, t);
	if (t->clear_tid) {
		const int zero = 0;
		/* a shared wake, as Linux's: glibc and musl wait for it so */
		if (!sys_put(st, t->clear_tid, &zero, sizeof(zero)))
			proc_wake(&st->pr, t->clear_tid | KEY_SHARED, ~0u, 1);
	}
}

const struct sys_entry sys_futex_table[] = {
    {SYS_futex, "futex", sys_futex, 0, NULL},
    {SYS_set_robust_list, "set_robust_list", sys_set_robust_list, 0, NULL},
    {SYS_get_robust_list, "get_robust_list", sys_get_robust_list, 0, NULL},
    {0, NULL, NULL, 0, NULL},
};
