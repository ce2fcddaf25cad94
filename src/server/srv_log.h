/* The server's one logger: every message the server has for its operator goes through it. */
#ifndef EMBER_SRV_LOG_H
#define EMBER_SRV_LOG_H

/* the longest line a sink is given, without its newline: longer messages are cut */
#define SRV_LOG_LINE_MAX 1024

/* where log lines go: the embedder's choice (ember serve writes them to stderr); NULL drops them */
typedef void (*srv_log_sink)(void *ctx, const char *level, const char *line);

struct srv;
/* one line, without its newline; level is "info", "warning" or "error" */
void srv_log(const struct srv *s, const char *level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
