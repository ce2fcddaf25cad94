/* Unit tests for the option tables (src/cli/opt.c): every kind parsed, bad input refused with a
 * reason, every option in --help. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/opt.h"

struct args {
	int flag, off, count;
	unsigned cpus;
	long long big;
	double secs;
	uint64_t size;
	const char *name, *mode, *grouped;
	const char *words[4];
	int nwords;
};

/* a repeatable one: at most 3 words, none empty */
static const char *add_word(void *at, const char *w)
{
	struct args *a = (struct args *)((char *)at - offsetof(struct args, words));
	if (!*w || a->nwords == 3)
		return "--word needs a word, 3 at most";
	a->words[a->nwords++] = w;
	return NULL;
}

static const struct opt group[] = {
    OPT_STRING("grouped", 'g', struct args, grouped, "G", "from a group"),
    OPT_END(),
};

static const struct opt table[] = {
    OPT_FLAG("flag", 'f', struct args, flag, "a flag"),
    OPT_FLAG_SET("no-thing", 0, struct args, off, 0, "a flag that clears"),
    OPT_INT("count", 'c', struct args, count, "N", 1, 10, NULL, "a count\nof two lines"),
    OPT_UINT("cpus", 0, struct args, cpus, "N", 1, 16, "--cpus needs a count from 1 to 16",
	     "an unsigned"),
    OPT_LLONG("big", 0, struct args, big, "N", 0, 1LL << 40, NULL, "a long long"),
    OPT_DOUBLE("secs", 0, struct args, secs, "SECS", 0, 3600, NULL, "seconds"),
    OPT_SIZE("size", 0, struct args, size, "SIZE", 1, 0, NULL, "a size"),
    OPT_STRING("name", 'n', struct args, name, "NAME", "a string"),
    OPT_ENUM("mode", 0, struct args, mode, "M", "guest|trap", NULL, "an enum"),
    OPT_CALL("word", 'w', struct args, words, "W", add_word, "repeatable"),
    OPT_STRING("a-very-long-option-name", 0, struct args, name, "WITH-A-LONG-VALUE",
	       "\nits help below it"),
    OPT_GROUP(group),
    OPT_END(),
};

static const struct opt_cmd cmd = {.name = "test",
				   .head = "usage: test\n\noptions:\n",
				   .opts = table,
				   .tail = "\nthe end\n",
				   .col = 20};
static const struct opt_cmd none_cmd = {.name = "test",
					.head = "usage: test\n",
					.opts = table,
					.col = 20,
					.no_args = "no arguments, please"};
static const struct opt_cmd stop_cmd = {
    .name = "test", .head = "usage: test\n", .opts = table, .col = 20, .flags = OPT_STOP_AT_ARG};

/* what a parse of the words in args (NULL-terminated, after "test") printed on fd (1 or 2) */
static int parse_capture(const struct opt_cmd *c, struct args *a, const char **words, int fd,
			 char *out, size_t len, int *first, char ***argvp)
{
	static char *argv[32];
	int argc = 0;
	argv[argc++] = "test";
	for (; *words; words++)
		argv[argc++] = (char *)*words;
	argv[argc] = NULL;
	char path[] = "/tmp/test_opt.XXXXXX";
	int tmpfd = mkstemp(path), saved = dup(fd);
	assert_true(tmpfd >= 0 && saved >= 0);
	unlink(path);
	fflush(fd == 1 ? stdout : stderr);
	dup2(tmpfd, fd);
	int rc = opt_parse(c, a, argc, argv, first);
	fflush(fd == 1 ? stdout : stderr);
	dup2(saved, fd);
	close(saved);
	ssize_t n = pread(tmpfd, out, len - 1, 0);
	out[n > 0 ? n : 0] = 0;
	close(tmpfd);
	if (argvp)
		*argvp = argv;
	return rc;
}

static void test_every_kind(void **state)
{
	(void)state;
	struct args a = {.off = 1};
	char err[1024];
	int first;
	char **argv;
	const char *w[] = {
	    "--flag", "--no-thing", "--count", "7",	"--cpus=16",	"--big", "1099511627776",
	    "--secs", "0.5",	    "--size",  "2M",	"-n",		"fn",	 "--mode",
	    "trap",   "-w",	    "one",     "-wtwo", "--word=three", "-g",	 "x",
	    NULL};
	assert_int_equal(parse_capture(&cmd, &a, w, 2, err, sizeof(err), &first, &argv), -1);
	assert_string_equal(err, "");
	assert_int_equal(a.flag, 1);
	assert_int_equal(a.off, 0);
	assert_int_equal(a.count, 7);
	assert_int_equal(a.cpus, 16);
	assert_true(a.big == 1LL << 40);
	assert_true(a.secs == 0.5);
	assert_true(a.size == 2 << 20);
	assert_string_equal(a.name, "fn");
	assert_string_equal(a.mode, "trap");
	assert_int_equal(a.nwords, 3);
	assert_string_equal(a.words[2], "three");
	assert_string_equal(a.grouped, "x");
	assert_int_equal(first, 22); /* no arguments: first is argc */
}

/* arguments move after the options, in order; -- ends the options; unique prefixes; grouped */
static void test_arguments(void **state)
{
	(void)state;
	struct args a = {0};
	char err[1024];
	int first;
	char **argv;
	const char *w[] = {"one", "-fc", "3", "two", "--na", "n", "--", "--flag", NULL};
	assert_int_equal(parse_capture(&cmd, &a, w, 2, err, sizeof(err), &first, &argv), -1);
	assert_int_equal(a.flag, 1);
	assert_int_equal(a.count, 3);
	assert_string_equal(a.name, "n");
	assert_int_equal(first, 5);
	assert_string_equal(argv[5], "one");
	assert_string_equal(argv[6], "two");
	assert_string_equal(argv[7], "--flag");
	/* OPT_STOP_AT_ARG: the program's own options stay its own */
	struct args b = {0};
	const char *p[] = {"--count", "2", "prog", "--flag", NULL};
	assert_int_equal(parse_capture(&stop_cmd, &b, p, 2, err, sizeof(err), &first, &argv), -1);
	assert_int_equal(b.count, 2);
	assert_int_equal(b.flag, 0);
	assert_int_equal(first, 3);
	assert_string_equal(argv[3], "prog");
	assert_string_equal(argv[4], "--flag");
	/* no_args: an argument is refused, after -- too; options alone are not */
	const char *n1[] = {"--flag", "x", NULL}, *n2[] = {"--", "x", NULL}, *n3[] = {"-f", NULL};
	assert_int_equal(parse_capture(&none_cmd, &b, n1, 2, err, sizeof(err), &first, NULL), 125);
	assert_non_null(strstr(err, "ember test: no arguments, please\n"));
	assert_int_equal(parse_capture(&none_cmd, &b, n2, 2, err, sizeof(err), &first, NULL), 125);
	assert_int_equal(parse_capture(&none_cmd, &b, n3, 2, err, sizeof(err), &first, NULL), -1);
}

/* one bad command line: refused with 125 and a reason that holds want */
static void refused(const char **w, const char *want)
{
	struct args a = {0};
	char err[1024];
	int first;
	int rc = parse_capture(&cmd, &a, w, 2, err, sizeof(err), &first, NULL);
	if (rc != 125 || !strstr(err, want) || !strstr(err, "ember test: ") ||
	    !strstr(err, "(see 'ember test --help')"))
		fail_msg("%s ...: exit %d, said '%s', wanted '%s'", w[0], rc, err, want);
}

static void test_refused(void **state)
{
	(void)state;
	refused((const char *[]){"--nope", NULL}, "unknown option '--nope'");
	refused((const char *[]){"-z", NULL}, "unknown option '-z'");
	refused((const char *[]){"--c", "1", NULL}, "ambiguous option '--c'");
	refused((const char *[]){"--count", NULL}, "--count needs a value (N)");
	refused((const char *[]){"--count", "11", NULL}, "--count needs a number from 1 to 10");
	refused((const char *[]){"--count", "3x", NULL}, "--count needs a number from 1 to 10");
	refused((const char *[]){"--count", " 3", NULL}, "--count needs a number from 1 to 10");
	refused((const char *[]){"--cpus", "17", NULL}, "--cpus needs a count from 1 to 16");
	refused((const char *[]){"--cpus", "-1", NULL}, "--cpus needs a count from 1 to 16");
	refused((const char *[]){"--secs", "0", NULL}, "--secs needs a number above 0");
	refused((const char *[]){"--secs", "x", NULL}, "--secs needs a number above 0");
	refused((const char *[]){"--size", "0", NULL}, "--size needs a size such as 6M");
	refused((const char *[]){"--size", "6Q", NULL}, "--size needs a size such as 6M");
	refused((const char *[]){"--mode", "sometimes", NULL}, "--mode is one of guest|trap");
	refused((const char *[]){"--mode", "", NULL}, "--mode is one of guest|trap");
	refused((const char *[]){"--flag=1", NULL}, "--flag takes no value");
	refused((const char *[]){"-w", "", NULL}, "--word needs a word, 3 at most");
	refused((const char *[]){"-w1", "-w2", "-w3", "-w4", NULL}, "3 at most");
}

/* --help (and -h, and a prefix of it): the whole text on stdout, exit 0; every option of the
 * table, its group's too, in it with its placeholder */
static void test_help(void **state)
{
	(void)state;
	static char out[8192];
	const char *forms[][2] = {{"--help", NULL}, {"-h", NULL}, {"--he", NULL}};
	for (size_t k = 0; k < sizeof(forms) / sizeof(forms[0]); k++) {
		struct args a = {0};
		int first;
		assert_int_equal(
		    parse_capture(&cmd, &a, forms[k], 1, out, sizeof(out), &first, NULL), 0);
		assert_non_null(strstr(out, "usage: test\n\noptions:\n"));
		assert_non_null(strstr(out, "\nthe end\n"));
	}
	const char *terms[] = {"  -f, --flag ",
			       "  --no-thing ",
			       "  -c, --count N ",
			       "  --cpus N ",
			       "  --big N ",
			       "  --secs SECS ",
			       "  --size SIZE ",
			       "  -n, --name NAME ",
			       "  --mode M ",
			       "  -w, --word W ",
			       "  --a-very-long-option-name WITH-A-LONG-VALUE\n",
			       "  -g, --grouped G ",
			       "  -h, --help "};
	for (size_t k = 0; k < sizeof(terms) / sizeof(terms[0]); k++)
		if (!strstr(out, terms[k]))
			fail_msg("--help lacks '%s':\n%s", terms[k], out);
	/* the help at the column, its second line too; a long term's help on the next line */
	assert_non_null(
	    strstr(out, "\n  -c, --count N     a count\n                    of two lines\n"));
	assert_non_null(strstr(out, "VALUE\n                    its help below it\n"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_kind),
	    cmocka_unit_test(test_arguments),
	    cmocka_unit_test(test_refused),
	    cmocka_unit_test(test_help),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
