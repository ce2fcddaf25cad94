/* GET /ui/: the console, a page whose files are built into the binary (src/server/console/). */
#include <string.h>

#include "server/srv_core.h"
#include "server/srv_http.h"

/* the files as `ld -r -b binary` embedded them (src/server/console/console.mk) */
#define BLOB(sym)                                                                                  \
	extern const char _binary_##sym##_start[];                                                 \
	extern const char _binary_##sym##_end[];
BLOB(index_html)
BLOB(console_js)
BLOB(console_function_js)
BLOB(console_forms_js)
BLOB(console_css)
BLOB(chart_min_js)

struct console_file {
	const char *name, *ctype;
	const char *start, *end;
};

#define FILE_OF(name, sym, ctype)                                                                  \
	{                                                                                          \
		name, ctype, _binary_##sym##_start, _binary_##sym##_end                            \
	}
static const struct console_file files[] = {
    FILE_OF("index.html", index_html, "text/html; charset=utf-8"),
    FILE_OF("console.js", console_js, "text/javascript; charset=utf-8"),
    FILE_OF("console_function.js", console_function_js, "text/javascript; charset=utf-8"),
    FILE_OF("console_forms.js", console_forms_js, "text/javascript; charset=utf-8"),
    FILE_OF("console.css", console_css, "text/css; charset=utf-8"),
    /* Chart.js, Debian's libjs-chart.js as it was at build time */
    FILE_OF("chart.min.js", chart_min_js, "text/javascript; charset=utf-8"),
};

/* the page reaches nothing but this server: no script, style or connection elsewhere, no inline
 * script (a function's log line that looked like HTML would stay text anyway), no framing */
static const struct srv_header headers[] = {
    {"Content-Security-Policy",
     "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
     "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"},
    {"X-Content-Type-Options", "nosniff"},
    {"Referrer-Policy", "no-referrer"},
    {"Cache-Control", "no-cache"},
};

enum MHD_Result h_console(struct srv *s, struct srv_req *r)
{
	(void)s;
	const char *name = r->name[0] ? r->name : "index.html";
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if (!strcmp(files[i].name, name))
			return srv_reply(r, 200, files[i].ctype, (void *)files[i].start,
					 (size_t)(files[i].end - files[i].start), 0, headers,
					 sizeof(headers) / sizeof(headers[0]));
	return srv_reply_error(r, 404, "the console has no file '%s'", name);
}
