/* An option table's --help, as text or, for scripts/mkman.sh, its options as roff (ember.1). */
#include <stdlib.h>
#include <string.h>

#include "cli/opt.h"

/* what --help ends every list with */
static const struct opt help_opt[] = {
    {.kind = OPT_FLAG, .name = "help", .short_name = 'h', .help = "show this help"},
    OPT_END(),
};

/* one entry as text: "  -s, --name ARG", then its help's lines, the first beside the term (or
 * below a term too long for the column when the help starts with "\n"), the others at col */
static void text_item(const struct opt *o, int col, FILE *f)
{
	char s[8] = "";
	if (o->short_name)
		snprintf(s, sizeof(s), "-%c, ", o->short_name);
	int at = fprintf(f, "  %s--%s%s%s", s, o->name, o->arg ? " " : "", o->arg ? o->arg : "");
	const char *h = o->help;
	while (*h) {
		size_t k = strcspn(h, "\n");
		if (k)
			fprintf(f, "%*s%.*s", at + 2 <= col ? col - at : 2, "", (int)k, h);
		fputc('\n', f);
		h += k + (h[k] == '\n');
		at = 0;
	}
	if (!*o->help)
		fputc('\n', f);
}

/* n bytes of s as roff text: backslashes and hyphens escaped, a leading dot or quote too */
static void roff(const char *s, size_t n, FILE *f)
{
	if (n && (s[0] == '.' || s[0] == '\''))
		fputs("\\&", f);
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\\' || s[i] == '-')
			fputs(s[i] == '\\' ? "\\e" : "\\-", f);
		else
			fputc(s[i], f);
	}
}

/* one entry as a tagged paragraph: the names bold, the placeholder italic, the help filled */
static void man_item(const struct opt *o, int col, FILE *f)
{
	(void)col;
	fputs(".TP\n", f);
	if (o->short_name)
		fprintf(f, "\\fB\\-%c\\fR, ", o->short_name);
	fputs("\\fB\\-\\-", f);
	roff(o->name, strlen(o->name), f);
	fputs("\\fR", f);
	if (o->arg) {
		fputs(" \\fI", f);
		roff(o->arg, strlen(o->arg), f);
		fputs("\\fR", f);
	}
	fputc('\n', f);
	for (const char *h = o->help; *h;) {
		size_t k = strcspn(h, "\n");
		if (k) {
			roff(h, k, f);
			fputc('\n', f);
		}
		h += k + (h[k] == '\n');
	}
}

/* item(each entry) of t, those of its groups where they stand */
static void each(const struct opt *t, void (*item)(const struct opt *, int, FILE *), int col,
		 FILE *f, int depth)
{
	for (; t->kind != OPT_END; t++) {
		if (t->kind != OPT_GROUP)
			item(t, col, f);
		else if (depth < OPT_DEPTH)
			each(t->group, item, col, f, depth + 1);
	}
}

void opt_help(const struct opt_cmd *c, FILE *f)
{
	const char *fmt = getenv("EMBER_HELP_FORMAT");
	int man = fmt && !strcmp(fmt, "man");
	void (*item)(const struct opt *, int, FILE *) = man ? man_item : text_item;
	fputs(c->head, f);
	if (man) /* scripts/mkman.sh copies what is between these lines as it is */
		fputs(".\\\" options\n", f);
	each(c->opts, item, c->col, f, 0);
	each(help_opt, item, c->col, f, 0);
	if (man)
		fputs(".\\\" end of options\n", f);
	if (c->tail)
		fputs(c->tail, f);
}
