/* Malformed variants of a valid static ELF executable, shared by mkbadelf and the unit tests. */
#ifndef EMBER_BADELF_H
#define EMBER_BADELF_H

#include <stddef.h>
#include <stdint.h>

struct badelf_case {
	const char *name; /* also the file name mkbadelf writes */
	const char
	    *expect; /* a substring of the parser's error, or NULL when any refusal will do */
};

/* The number of cases, and case i (i < badelf_count()). */
size_t badelf_count(void);
const struct badelf_case *badelf_case(size_t i);

/*
 * Builds case i from the good image: on 0, *out (malloc'd, free it) holds *outlen bytes. Returns 1
 * when the good image lacks what the case needs (say, a PT_LOAD without PF_X), -1 when the good
 * image is not a usable ELF or memory ran out.
 */
int badelf_make(size_t i, const uint8_t *good, size_t len, uint8_t **out, size_t *outlen);

/* A deterministic pseudo-random generator (xorshift64*); *state must not be 0. */
uint64_t badelf_rand(uint64_t *state);

#endif
