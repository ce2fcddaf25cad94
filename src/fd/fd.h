/* The descriptor table's kinds behind one table of operations, shared by the file of each kind
 * (fd_io.c, fs.c, fd_pipe.c, fd_eventfd.c, fd_timerfd.c, fd_epoll.c), the table itself
 * (fd.c, fd_snap.c) and the readiness calls (fd_poll.c). */
#ifndef EMBER_SYS_FD_H
#define EMBER_SYS_FD_H

#include <sys/stat.h>

#include "sys/sys.h"

/* a pipe's buffer: its size at first, and the most F_SETPIPE_SZ grants */
#define SYS_PIPE_SIZE 65536
#define SYS_PIPE_MAX  1048576

/* the bytes a pipe's read end r holds at most (its `every`: 0 for SYS_PIPE_SIZE) */
static inline uint64_t sys_pipe_cap(const struct sys_obj *r)
{
	return r->every ? r->every : SYS_PIPE_SIZE;
}
/* F_GETPIPE_SZ (set 0) and F_SETPIPE_SZ of arg on either end o: the size or -errno */
long sys_pipe_size(struct sys_state *st, struct sys_obj *o, int set, uint64_t arg);

/* the call nr with arguments a names an O_PATH descriptor where it needs an open file: EBADF
 * (fs_opath.c) */
int sys_opath_refused(struct sys_state *st, uint64_t nr, const uint64_t a[6]);

/* sys_rlimit.c: the descriptors a process may have (RLIMIT_NOFILE, SYS_FDS at most); whether
 * the limits a snapshot holds are ones setrlimit could set */
uint64_t sys_rlimit_nofile(const struct sys_state *st);
/* the soft limit of resource r now: as set, else Ember's own */
uint64_t sys_rlimit_cur(const struct sys_state *st, unsigned r);
int sys_rlimit_valid(uint32_t set, const struct sys_rlim *r);

/* an iovec as the guest lays it out */
struct sys_iov {
	uint64_t base, len;
};
#define SYS_IOV_MAX 1024

/* What a kind does. read and write get n pieces whose lengths add up to less than 2^63 and
 * return the bytes moved, -errno, or SYS_WAITS (sys_wait: the call is made again when woken);
 * NULL: EINVAL. */
struct sys_fd_ops {
	long (*read)(struct sys_state *st, uint64_t fd, struct sys_obj *o, const struct sys_iov *v,
		     int n);
	long (*write)(struct sys_state *st, uint64_t fd, struct sys_obj *o, const struct sys_iov *v,
		      int n);
	/* the EPOLL* bits that hold now; *next lowered (if 0 or later) to when they change with no
	 * call made (a timer's expiry) */
	uint32_t (*poll)(struct sys_state *st, struct sys_obj *o, uint64_t *next);
	/* fstat beyond what every kind says (sys_fd_stat) */
	void (*stat)(struct sys_state *st, struct sys_obj *o, struct stat *s);
	/* the last descriptor naming it is closed */
	void (*close)(struct sys_state *st, struct sys_obj *o);
	/* fd's object is about to be named by one more descriptor (dup) */
	void (*share)(struct sys_state *st, uint64_t fd, struct sys_obj *o);
	/* epoll may watch it (not a regular file); NULL: never */
	int (*pollable)(const struct sys_obj *o);
};
extern const struct sys_fd_ops sys_std_ops, sys_file_ops, sys_pipe_ops, sys_event_ops,
    sys_timer_ops, sys_epoll_ops, sys_procfs_ops, sys_tmp_ops, sys_dev_ops, sys_sock_ops,
    sys_fifo_ops;

/* the object fd names, or NULL (not open) */
struct sys_obj *sys_fd_obj(struct sys_state *st, uint64_t fd);
/* fd's object described as fstat would (any kind: a pipe, the request, a file); 0 or -EBADF */
long sys_fd_stat(struct sys_state *st, uint64_t fd, struct stat *s);
/* o's slot in the table, and its kind's operations */
static inline uint32_t sys_obj_slot(const struct sys_state *st, const struct sys_obj *o)
{
	return (uint32_t)(o - st->obj);
}
const struct sys_fd_ops *sys_obj_ops(const struct sys_obj *o);
/* the lowest closed descriptor at or past from, never 3 or 4: Ember's (a runtime's code, opened
 * at load; the request's metadata, opened at every invocation), and so the program's files and
 * objects are on 5 to 63 first, where the in-guest runtime can read files itself: it, or
 * -EMFILE, or -ENFILE when the objects every process of the invocation shares are full */
long sys_fd_lowest(const struct sys_state *st, uint64_t from);
/* the object table (every process's of the invocation) has n free slots */
int sys_obj_room(const struct sys_state *st, int n);
/* a new object of kind with flags in a free slot, named by no descriptor yet (there is always
 * one while a descriptor is free) */
struct sys_obj *sys_obj_new(struct sys_state *st, enum sys_kind kind, uint32_t flags);
/* fd, closed, names o from now on */
void sys_fd_set(struct sys_state *st, uint64_t fd, struct sys_obj *o, int cloexec);
/* a new object's descriptor: the lowest free one; the object is freed when there is none */
long sys_fd_open(struct sys_state *st, struct sys_obj *o, int cloexec);
/* fd closed: its object's close when it was the last to name it; 0 or -EBADF */
long sys_fd_close(struct sys_state *st, uint64_t fd);
/* o's readiness may have changed: every call waiting on a descriptor looks again */
void sys_fd_changed(struct sys_state *st, struct sys_obj *o);
/* the same for objects whose seq the caller moved itself (a named pipe's descriptors) */
void sys_fd_wake(struct sys_state *st);
/* fds 0 to 4 that no longer name what Ember opened there, a bit each (the in-guest runtime
 * serves those that do itself) */
unsigned sys_fd_moved(struct sys_state *st);
/* fd's descriptor is EMBER's own fd (0 to 4) */
int sys_fd_std(struct sys_state *st, uint64_t fd, uint32_t which);

/* the bytes behind Ember's readable fd `which` (0, 3 or 4): where, how many, the position
 * (fd_std.c) */
const uint8_t *sys_std_source(struct sys_state *st, uint32_t which, size_t *total, size_t **pos);

/* the guest's iovec array, n pieces at addr: 0, -EINVAL (too many, or a sum past 2^63) or
 * -EFAULT; the sum in *total */
long sys_iov_get(struct sys_state *st, uint64_t addr, uint64_t n, struct sys_iov *v,
		 uint64_t *total);
/* len bytes between host memory and the pieces of v, from byte skip of them on; every piece
 * taking part checked first, so that a bad one moves nothing: 0 or -EFAULT */
int sys_iov_out(struct sys_state *st, const struct sys_iov *v, int n, uint64_t skip,
		const void *src, uint64_t len);
int sys_iov_in(struct sys_state *st, const struct sys_iov *v, int n, uint64_t skip, void *dst,
	       uint64_t len);
uint64_t sys_iov_total(const struct sys_iov *v, int n);
/* a file's read or write of the pieces of v at o's position, piece by piece with at(): stopping
 * at a short or failed piece, the position moved by what was done (end: each piece goes at the
 * end, O_APPEND's); the bytes, or the first piece's error */
typedef long (*sys_at_fn)(struct sys_state *st, struct sys_obj *o, uint64_t addr, uint64_t len,
			  uint64_t pos);
long sys_iov_at(struct sys_state *st, struct sys_obj *o, const struct sys_iov *v, int n,
		sys_at_fn at, const uint64_t *end);
/* the pieces' bytes [skip, skip + len) may be written (out) or read */
int sys_iov_ok(struct sys_state *st, const struct sys_iov *v, int n, uint64_t skip, uint64_t len,
	       int out);

/* A ring of bytes (fd_pipe.c): a pipe's, a socket end's, a named pipe's (fs_tmp_fifo.c). len of
 * them in *buf (NULL until written) from *pos; changed (if not NULL) hears of each move, with who
 */
struct sys_ring {
	uint8_t **buf;
	uint64_t *pos, *len;
	uint64_t size;
	void (*changed)(struct sys_state *st, void *who);
	void *who;
};
/* g's bytes read into v; with how's SYS_RING_END an empty ring is the end (0), else EAGAIN
 * (SYS_RING_NONBLOCK) or a wait; SYS_RING_PEEK leaves the bytes there */
#define SYS_RING_END	  1
#define SYS_RING_NONBLOCK 2
#define SYS_RING_PEEK	  4
long sys_ring_get(struct sys_state *st, const struct sys_ring *g, int how, const struct sys_iov *v,
		  int n);
/* v written into g: all at once up to PIPE_BUF, then piece by piece, waiting for room (the
 * thread's wdone kept across the retries) or not (nonblock) */
long sys_ring_put(struct sys_state *st, const struct sys_ring *g, int nonblock,
		  const struct sys_iov *v, int n);
/* F_SETPIPE_SZ's arg as a ring's size, or -EINVAL / -EPERM; g's bytes moved to a ring of size
 * (its pos 0 then; the caller sets the size): 0, -EBUSY (they do not fit) or -ENOMEM */
long sys_ring_size(uint64_t arg);
long sys_ring_resize(const struct sys_ring *g, uint64_t size);

/* the ring of 64 KiB a pipe's read end holds, and a socket's end too (fd_sock.c): o's bytes
 * (len of them in sys_state.pipe_buf[its slot] from pos) read into v, the writer told of the
 * room (NULL: none), as sys_ring_get */
long sys_ring_read(struct sys_state *st, struct sys_obj *o, struct sys_obj *writer, int how,
		   const struct sys_iov *v, int n);
/* v written into r's ring, as sys_ring_put */
long sys_ring_write(struct sys_state *st, struct sys_obj *r, int nonblock, const struct sys_iov *v,
		    int n);
/* a write of PIPE_BUF into r would not wait; into a ring of size holding len */
int sys_ring_room(const struct sys_obj *r);
int sys_ring_roomy(uint64_t size, uint64_t len);
/* a write with no reader: SIGPIPE to the thread (sigpipe 1), and what it wrote before it
 * waited, or -EPIPE */
long sys_ring_broken(struct sys_state *st, int sigpipe);
/* o's ring given back */
void sys_ring_free(struct sys_state *st, struct sys_obj *o);

/* epoll (fd_epoll.c): the entries of object slot, or of the epoll there, forgotten (it is
 * freed) */
void sys_epoll_forget(struct sys_state *st, uint32_t slot);
/* epolls watch each other in a loop, or deeper than Linux allows (a restored table's check) */
int sys_epoll_loops(const struct sys_state *st);

/* readiness waits (fd_poll.c), for poll's family and epoll's: the first attempt's timeout (ns
 * from now, UINT64_MAX: none, 0: none is made) and signal mask (set until the call returns);
 * then, when nothing is ready, the wait (SYS_WAITS) or 0 when the timeout passed; done: the
 * call returns (the mask restored) */
long sys_poll_begin(struct sys_state *st, uint64_t timeout_ns, uint64_t mask_addr,
		    uint64_t mask_size);
long sys_poll_block(struct sys_state *st, uint64_t next);
void sys_poll_done(struct sys_state *st);
/* the timeout a pointer to a timespec says (NULL: none): ns, or -EINVAL / -EFAULT */
long sys_poll_timespec(struct sys_state *st, uint64_t addr, uint64_t *ns);

/* saved and restored (fd_snap.c, for sys_snap.c) */
int sys_fd_save(const struct sys_state *st, struct sys_saved *out);
int sys_fd_restore(struct sys_state *st, const struct sys_saved *s);
void sys_fd_saved_free(struct sys_saved *s);
/* the table at the start: fds 0 to 2 open (sys_init), everything freed (sys_free) */
void sys_fd_init(struct sys_state *st);
void sys_fd_free(struct sys_state *st);

#endif
