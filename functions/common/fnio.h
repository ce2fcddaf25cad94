/* Shared helpers for C functions: whole-request input, raw output and request parameters. */
#ifndef FN_IO_H
#define FN_IO_H

#include <stddef.h>

#include "base/base.h" /* base_write_all */

/* A growable output buffer; written out with one base_write_all at the end of a run. */
struct fnbuf {
	char *p;
	size_t len, cap;
};

/* Reads fd 0 until EOF into a NUL-terminated heap buffer; exits 1 on error. */
unsigned char *fn_read_all(size_t *len);
/* Prints "<prog>: <message>\n" to fd 2 and exits with status 1. */
_Noreturn void fn_die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

void fnbuf_put(struct fnbuf *b, const void *p, size_t n);
void fnbuf_printf(struct fnbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Writes the buffer to fd 1 and exits 0 (or 1 when the write fails). */
_Noreturn void fnbuf_finish(struct fnbuf *b);

/*
 * Looks up "key=value" in text made of whitespace-separated key=value words (only up to the first
 * newline when line is nonzero). Returns the value parsed as a number, def when the key is absent;
 * dies when the value is malformed or outside [min, max].
 */
long fn_param(const char *text, int line, const char *key, long def, long min, long max);
double fn_paramf(const char *text, int line, const char *key, double def, double min, double max);

#endif
