/* The landing: a memfd made ahead, its pages allocated and mapped, for a whole read to land in. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cold/cold_land.h"
#include "cold/cold_read.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

#define PAGE EMBER_PAGE_SIZE
/* A landing is made the size of the last read asked, exactly: a function's working set keeps its
 * size from one load to the next, and a landing larger than the read is trimmed on the request's
 * path (unmapping and freeing even 4 pages of its tail took 10-17 us here, a third of what the
 * landing saves), its pages made for nothing. Never more than the largest whole read (WHOLE_MAX
 * in cold_read.c, 4 MiB). A working set written again larger (mispredictions appended) falls
 * back once, and the next landing is made for it. */
#define LAND_MAX (1024 * PAGE)
/* A landing larger than the read by more than this is not taken (the read falls back to a fresh
 * memfd) but made again the read's size: trimming 3.75 MiB took 340-420 us, more than it saves. */
#define LAND_TRIM (16 * PAGE)

/* whether a landing of cap bytes is worth taking for a read of len */
static int fits(uint64_t cap, uint64_t len)
{
	return len && cap >= len && cap - len <= LAND_TRIM;
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
	int fd; /* -1: none ready */
	uint8_t *map;
	uint64_t cap;
	uint64_t want; /* the last read asked: what the next landing is made for (0: none yet) */
	int off;       /* landings not made in this process */
} land = {.fd = -1};

static void drop(int fd, uint8_t *map, uint64_t len)
{
	if (map)
		munmap(map, len);
	if (fd >= 0)
		close(fd);
}

/* a new memfd of len bytes mapped RW at *map (its pages made now when populate); its fd or -1 */
static int fresh(uint64_t len, uint8_t **map, int populate)
{
	int fd = memfd_create("ember-snapshot", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	*map = fd < 0 ? NULL : cold_read_grow(fd, 0, len);
	if (*map && populate && madvise(*map, len, MADV_POPULATE_WRITE)) {
		if (errno != EINVAL) { /* no memory for it now: none made */
			drop(fd, *map, len);
			return *map = NULL, -1;
		}
		for (uint64_t o = 0; o < len; o += PAGE) /* before Linux 5.14: a write fault each */
			(*map)[o] = 0;
	}
	if (*map)
		return fd;
	drop(fd, NULL, 0);
	return -1;
}

uint8_t *cold_land_take(int *fd, uint64_t len)
{
	uint8_t *map = NULL;
	uint64_t cap = 0;
	pthread_mutex_lock(&mu);
	land.want = len;
	if (land.fd >= 0 && fits(land.cap, len)) {
		*fd = land.fd;
		map = land.map;
		cap = land.cap;
		land.fd = -1;
		land.map = NULL;
	}
	pthread_mutex_unlock(&mu);
	/* exactly len bytes, as a fresh one: what the read leaves unused freed, unmapped first
	 * (from the page after len's last: a mapping ends on a page); when that fails, all of it
	 * let go, none of it left mapped */
	uint64_t keep = BASE_ROUND_UP(len, PAGE);
	if (map && cap > keep && munmap(map + keep, cap - keep)) {
		drop(*fd, map, cap);
		map = NULL;
	} else if (map && cap > len && ftruncate(*fd, (off_t)len)) {
		drop(*fd, map, keep);
		map = NULL;
	}
	if (!map)
		*fd = fresh(len, &map, 0);
	return map;
}

void cold_land_make(void)
{
	int old = -1;
	uint8_t *old_map = NULL, *map = NULL;
	uint64_t old_cap = 0;
	pthread_mutex_lock(&mu);
	int want = !land.off && land.want && land.want <= LAND_MAX;
	uint64_t cap = BASE_ROUND_UP(land.want, PAGE);
	if (want && land.fd >= 0 && !fits(land.cap, land.want)) { /* not for the last read */
		old = land.fd;
		old_map = land.map;
		old_cap = land.cap;
		land.fd = -1;
		land.map = NULL;
	}
	want = want && land.fd < 0;
	pthread_mutex_unlock(&mu);
	drop(old, old_map, old_cap);
	if (!want)
		return;
	int fd = fresh(cap, &map, 1); /* outside the lock: a take meanwhile makes its own */
	pthread_mutex_lock(&mu);
	if (fd >= 0 && land.fd < 0 && !land.off) {
		land.fd = fd;
		land.map = map;
		land.cap = cap;
		fd = -1;
		map = NULL;
	}
	pthread_mutex_unlock(&mu);
	drop(fd, map, cap);
}

void cold_land_keep(int on)
{
	pthread_mutex_lock(&mu);
	land.off = !on;
	int fd = on ? -1 : land.fd;
	uint8_t *map = land.map;
	uint64_t cap = land.cap;
	if (!on) {
		land.fd = -1;
		land.map = NULL;
		land.cap = 0;
	}
	pthread_mutex_unlock(&mu);
	if (fd >= 0)
		drop(fd, map, cap);
}
