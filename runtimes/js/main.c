/* js: the JavaScript runtime, Duktape running the global handler(request, env) from fd 3. */
#include "duktape.h"
#include "ember/abi.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "langio.h"

#define EX_SOURCE  65 /* the source does not compile, throws at top level or lacks handler */
#define EX_NOINPUT 66 /* fd 3 or fd 0 cannot be read */

/* Pushes the request's metadata (fd 4: "NAME=value" lines) as an object of strings; fd 4 closed
 * (a native run) or unreadable: an empty object. */
static void put_meta(void *c, const char *name, size_t nlen, const char *value, size_t vlen)
{
	duk_context *ctx = c;
	duk_push_lstring(ctx, value, (duk_size_t)vlen);
	duk_put_prop_lstring(ctx, -2, name, (duk_size_t)nlen);
}

static void push_meta(duk_context *ctx)
{
	duk_push_object(ctx);
	lang_meta_each(EMBER_META_FD, put_meta, ctx);
}

static void msg(const char *s)
{
	base_write_all(2, s, strlen(s));
}

/* stderr output without stdio (musl's stdio would use writev) */
static void msgf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void msgf(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	msg(buf);
}

static void fatal(void *udata, const char *m)
{
	(void)udata;
	msg("js: fatal error: ");
	msg(m ? m : "(no message)");
	msg("\n");
	exit(70);
}

static duk_ret_t json_encode(duk_context *ctx, void *udata)
{
	(void)udata;
	duk_json_encode(ctx, -1);
	return 1;
}

/* console.log and friends: arguments space-separated on stderr, objects as JSON. */
static duk_ret_t console_log(duk_context *ctx)
{
	duk_idx_t n = duk_get_top(ctx);
	duk_push_string(ctx, " ");
	for (duk_idx_t i = 0; i < n; i++) {
		duk_dup(ctx, i);
		if (duk_is_object(ctx, -1) && !duk_is_function(ctx, -1) && !duk_is_error(ctx, -1)) {
			if (duk_safe_call(ctx, json_encode, NULL, 1, 1) != DUK_EXEC_SUCCESS ||
			    !duk_is_string(ctx, -1)) {
				duk_pop(ctx);
				duk_dup(ctx, i);
			}
		}
		duk_safe_to_string(ctx, -1);
	}
	duk_join(ctx, n);
	duk_push_string(ctx, "\n");
	duk_concat(ctx, 2);
	duk_size_t len;
	const char *s = duk_get_lstring(ctx, -1, &len);
	base_write_all(2, s, len);
	return 0;
}

static void install_console(duk_context *ctx)
{
	static const char *names[] = {"log", "info", "warn", "error", "debug"};
	duk_push_object(ctx);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		duk_push_c_function(ctx, console_log, DUK_VARARGS);
		duk_put_prop_string(ctx, -2, names[i]);
	}
	duk_put_global_string(ctx, "console");
}

/* Reports the error on the stack top as "<file>:<line>: <Name>: <message>" and exits 65. */
static void source_error(duk_context *ctx, const char *file)
{
	long line = 1;
	if (duk_is_error(ctx, -1)) {
		duk_get_prop_string(ctx, -1, "lineNumber");
		if (duk_is_number(ctx, -1) && duk_get_number(ctx, -1) >= 1)
			line = (long)duk_get_number(ctx, -1);
		duk_pop(ctx);
	}
	duk_safe_to_string(ctx, -1);
	msgf("%s:%ld: ", file, line);
	msg(duk_get_string(ctx, -1));
	msg("\n");
	exit(EX_SOURCE);
}

/* Reports an error thrown by handler (or by serialising its result) with its stack, exits 1. */
static void handler_error(duk_context *ctx, const char *file, const char *what)
{
	if (duk_is_error(ctx, -1)) {
		duk_get_prop_string(ctx, -1, "stack");
		if (duk_is_string(ctx, -1))
			duk_replace(ctx, -2);
		else
			duk_pop(ctx);
	}
	duk_safe_to_string(ctx, -1);
	msgf("%s: %s: ", file, what);
	msg(duk_get_string(ctx, -1));
	msg("\n");
	exit(1);
}

int main(int argc, char **argv)
{
	const char *file = argc > 1 ? argv[1] : "handler.js";
	size_t srclen, reqlen;
	char *src = lang_read_all(EMBER_CODE_FD, &srclen, 0);
	if (!src) {
		msgf("js: cannot read the source from fd %d: %s\n", EMBER_CODE_FD, strerror(errno));
		return EX_NOINPUT;
	}
	duk_context *ctx = duk_create_heap(NULL, NULL, NULL, NULL, fatal);
	if (!ctx)
		fatal(NULL, "cannot create the heap");
	install_console(ctx);

	/* compile and run the top level once, before the snapshot */
	duk_push_string(ctx, file);
	if (duk_pcompile_lstring_filename(ctx, 0, src, srclen) || duk_pcall(ctx, 0))
		source_error(ctx, file);
	duk_pop(ctx);
	free(src);
	duk_get_global_string(ctx, "handler");
	if (!duk_is_function(ctx, -1)) {
		msgf("%s:1: error: the source must define a global function 'handler'\n", file);
		return EX_SOURCE;
	}
	/* env costs a read of fd 4, an exit: only for a handler that names a second parameter */
	duk_get_prop_string(ctx, -1, "length");
	int want_env = duk_get_int(ctx, -1) >= 2;
	duk_pop(ctx);
	duk_gc(ctx, 0);
	duk_gc(ctx, 0);

	/* Ember snapshots here, at the first read of fd 0 */
	char *req = lang_read_all(0, &reqlen, 0);
	if (!req) {
		msgf("js: cannot read the request: %s\n", strerror(errno));
		return EX_NOINPUT;
	}
	duk_push_lstring(ctx, req, reqlen);
	/* req is not freed: the run ends with this one request, and in a virtine the free would
	 * give its pages back with a munmap (or brk), an exit per invocation in trap mode */
	if (want_env)
		push_meta(ctx);
	else
		duk_push_object(ctx);
	if (duk_pcall(ctx, 2))
		handler_error(ctx, file, "handler failed");
	if (duk_is_undefined(ctx, -1))
		return 0;
	if (!duk_is_string(ctx, -1) && duk_safe_call(ctx, json_encode, NULL, 1, 1))
		handler_error(ctx, file, "cannot serialise the result");
	duk_size_t len = 0;
	const char *out = duk_get_lstring(ctx, -1, &len);
	return out && base_write_all(1, out, len) ? 1 : 0;
}
