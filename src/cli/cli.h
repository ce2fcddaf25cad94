/* The ember command: one function per subcommand, and the helpers they share. */
#ifndef EMBER_CLI_H
#define EMBER_CLI_H

#include <stddef.h>
#include <stdint.h>

/* exit statuses of Ember's own outcomes (shell conventions) */
#define CLI_EXIT_TIMEOUT 124
#define CLI_EXIT_EMBER   125
#define CLI_EXIT_LIMIT   126

int cli_run(int argc, char **argv);
int cli_bench(int argc, char **argv);

/* "64M", "1G", "512K", "4096" -> bytes; -1 on a malformed size */
int cli_parse_size(const char *s, uint64_t *out);
/* reads all of fd into a malloc'd buffer; -1 on error */
int cli_read_all(int fd, uint8_t **buf, size_t *len, size_t max);
int cli_write_all(int fd, const void *buf, size_t len);
/* the runtime image for a language ("js", "lua"): $EMBER_RUNTIME_DIR/NAME, or runtimes/NAME next
 * to the ember binary */
int cli_runtime_path(const char *name, char *out, size_t outlen, char *why, size_t whylen);

#endif
