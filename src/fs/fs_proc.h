/* The made /proc and /sys files: their generators (fs_proc_gen.c), for fs_proc.c's table. */
#ifndef EMBER_FS_PROC_H
#define EMBER_FS_PROC_H

#include <stddef.h>
#include <stdint.h>

#include "sys/sys.h"

#define SYS_PROCFS_GEN_MIN 65536 /* bytes made for a file, and a maps line per mapping beyond */

/* the file's bytes: made into buf (at most cap), or, for the program itself, its own */
typedef const uint8_t *(*sys_procfs_gen)(struct sys_state *st, char *buf, size_t cap, size_t *len);
const uint8_t *sys_procfs_gen_online(struct sys_state *st, char *buf, size_t cap, size_t *len);
const uint8_t *sys_procfs_gen_cpuinfo(struct sys_state *st, char *buf, size_t cap, size_t *len);
const uint8_t *sys_procfs_gen_maps(struct sys_state *st, char *buf, size_t cap, size_t *len);
const uint8_t *sys_procfs_gen_statm(struct sys_state *st, char *buf, size_t cap, size_t *len);
const uint8_t *sys_procfs_gen_exe(struct sys_state *st, char *buf, size_t cap, size_t *len);
const uint8_t *sys_procfs_gen_cmdline(struct sys_state *st, char *buf, size_t cap, size_t *len);
const uint8_t *sys_procfs_gen_pipe_max(struct sys_state *st, char *buf, size_t cap, size_t *len);

#endif
