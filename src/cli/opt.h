/* Option tables: one per command, from which its parser, its --help and so ember.1 are made. */
#ifndef EMBER_CLI_OPT_H
#define EMBER_CLI_OPT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* what an option's value is, and where it lands (at base + off, base given to opt_parse) */
enum opt_kind {
	OPT_END,    /* the end of a table */
	OPT_FLAG,   /* no value: int = ival (1 unless said) */
	OPT_STRING, /* const char *: the argument itself */
	OPT_INT,    /* int from min to max */
	OPT_UINT,   /* unsigned from min to max */
	OPT_LLONG,  /* long long from min to max */
	OPT_DOUBLE, /* double above min (min itself refused) and at most max */
	OPT_SIZE, /* uint64_t with a unit (6M, 1G: base_parse_size), from min (at least 1) to max */
	OPT_ENUM, /* const char *: one of choices, "a|b|c" */
	OPT_CALL, /* call(base + off, arg): NULL, or why the value is refused (repeatable ones) */
	OPT_GROUP, /* the options of another table (group), at the same base */
};

struct opt {
	enum opt_kind kind;
	const char *name; /* the long name, without "--" */
	char short_name;  /* 0: none */
	size_t off;	  /* where the value lands: base + off */
	const char *arg;  /* the value's placeholder in --help (SIZE, N, DIR), NULL for a flag */
	const char *help; /* what it does; "\n" starts a line of its own, indented by --help */
	long long min, max;
	int ival;					/* OPT_FLAG: the value set */
	const char *choices;				/* OPT_ENUM: "a|b|c" */
	const char *(*call)(void *at, const char *arg); /* OPT_CALL */
	const char *why;	 /* what a bad value is told (NULL: said from the kind) */
	const struct opt *group; /* OPT_GROUP */
};

/* the member of type T that an option fills */
#define OPT_AT(T, m) offsetof(T, m)

#define OPT_ENTRY(k, l, s, T, m, a, h)                                                             \
	.kind = k, .name = l, .short_name = s, .off = OPT_AT(T, m), .arg = a, .help = h
#define OPT_FLAG(l, s, T, m, h)                                                                    \
	{                                                                                          \
		OPT_ENTRY(OPT_FLAG, l, s, T, m, NULL, h), .ival = 1                                \
	}
#define OPT_FLAG_SET(l, s, T, m, v, h)                                                             \
	{                                                                                          \
		OPT_ENTRY(OPT_FLAG, l, s, T, m, NULL, h), .ival = v                                \
	}
#define OPT_STRING(l, s, T, m, a, h)                                                               \
	{                                                                                          \
		OPT_ENTRY(OPT_STRING, l, s, T, m, a, h)                                            \
	}
/* a number from lo to hi (OPT_DOUBLE: above lo); w: what a bad one is told (NULL: made up) */
#define OPT_NUM(k, l, s, T, m, a, lo, hi, w, h)                                                    \
	{                                                                                          \
		OPT_ENTRY(k, l, s, T, m, a, h), .min = lo, .max = hi, .why = w                     \
	}
#define OPT_INT(...)	OPT_NUM(OPT_INT, __VA_ARGS__)
#define OPT_UINT(...)	OPT_NUM(OPT_UINT, __VA_ARGS__)
#define OPT_LLONG(...)	OPT_NUM(OPT_LLONG, __VA_ARGS__)
#define OPT_DOUBLE(...) OPT_NUM(OPT_DOUBLE, __VA_ARGS__)
#define OPT_SIZE(...)	OPT_NUM(OPT_SIZE, __VA_ARGS__) /* lo: at least 1; hi 0: no bound */
#define OPT_ENUM(l, s, T, m, a, c, w, h)                                                           \
	{                                                                                          \
		OPT_ENTRY(OPT_ENUM, l, s, T, m, a, h), .choices = c, .why = w                      \
	}
#define OPT_CALL(l, s, T, m, a, fn, h)                                                             \
	{                                                                                          \
		OPT_ENTRY(OPT_CALL, l, s, T, m, a, h), .call = fn                                  \
	}
#define OPT_GROUP(g)                                                                               \
	{                                                                                          \
		.kind = OPT_GROUP, .group = g                                                      \
	}
#define OPT_END()                                                                                  \
	{                                                                                          \
		.kind = OPT_END                                                                    \
	}

/* how deep groups within groups are followed */
#define OPT_DEPTH 4

/* stop at the first argument that is no option: what follows is the program's (ember run) */
#define OPT_STOP_AT_ARG 1

/* a command: its table and the text around the list --help makes of it */
struct opt_cmd {
	const char *name; /* "run", "bench latency": said in errors as "ember NAME: ..." */
	const char *head; /* the usage line and what the command does, up to "options:\n" */
	const struct opt *opts;
	const char *tail;    /* after the list ("-h, --help" ends it); may be NULL */
	int col;	     /* the column the options' help starts in */
	const char *no_args; /* set: it takes no arguments, and one is refused with this */
	unsigned flags;	     /* OPT_STOP_AT_ARG */
};

/* a command: its name, text before and after the list, table, column, flags, no_args */
#define OPT_CMD(n, h, t, tl, c, f, na)                                                             \
	{                                                                                          \
		.name = n, .head = h, .opts = t, .tail = tl, .col = c, .flags = f, .no_args = na   \
	}

/* Parses argv[1..argc-1] (argv[0] is the command's name) into base by c's table: "--name
 * VALUE", "--name=VALUE", a unique prefix of a name, "-s VALUE", "-sVALUE", flags grouped as
 * "-qh", "--" ending the options. The arguments that are no options are moved after them, in
 * their order (with OPT_STOP_AT_ARG, the first one and all after it), and *first is the index
 * of the first (refused with c->no_args when that is set). Returns -1 to go on; else the exit
 * status to end with: 0 after --help (on stdout), 125 after a bad option, said on stderr as "ember
 * NAME: why (see ...)". */
int opt_parse(const struct opt_cmd *c, void *base, int argc, char **argv, int *first);

/* c's --help: head, the options in two columns (and -h, --help), tail. With EMBER_HELP_FORMAT=man
 * in the environment (scripts/mkman.sh), the options are roff instead, one tagged paragraph each,
 * between the lines '.\" options' and '.\" end of options' */
void opt_help(const struct opt_cmd *c, FILE *f);

/* "ember NAME: msg\n(see 'ember NAME --help')" on stderr; returns 125 */
int opt_usage_error(const struct opt_cmd *c, const char *msg);

#endif
