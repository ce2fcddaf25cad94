/* The lowest layer: what several layers need alike (whole-file I/O, atomic replace, clocks, sizes).
 * libc only; every layer may include it, it includes none of them. */
#ifndef EMBER_BASE_H
#define EMBER_BASE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/* the number of entries of a true array */
#define BASE_LEN(a) (sizeof(a) / sizeof((a)[0]))
/* x rounded up to a multiple of align (a power of two) */
#define BASE_ROUND_UP(x, align) (((x) + (align)-1) & ~((uint64_t)(align)-1))

/* what a file being written is called until it is whole: PATH.tmp-PID-XXXXXX */
#define BASE_TMP ".tmp-"

/* base_write.c and base_io.c. Every call returns 0 or -errno; a write or read that makes no
 * progress without an error (a full disk, a file that shrank) is EIO. */
/* all of buf, at the file position (off < 0) or at off */
int base_write_all(int fd, const void *buf, size_t len);
int base_pwrite_all(int fd, const void *buf, size_t len, off_t off);
/* everything up to the end of fd (a pipe too), at most max bytes (more: EFBIG), into a new
 * buffer with a NUL after its len bytes */
int base_read_fd(int fd, size_t max, uint8_t **buf, size_t *len);
/* the same, of the file at path */
int base_read_file(const char *path, size_t max, uint8_t **buf, size_t *len);
/* [p, p + len) of a file mapping is about to be read whole: its pages are asked of the disk at
 * once, in one request (a mapping that reads around nothing, MADV_RANDOM, would fault them
 * in one at a time); nothing on other memory, or where they are in the page cache already */
void base_want(const void *p, size_t len);
/* fsync of a file or folder by its path (a folder: the names in it are on disk) */
int base_fsync_path(const char *path);
/* a new file from tmpl (ending in XXXXXX, replaced by mkostemp; the name is left there)
 * holding data with mode, on disk (fsync) before this returns; removed on failure */
int base_temp_write(char *tmpl, const void *data, size_t len, int mode);
/* tmp renamed to path, then the folder of path made durable; tmp removed on failure */
int base_commit(const char *tmp, const char *path);
/* path replaced by data as a whole: a crash or a failure leaves the old file (or none) and
 * never half of the new one. The temporary name is PATH.tmp-PID-XXXXXX. */
int base_replace(const char *path, const void *data, size_t len, int mode);
/* whether name is such a temporary name (NAME.tmp-PID[-XXXXXX]) of a process that is gone, or
 * of an earlier one with this process's PID: what a crash left */
int base_tmp_stale(const char *name);
/* the files of folder dir with a stale temporary name removed: how many */
int base_sweep_tmp(const char *dir);

/* base_io.c: a file's identity as stat gives it: type and permissions, size, inode, device,
 * modification and change times (the change time cannot be set back by a user: a file written in
 * place gets a new one). Equal identities: the file was not written in between. */
#define BASE_ID_WORDS 8
struct stat;
void base_stat_id(const struct stat *s, uint64_t id[BASE_ID_WORDS]);

/* base_le.c: width bytes (1 to 8) at p, least significant first */
void base_put_le(uint8_t *p, uint64_t v, unsigned width);
uint64_t base_get_le(const uint8_t *p, unsigned width);

/* base_time.c: CLOCK_MONOTONIC, the clock of every duration and deadline in Ember */
uint64_t base_now_ns(void);
/* microseconds since t0 (a base_now_ns() value) */
uint64_t base_us_since(uint64_t t0);
/* ts = secs from now, for pthread_cond_timedwait on a condition from base_cond_init */
void base_deadline(struct timespec *ts, double secs);
/* a condition variable that waits on CLOCK_MONOTONIC */
void base_cond_init(pthread_cond_t *cv);

/* base_park.c: a short job run on a thread parked for it (made ahead, or now when none is idle),
 * else on a thread of its own: run(arg), then it is waited for with base_park_wait */
struct base_job {
	void *(*run)(void *);
	void *arg;
	int parked; /* on a parked thread (which is parked again once done is set), else own */
	int done;
	pthread_t own;
};
/* at least n parked threads idle from now on (as many as can be made) */
void base_park_prepare(int n);
/* j started; 0, or an errno when no thread could run it */
int base_park_start(struct base_job *j);
/* until j has ended (its thread parked again, or joined) */
void base_park_wait(struct base_job *j);

/* base_parse.c: "128M", "128Mi", "128MB", "1G", "512K", "4096" -> bytes; 0 or -1 */
int base_parse_size(const char *s, uint64_t *out);

#endif
