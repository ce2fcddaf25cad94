/* What the load learns of the working set for a start that reads it whole (cold_read.c). */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cold/cold_read.h"
#include "cold/cold_ws.h"

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

void cold_read_plan_free(struct cold_read_plan *p)
{
	free(p->meta);
	memset(p, 0, sizeof(*p));
}
