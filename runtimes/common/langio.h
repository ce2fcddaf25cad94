/* I/O the language runtimes share (langio.c). */
#ifndef EMBER_LANGIO_H
#define EMBER_LANGIO_H

#include <stddef.h>

#include "base/base.h" /* base_write_all: whole writes */

/* Reads fd until EOF (or, with short_eof, a short read) into a heap buffer; returns NULL (errno
 * set) on failure. */
char *lang_read_all(int fd, size_t *len, int short_eof);

/* Calls fn for every "NAME=value" line of the request's metadata on fd meta_fd (read to its
 * end, a short read included); nothing when the fd is closed or unreadable. */
void lang_meta_each(int meta_fd,
		    void (*fn)(void *ctx, const char *name, size_t nlen, const char *value,
			       size_t vlen),
		    void *ctx);

#endif
