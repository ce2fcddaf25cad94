/* I/O the language runtimes share: whole writes, and reads to the end of a file descriptor. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "langio.h"

/* Reads fd until EOF (or, with short_eof, a short read) into a heap buffer; returns NULL (errno
 * set) on failure. */
char *lang_read_all(int fd, size_t *len, int short_eof)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r == 0) {
				*len = n;
				return buf;
			}
			free(buf);
			return NULL;
		}
		n += (size_t)r;
		if (short_eof && n < cap) {
			*len = n;
			return buf;
		}
		if (n == cap) {
			char *nb = realloc(buf, cap *= 2);
			if (!nb)
				free(buf);
			buf = nb;
		}
	}
	return NULL;
}

void lang_meta_each(int meta_fd,
		    void (*fn)(void *ctx, const char *name, size_t nlen, const char *value,
			       size_t vlen),
		    void *ctx)
{
	size_t len = 0;
	/* Ember's fd 4 is a file in memory, which one read empties: a short read is its end (one
	 * exit fewer) */
	char *meta = lang_read_all(meta_fd, &len, 1);
	for (size_t i = 0; meta && i < len;) {
		char *nl = memchr(meta + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - meta) : len;
		char *eq = memchr(meta + i, '=', end - i);
		if (eq && eq > meta + i)
			fn(ctx, meta + i, (size_t)(eq - meta - i), eq + 1,
			   (size_t)(meta + end - eq - 1));
		i = end + 1;
	}
	free(meta);
}
