/* What the load learns of the working set for a start that reads it whole (cold_read.c): its
 * header, or the whole file with the state file's copy in one read. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cold/cold_land.h"
#include "cold/cold_read.h"
#include "cold/cold_ws.h"
#include "snap/snap_file.h"

#define PAGE EMBER_PAGE_SIZE

void cold_read_plan(struct cold_read_plan *p, const char *dir)
{
	char path[4200];
	struct stat sb;
	struct cold_ws w;
	memset(p, 0, sizeof(*p));
	cold_ws_path(path, sizeof(path), dir);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	/* the header first, then as much as it says the page list and checksums take */
	uint64_t want = SNAP_WS_HDR;
	uint8_t *buf = NULL;
	long need = 0;
	if (fstat(fd, &sb) || sb.st_size < SNAP_WS_HDR)
		goto out;
	for (int i = 0; i < 2; i++) {
		uint8_t *b = realloc(buf, want);
		if (!b || pread(fd, b, want, 0) != (ssize_t)want) {
			buf = b ? b : buf;
			goto out;
		}
		buf = b;
		need = cold_ws_parse(&w, buf, want, (uint64_t)sb.st_size);
		if (need <= 0)
			break;
		want = (uint64_t)need;
	}
	if (need)
		goto out;
	p->meta = buf;
	p->meta_len = want;
	p->size = (uint64_t)sb.st_size;
	buf = NULL;
out:
	free(buf);
	close(fd);
}

/* whether a start of dir would read its working set whole (cold_read_pays), told from the files'
 * sizes alone: the memory file's blocks are the snapshot's pages (a few more for its extents) */
static int whole_pays(const char *dir, const char *ws, uint64_t *size)
{
	char path[4200];
	struct stat sb, mb;
	snprintf(path, sizeof(path), "%.4096s/" SNAP_MEM, dir);
	if (stat(ws, &sb) || sb.st_size < SNAP_WS_HDR || sb.st_size % PAGE || stat(path, &mb))
		return 0;
	*size = (uint64_t)sb.st_size;
	return cold_read_pays_n((uint64_t)mb.st_blocks * 512 / PAGE, *size);
}

/* size bytes of path in buf, with one O_DIRECT read where the file system takes it (else
 * *buffered set) */
static int read_direct(const char *path, uint8_t *buf, uint64_t size, int *buffered)
{
	int fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0 && errno == EINVAL) { /* tmpfs on older kernels, some overlays */
		fd = open(path, O_RDONLY | O_CLOEXEC);
		*buffered = 1;
	}
	if (fd < 0)
		return -1;
	ssize_t got = pread(fd, buf, size, 0);
	if (got < 0 && errno == EINVAL && !*buffered) { /* the read refused O_DIRECT */
		int fl = fcntl(fd, F_GETFL);
		*buffered = 1;
		if (fl >= 0 && !fcntl(fd, F_SETFL, fl & ~O_DIRECT))
			got = pread(fd, buf, size, 0);
	}
	close(fd);
	return got == (ssize_t)size ? 0 : -1;
}

const uint8_t *cold_read_plan_whole(struct cold_read_plan *p, const char *dir, size_t *state_len,
				    const char **why)
{
	char path[4200];
	uint64_t size = 0;
	struct cold_ws w;
	memset(p, 0, sizeof(*p));
	*why = "no working set to read whole";
	cold_ws_path(path, sizeof(path), dir);
	if (!whole_pays(dir, path, &size))
		return NULL;
	/* straight into the memfd the snapshot will live in (the landing made ahead, cold_land.c):
	 * the start copies nothing */
	int fd = -1, buffered = 0;
	uint8_t *buf = cold_land_take(&fd, size);
	*why = "the working set is unreadable or damaged";
	if (!buf || read_direct(path, buf, size, &buffered) || cold_ws_parse(&w, buf, size, size)) {
		if (buf)
			munmap(buf, size);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	*p = (struct cold_read_plan){.meta = buf,
				     .meta_len = w.data_off,
				     .size = size,
				     .whole = 1,
				     .fd = fd,
				     .buffered = buffered};
	*state_len = w.state_len;
	return cold_ws_state(&w, dir, why);
}

void cold_read_plan_free(struct cold_read_plan *p)
{
	if (p->whole) {
		munmap(p->meta, p->size);
		close(p->fd);
	} else {
		free(p->meta);
	}
	memset(p, 0, sizeof(*p));
}
