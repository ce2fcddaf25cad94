/* The landing of a whole read (cold_read_plan_whole): a memfd made ahead, off the request. */
#ifndef EMBER_COLD_LAND_H
#define EMBER_COLD_LAND_H

#include <stdint.h>

/* A whole read of len bytes lands here: the landing made ahead when one is ready and large
 * enough (its pages already allocated, zeroed and mapped: the read does not make them one
 * fault at a time), else a fresh memfd as before. Either way *fd is a new memfd of exactly len
 * bytes (sealable, close-on-exec), mapped shared and writable at the return (munmap len bytes);
 * NULL (*fd -1) when no memory. len is remembered: the next landing is made for it. */
uint8_t *cold_land_take(int *fd, uint64_t len);
/* The landing made now, the size of the last read taken (at most 4 MiB), unless
 * one that holds it is ready, landings are off, or no whole read was taken in this process:
 * for a thread that works after the response (func's finisher). */
void cold_land_make(void);
/* Landings on (the default) or off (a process of one start, ember run: the one ready freed and
 * none made again). */
void cold_land_keep(int on);

#endif
