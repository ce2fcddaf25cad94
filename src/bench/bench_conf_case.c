/* The cases of `ember bench conformance`: their names, results and the lines that say why. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_conf.h"

const char *conf_res_name(enum conf_res r)
{
	static const char *const names[] = {"none",    "pass", "fail", "crash",
					    "timeout", "n/a",  "skip"};
	return names[r];
}

int conf_case_add(struct conf_file *f, const char *name, size_t len)
{
	struct conf_case *c = realloc(f->cases, (f->ncases + 1) * sizeof(*c));
	if (!c)
		return -1;
	f->cases = c;
	c += f->ncases;
	memset(c, 0, sizeof(*c));
	if (!(c->name = strndup(name, len)))
		return -1;
	f->ncases++;
	return 0;
}

void conf_line(const char *p, char *buf, size_t len)
{
	p += strspn(p, " \t");
	size_t n = strcspn(p, "\n");
	while (n && (p[n - 1] == ' ' || p[n - 1] == '\r'))
		n--;
	snprintf(buf, len, "%.*s", (int)n, p);
}
