/* ember bench memory's parts. */
#ifndef EMBER_CLI_BENCH_MEMORY_H
#define EMBER_CLI_BENCH_MEMORY_H

#include <jansson.h>

/* the reset rows (bench_reset.c): printed unless json; returned as a JSON array */
json_t *bench_resets(const char *build, int json, int with_ptrace);

#endif
