/* Unit tests for the server's log ring (srv_logs.c): lines, bounds, wrap-around, cuts, UTF-8,
 * queries, waiting, and the since parser. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/srv_logs.h"

static void append(struct srv_logs *l, const char *id, const char *text)
{
	logs_append(l, id, (const uint8_t *)text, strlen(text));
}

/* the texts of the lines of q from seq 0, joined with '|' */
static char *texts(struct srv_logs *l, const struct logs_query *q)
{
	static char buf[65536];
	uint64_t seq = logs_start(l, q);
	struct log_line *x;
	size_t n = 0;
	buf[0] = 0;
	while ((x = logs_next(l, &seq, UINT64_MAX, q))) {
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s", n ? "|" : "",
				      log_line_text(x));
		free(x);
	}
	return buf;
}

static const struct logs_query all = {0};

static void test_lines_in_order(void **state)
{
	(void)state;
	struct srv_logs *l = logs_new(1 << 20, 100);
	assert_non_null(l);
	append(l, "a", "one\ntwo\n");
	append(l, "b", "three\r\n\nfive"); /* CR LF, an empty line, no newline at the end */
	append(l, "c", "");		   /* nothing: no line */
	assert_string_equal(texts(l, &all), "one|two|three||five");
	struct logs_usage u;
	logs_usage(l, &u);
	assert_int_equal(u.lines, 5);
	uint64_t seq = 0;
	int64_t last = 0;
	struct log_line *x;
	while ((x = logs_next(l, &seq, UINT64_MAX, &all))) {
		assert_true(x->ts_ns > last); /* unique and increasing */
		last = x->ts_ns;
		free(x);
	}
	logs_put(l);
}

static void test_wrap_around(void **state)
{
	(void)state;
	struct srv_logs *l = logs_new(1 << 20, 4);
	char line[16];
	for (int i = 0; i < 10; i++) {
		snprintf(line, sizeof(line), "l%d\n", i);
		append(l, "id", line);
	}
	assert_string_equal(texts(l, &all), "l6|l7|l8|l9");
	assert_int_equal(logs_end(l), 10);
	/* a reader behind the ring skips what was dropped */
	uint64_t seq = 2;
	struct log_line *x = logs_next(l, &seq, UINT64_MAX, &all);
	assert_non_null(x);
	assert_int_equal(x->seq, 6);
	assert_string_equal(log_line_text(x), "l6");
	free(x);
	/* one invocation with more lines than the ring: its last ones */
	append(l, "id", "a\nb\nc\nd\ne\nf\n");
	assert_string_equal(texts(l, &all), "c|d|e|f");
	logs_put(l);
}

static void test_byte_bound(void **state)
{
	(void)state;
	uint64_t max = 16384;
	struct srv_logs *l = logs_new(max, 100000);
	char *big = malloc(1 << 20);
	for (int i = 0; i < (1 << 20); i++)
		big[i] = i % 100 == 99 ? '\n' : 'x';
	for (int round = 0; round < 5; round++) {
		logs_append(l, "flood", (const uint8_t *)big, 1 << 20);
		struct logs_usage u;
		logs_usage(l, &u);
		assert_true(u.bytes <= max);
		assert_true(u.lines > 16384 / 200); /* the ring is used, not emptied */
	}
	free(big);
	logs_put(l);
}

static void test_cut(void **state)
{
	(void)state;
	/* a 16 KiB ring keeps lines of at most 2 KiB (a quarter of it, with room for headers) */
	struct srv_logs *l = logs_new(16384, 100);
	char *line = malloc(5001);
	memset(line, 'a', 5000);
	line[5000] = 0;
	append(l, "id", line);
	char want[2100];
	memset(want, 'a', 2048);
	snprintf(want + 2048, sizeof(want) - 2048, " [... 2952 bytes cut]");
	assert_string_equal(texts(l, &all), want);
	/* a cut never splits a character: "a" and 1023 of the 2-byte "é" fill 2047 bytes */
	logs_put(l);
	l = logs_new(16384, 100);
	line[0] = 'a';
	for (int i = 0; i < 2499; i++)
		memcpy(line + 1 + 2 * i, "\xc3\xa9", 2);
	line[4999] = 0;
	append(l, "id", line);
	const char *t = texts(l, &all);
	assert_int_equal(strlen(t), 2047 + 21);
	assert_memory_equal(t + 2043, "\xc3\xa9\xc3\xa9 [... 2952 bytes cut]", 25);
	free(line);
	logs_put(l);
}

static void test_utf8(void **state)
{
	(void)state;
	struct srv_logs *l = logs_new(1 << 20, 100);
	/* valid: é, €, 𝄞; invalid: a lone continuation, an overlong '/', a surrogate, 0xff, a
	 * truncated sequence at the end */
	append(l, "id",
	       "ok \xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e\n"
	       "\x80|\xc0\xaf|\xed\xa0\x80|\xff|\xe2\x82");
	const char *fffd = "\xef\xbf\xbd";
	char want[256];
	snprintf(want, sizeof(want),
		 "ok \xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e|%s|%s%s|%s%s%s|%s|%s%s", fffd, fffd, fffd,
		 fffd, fffd, fffd, fffd, fffd, fffd);
	assert_string_equal(texts(l, &all), want);
	logs_put(l);
}

static void test_queries(void **state)
{
	(void)state;
	struct srv_logs *l = logs_new(1 << 20, 100);
	append(l, "call-1", "a1\na2\n");
	append(l, "call-2", "b1\nb2\n");
	append(l, "call-1", "a3\n");
	struct logs_query q = {.instance = "call-1"};
	assert_string_equal(texts(l, &q), "a1|a2|a3");
	q.tail = 2;
	assert_string_equal(texts(l, &q), "a2|a3");
	q = (struct logs_query){.tail = 3};
	assert_string_equal(texts(l, &q), "b1|b2|a3");
	q.tail = -1;
	assert_string_equal(texts(l, &q), "a1|a2|b1|b2|a3");
	/* since: the third line's time and later */
	uint64_t seq = 2;
	struct log_line *x = logs_next(l, &seq, UINT64_MAX, &all);
	q = (struct logs_query){.since_ns = x->ts_ns};
	free(x);
	assert_string_equal(texts(l, &q), "b1|b2|a3");
	/* end: a reader that stops where the ring ended when it started */
	seq = 0;
	int n = 0;
	while ((x = logs_next(l, &seq, 2, &all)))
		free(x), n++;
	assert_int_equal(n, 2);
	logs_put(l);
}

static void test_wait_and_close(void **state)
{
	(void)state;
	struct srv_logs *l = logs_new(1 << 20, 100);
	assert_int_equal(logs_wait(l, 0, 0.01), 0); /* nothing: times out, open */
	append(l, "id", "x\n");
	assert_int_equal(logs_wait(l, 0, 10), 0); /* a line at 0: at once */
	logs_close(l);
	assert_int_equal(logs_wait(l, 1, 10), 1); /* closed: at once */
	append(l, "id", "after close\n");
	assert_int_equal(logs_end(l), 1);
	/* a reader's reference outlives the owner's */
	struct srv_logs *r = logs_get(l);
	logs_put(l);
	assert_string_equal(texts(r, &all), "x");
	logs_put(r);
	logs_put(NULL);
	logs_append(NULL, "id", (const uint8_t *)"x", 1);
	logs_close(NULL);
}

static void test_parse_time(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		int64_t ns;
	} good[] = {
	    {"1970-01-01T00:00:00Z", 0},
	    {"2026-11-29T20:03:51Z", 1795982631LL * 1000000000},
	    {"2026-11-29T20:03:51.5Z", 1795982631LL * 1000000000 + 500000000},
	    {"2026-11-29T20:03:51.123456789012z", 1795982631LL * 1000000000 + 123456789},
	    {"2026-11-29t21:03:51+01:00", 1795982631LL * 1000000000},
	    {"2026-11-29T19:33:51-00:30", 1795982631LL * 1000000000},
	    {"1795982631", 1795982631LL * 1000000000},
	    {"1795982631.25", 1795982631LL * 1000000000 + 250000000},
	    {"0", 0},
	};
	static const char *const bad[] = {
	    "",
	    "yesterday",
	    "2026-11-29",
	    "2026-11-29T20:03:51",
	    "2026-11-29 20:03:51Z",
	    "2026-13-29T20:03:51Z",
	    "2026-11-29T24:03:51Z",
	    "2026-11-29T20:03:51.Z",
	    "2026-11-29T20:03:51+0100",
	    "2026-11-29T20:03:51Zjunk",
	    "1795982631.",
	    "1.2.3",
	    "-5",
	};
	int64_t ns;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ns = -1;
		assert_int_equal(logs_parse_time(good[i].s, &ns), 0);
		assert_int_equal(ns, good[i].ns);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(logs_parse_time(bad[i], &ns), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_lines_in_order), cmocka_unit_test(test_wrap_around),
	    cmocka_unit_test(test_byte_bound),	   cmocka_unit_test(test_cut),
	    cmocka_unit_test(test_utf8),	   cmocka_unit_test(test_queries),
	    cmocka_unit_test(test_wait_and_close), cmocka_unit_test(test_parse_time),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
