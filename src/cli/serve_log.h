/* ember serve's log on stderr, written by a thread of its own (serve_log.c). */
#ifndef EMBER_CLI_SERVE_LOG_H
#define EMBER_CLI_SERVE_LOG_H

#include "server/srv_log.h"

/* starts the writer; before it (or if it cannot start), each line is written at once */
void serve_log_start(void);
/* writes what is left and ends the writer; later lines are written at once */
void serve_log_stop(void);
/* the server's sink (srv_log_sink): "ember serve: [level: ]line"; a warning or an error is
 * written, with everything before it, before the call returns; an info line within about a
 * millisecond */
void serve_log_line(void *ctx, const char *level, const char *line);
/* writes what waits in the buffer, without a lock: for a handler of a signal that ends the
 * process (async-signal-safe, best effort) */
void serve_log_emergency(void);
/* the same, formatted */
void serve_log(const char *level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
