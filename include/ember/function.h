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

#endif
