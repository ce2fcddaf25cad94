/* The server's one logger: formats a line and hands it to the sink the embedder gave. */
#include <stdarg.h>
#include <stdio.h>

#include "server/srv_core.h"

void srv_log(const struct srv *s, const char *level, const char *fmt, ...)
{
	if (!s->opt.log)
		return;
	char line[SRV_LOG_LINE_MAX + 1];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	s->opt.log(s->opt.log_ctx, level, line);
}
