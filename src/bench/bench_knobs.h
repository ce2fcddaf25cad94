/* Host kernel settings a benchmark changes, put back when it ends, even when it is killed. */
#ifndef EMBER_CLI_BENCH_KNOBS_H
#define EMBER_CLI_BENCH_KNOBS_H

#include <sys/types.h>

#define BENCH_KNOBS_MAX 4

struct bench_knobs {
	int n;
	char path[BENCH_KNOBS_MAX][96];
	char old[BENCH_KNOBS_MAX][32];
	int wfd;     /* the guard's pipe: closing it puts the settings back */
	pid_t guard; /* a child in its own session, waiting on that pipe */
};

/* Reads the current values of PATHS (sysfs or procfs files) and starts the guard; 0 or -1
 * (a file unreadable, no fork): then nothing was changed and nothing is guarded. */
int bench_knobs_hold(struct bench_knobs *k, const char *const *paths, int n);
/* Puts every value back (through the guard) and waits for it. */
void bench_knobs_release(struct bench_knobs *k);
/* Writes V into the file PATH: 0 or -1. */
int bench_knob_write(const char *path, const char *v);

#endif
