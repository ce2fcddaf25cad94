/* The option tables' parser: every command's options go through here (opt_help.c: --help). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/opt.h"

int opt_usage_error(const struct opt_cmd *c, const char *msg)
{
	fprintf(stderr, "ember %s: %s\n(see 'ember %s --help')\n", c->name, msg, c->name);
	return CLI_EXIT_EMBER;
}

/* the entry of table t (and its groups) whose long name is name (n bytes: a prefix when it is
 * not all of one), or whose short name is s; *ambiguous when two names start with it */
static const struct opt *find(const struct opt *t, const char *name, size_t n, char s, int depth,
			      int *ambiguous)
{
	const struct opt *hit = NULL;
	for (; t->kind != OPT_END; t++) {
		const struct opt *o = t;
		if (t->kind == OPT_GROUP) {
			if (depth >= OPT_DEPTH ||
			    !(o = find(t->group, name, n, s, depth + 1, ambiguous)))
				continue;
		} else if (s ? t->short_name != s : strncmp(t->name, name, n)) {
			continue;
		}
		if (s || strlen(o->name) == n)
			return *ambiguous = 0, o; /* exact */
		*ambiguous |= hit && hit != o;
		hit = o;
	}
	return hit;
}

/* a whole number of s from lo to hi, or -1 */
static int whole(const char *s, long long lo, long long hi, long long *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (!(isdigit((unsigned char)s[0]) || (s[0] == '-' && isdigit((unsigned char)s[1]))) ||
	    *end || errno || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/* one of "a|b|c" */
static int chosen(const char *choices, const char *s)
{
	size_t n = strlen(s);
	for (const char *p = choices; *p;) {
		size_t k = strcspn(p, "|");
		if (k == n && !strncmp(p, s, n) && n)
			return 1;
		p += k + (p[k] == '|');
	}
	return 0;
}

/* the value v of o into base; NULL, or why not (in buf when made here) */
static const char *store(const struct opt *o, void *base, const char *v, char *buf, size_t len)
{
	char *at = (char *)base + o->off;
	long long n;
	char *end;
	switch (o->kind) {
	case OPT_FLAG:
		*(int *)at = o->ival;
		return NULL;
	case OPT_STRING:
		*(const char **)at = v;
		return NULL;
	case OPT_INT:
	case OPT_UINT:
	case OPT_LLONG:
		if (!whole(v, o->min, o->max, &n)) {
			if (o->kind == OPT_INT)
				*(int *)at = (int)n;
			else if (o->kind == OPT_UINT)
				*(unsigned *)at = (unsigned)n;
			else
				*(long long *)at = n;
			return NULL;
		}
		snprintf(buf, len, "--%s needs a number from %lld to %lld", o->name, o->min,
			 o->max);
		break;
	case OPT_DOUBLE: {
		double d = strtod(v, &end);
		if (!*end && end != v && d > (double)o->min && d <= (double)o->max)
			return *(double *)at = d, NULL;
		snprintf(buf, len, "--%s needs a number above %lld", o->name, o->min);
		break;
	}
	case OPT_SIZE: {
		uint64_t sz;
		if (!base_parse_size(v, &sz) && sz >= (uint64_t)(o->min > 1 ? o->min : 1) &&
		    (!o->max || sz <= (uint64_t)o->max))
			return *(uint64_t *)at = sz, NULL;
		snprintf(buf, len, "--%s needs a size such as 6M", o->name);
		break;
	}
	case OPT_ENUM:
		if (chosen(o->choices, v))
			return *(const char **)at = v, NULL;
		snprintf(buf, len, "--%s is one of %s, not '%s'", o->name, o->choices, v);
		break;
	case OPT_CALL:
		return o->call(at, v);
	default:
		snprintf(buf, len, "--%s: not an option kind this parser knows", o->name);
		break;
	}
	return o->why ? o->why : buf;
}

/* one option with its value (NULL when none was attached); *used is set when it takes the
 * next argument. 0, or the exit status (said) */
static int apply(const struct opt_cmd *c, const struct opt *o, void *base, const char *val,
		 const char *next, int *used)
{
	char buf[256];
	const char *why;
	if (o->kind == OPT_FLAG && val) {
		snprintf(buf, sizeof(buf), "--%s takes no value", o->name);
		return opt_usage_error(c, buf);
	}
	if (o->kind != OPT_FLAG && !val) {
		if (!next) {
			snprintf(buf, sizeof(buf), "--%s needs a value (%s)", o->name,
				 o->arg ? o->arg : "?");
			return opt_usage_error(c, buf);
		}
		val = next;
		*used = 1;
	}
	if ((why = store(o, base, val, buf, sizeof(buf))))
		return opt_usage_error(c, why);
	return 0;
}

/* "--name[=value]": 0, 1 when it was --help (shown), else the exit status */
static int long_opt(const struct opt_cmd *c, void *base, const char *a, const char *next, int *used)
{
	const char *eq = strchr(a, '=');
	size_t n = eq ? (size_t)(eq - a) : strlen(a);
	int ambiguous = 0;
	char buf[300];
	const struct opt *o = find(c->opts, a, n, 0, 0, &ambiguous);
	if (n && !eq && !strncmp("help", a, n) && (n == 4 || !o)) /* --help, or a prefix of it */
		return opt_help(c, stdout), 1;
	if (!o || ambiguous) {
		snprintf(buf, sizeof(buf), "%s option '--%.*s'", o ? "ambiguous" : "unknown",
			 (int)n, a);
		return opt_usage_error(c, buf);
	}
	return apply(c, o, base, eq ? eq + 1 : NULL, next, used);
}

/* "-abc" or "-sVALUE": as long_opt */
static int short_opts(const struct opt_cmd *c, void *base, const char *a, const char *next,
		      int *used)
{
	int ambiguous = 0;
	char buf[64];
	for (; *a; a++) {
		if (*a == 'h')
			return opt_help(c, stdout), 1;
		const struct opt *o = find(c->opts, "", 0, *a, 0, &ambiguous);
		if (!o) {
			snprintf(buf, sizeof(buf), "unknown option '-%c'", *a);
			return opt_usage_error(c, buf);
		}
		if (o->kind != OPT_FLAG) /* the rest is its value, else the next argument */
			return apply(c, o, base, a[1] ? a + 1 : NULL, next, used);
		int rc = apply(c, o, base, NULL, NULL, used);
		if (rc)
			return rc;
	}
	return 0;
}

int opt_parse(const struct opt_cmd *c, void *base, int argc, char **argv, int *first)
{
	char **args = calloc((size_t)argc + 1, sizeof(*args));
	int nargs = 0, i = 1, out = 1;
	if (!args) {
		fprintf(stderr, "ember %s: out of memory\n", c->name);
		return CLI_EXIT_EMBER;
	}
	for (; i < argc; i++) {
		const char *a = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
		int used = 0, rc;
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-' || !a[1]) { /* an argument */
			if (c->flags & OPT_STOP_AT_ARG)
				break;
			args[nargs++] = argv[i];
			continue;
		}
		rc = a[1] == '-' ? long_opt(c, base, a + 2, next, &used)
				 : short_opts(c, base, a + 1, next, &used);
		if (rc) {
			free(args);
			return rc == 1 ? 0 : rc;
		}
		argv[out++] = argv[i];
		if (used)
			argv[out++] = argv[++i];
	}
	if (c->no_args && (nargs || i < argc)) {
		free(args);
		return opt_usage_error(c, c->no_args);
	}
	*first = out;
	for (int k = 0; k < nargs; k++)
		argv[out++] = args[k];
	for (; i < argc; i++)
		argv[out++] = argv[i];
	free(args);
	return -1;
}
