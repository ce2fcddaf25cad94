/* Ember's function SDK: header-only, for static musl and glibc programs run as functions. */
#ifndef EMBER_FUNCTION_H
#define EMBER_FUNCTION_H

/*
 * Ember runs a function's initialisation once and snapshots the program at the first read of its
 * request (read or readv on fd 0). Every invocation starts from that snapshot, with fresh state.
 *
 * A program that wants the snapshot taken earlier (before it does work that must happen on every
 * request, say) calls ember_snapshot() at that point. The snapshot is taken at whichever comes
 * first: ember_snapshot() or the first read of the request. Later calls do nothing.
 *
 * ember_snapshot() returns 0 inside Ember (in the snapshot run and in every invocation restored
 * from it) and -1 when the program runs natively, outside Ember, where it has no effect.
 *
 * ember_meta() copies the request's metadata (fd 4, EMBER_META_FD) into buf: "NAME=value\n" lines,
 * from `ember serve` Http_Method, Http_Path, Http_Query and one Http_<Header> per request header.
 * It returns the number of bytes copied (at most len, no terminating NUL; 0 when the request has
 * none), or -1 when fd 4 is not open: natively, or before the snapshot point (call it after the
 * first read of the request). It reads from the start of fd 4 each time.
 */

#include "ember/abi.h"

static inline long ember_snapshot(void)
{
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"((long)EMBER_SYS_SNAPSHOT)
			 : "rcx", "r11", "memory");
	return ret == 0 ? 0 : -1;
}

static inline long ember_raw_syscall3(long nr, long a, long b, long c)
{
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c)
			 : "rcx", "r11", "memory");
	return ret;
}

static inline long ember_meta(char *buf, unsigned long len)
{
	/* lseek(4, 0, SEEK_SET): from the start; a pipe on fd 4 (natively) cannot, and need not */
	ember_raw_syscall3(8, EMBER_META_FD, 0, 0);
	unsigned long n = 0;
	for (;;) { /* at least one read, so that a closed fd 4 says so even when len is 0 */
		long r = ember_raw_syscall3(0, EMBER_META_FD, (long)(buf + n), (long)(len - n));
		if (r == -4) /* EINTR */
			continue;
		if (r < 0)
			return n ? (long)n : -1;
		n += (unsigned long)r;
		if (r == 0 || n == len)
			return (long)n;
	}
}

#endif
