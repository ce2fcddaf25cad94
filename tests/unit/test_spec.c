/* The server's parsers without a server: sizes (base_parse_size, src/base, which the server and
 * the CLI share), durations, names, callback URLs (src/server/srv_parse.c, srv_spec.c,
 * async_callback.c) and deployments (spec_parse): what each takes, what it gives, and what it
 * refuses, at the edges and past them. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "async/async.h"
#include "server/srv_core.h"
#include "server/srv_spec.h"

static void sizes(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		uint64_t want;
	} good[] = {
	    {"0", 0},
	    {"4096", 4096},
	    {"512K", 512ULL << 10},
	    {"128M", 128ULL << 20},
	    {"128m", 128ULL << 20},
	    {"128Mi", 128ULL << 20},
	    {"128MB", 128ULL << 20},
	    {"128MiB", 128ULL << 20},
	    {"1G", 1ULL << 30},
	    {"17179869183G", 17179869183ULL << 30}, /* the largest that fits in 64 bits */
	    {"18446744073709551615", UINT64_MAX},
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		uint64_t v = 1;
		if (base_parse_size(good[i].s, &v))
			fail_msg("'%s' refused", good[i].s);
		assert_int_equal(v, good[i].want);
	}
	static const char *const bad[] = {
	    NULL,
	    "",
	    "M",
	    "-1",
	    " 1",
	    "+1",
	    "1 ",
	    "1T",
	    "1MM",
	    "1Mb",
	    "1iB",
	    "1Bi",
	    "1Mi ",
	    "0x10",
	    "1.5M",
	    "1e3",
	    "17179869184G",	    /* 2^64: one past the largest */
	    "18446744073709551616", /* strtoull's overflow */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t v = 77;
		if (!base_parse_size(bad[i], &v))
			fail_msg("'%s' accepted as %llu", bad[i] ? bad[i] : "(null)",
				 (unsigned long long)v);
		assert_int_equal(v, 77); /* a refusal writes nothing */
	}
}

static int duration_of(json_t *v, double *out)
{
	int rc = srv_parse_duration(v, out);
	json_decref(v);
	return rc;
}

static void durations(void **state)
{
	(void)state;
	double d;
	assert_int_equal(duration_of(json_integer(10), &d), 0);
	assert_true(d == 10);
	assert_int_equal(duration_of(json_real(0.25), &d), 0);
	assert_true(d == 0.25);
	assert_int_equal(duration_of(json_string("10"), &d), 0);
	assert_true(d == 10);
	assert_int_equal(duration_of(json_string("10s"), &d), 0);
	assert_true(d == 10);
	assert_int_equal(duration_of(json_string("500ms"), &d), 0);
	assert_true(d > 0.4999 && d < 0.5001);
	assert_int_equal(duration_of(json_string("2m"), &d), 0);
	assert_true(d == 120);
	assert_int_equal(duration_of(json_string("1h"), &d), 0);
	assert_true(d == 3600);
	assert_int_equal(duration_of(json_string(".5s"), &d), 0);
	assert_true(d == 0.5);
	assert_int_equal(duration_of(json_integer(86400 * 365), &d), 0); /* a year: the most */
	d = 7;
	static const char *const bad[] = {"",	"s",	"-1",  " 1",  "1d",    "1 s",
					  "1S", "1sec", "nan", "inf", "1e400", "8761h"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (!duration_of(json_string(bad[i]), &d))
			fail_msg("'%s' accepted as %g", bad[i], d);
	assert_int_equal(duration_of(json_integer(-1), &d), -1);
	assert_int_equal(duration_of(json_integer(86400 * 365 + 1), &d), -1);
	assert_int_equal(duration_of(json_true(), &d), -1);
	assert_int_equal(duration_of(json_null(), &d), -1);
	assert_int_equal(duration_of(json_object(), &d), -1);
	assert_true(d == 7); /* a refusal writes nothing */
}

static void names(void **state)
{
	(void)state;
	char longest[64], too_long[65];
	memset(longest, 'a', 63);
	longest[63] = 0;
	memset(too_long, 'a', 64);
	too_long[64] = 0;
	static const char *const good[] = {"a", "0", "hello", "hello-js", "fn_1.v2", "a.b"};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (!srv_name_ok(good[i]))
			fail_msg("'%s' refused", good[i]);
	assert_true(srv_name_ok(longest));
	static const char *const bad[] = {"",	  "-a",		 "_a",	".a",
					  "A",	  "hello World", "a/b", "a..b",
					  "a\\b", "caf\xc3\xa9", "a:b", "a\nb"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (srv_name_ok(bad[i]))
			fail_msg("'%s' accepted", bad[i]);
	assert_false(srv_name_ok(too_long));
}

static void callback_urls(void **state)
{
	(void)state;
	char err[SRV_ERR_MAX], url[2100];
	assert_int_equal(callback_url_check("http://127.0.0.1:8080/cb", err, sizeof(err)), 0);
	assert_int_equal(callback_url_check("HTTPS://example.com", err, sizeof(err)), 0);
	static const char *const bad[] = {"",
					  "ftp://example.com/x",
					  "file:///etc/passwd",
					  "http://",
					  "http://exa mple.com/",
					  "http://example.com/\x7f",
					  "http://caf\xc3\xa9.example/",
					  "no scheme at all"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		if (!callback_url_check(bad[i], err, sizeof(err)))
			fail_msg("'%s' accepted", bad[i]);
		if (!err[0])
			fail_msg("'%s' refused without a reason", bad[i]);
	}
	/* 2048 bytes is the most */
	snprintf(url, sizeof(url), "http://h/");
	memset(url + 9, 'x', 2048 - 9);
	url[2048] = 0;
	assert_int_equal(callback_url_check(url, err, sizeof(err)), 0);
	url[2048] = 'x';
	url[2049] = 0;
	assert_int_equal(callback_url_check(url, err, sizeof(err)), -1);
}

/* spec_parse of a JSON text: 0 and the spec, or -1 with err naming want */
static struct srv_spec *parse(const char *text, const char *want_err)
{
	json_error_t je;
	json_t *in = json_loads(text, 0, &je);
	if (!in)
		fail_msg("bad test JSON '%s': %s", text, je.text);
	struct srv_spec *sp = NULL;
	char err[SRV_ERR_MAX] = "";
	int rc = spec_parse(in, "2026-01-01T00:00:00Z", &sp, err, sizeof(err));
	json_decref(in);
	if (want_err) {
		if (rc == 0)
			fail_msg("'%s' accepted, expected '%s'", text, want_err);
		if (!strstr(err, want_err))
			fail_msg("'%s': '%s', expected '%s'", text, err, want_err);
		return NULL;
	}
	if (rc)
		fail_msg("'%s' refused: %s", text, err);
	return sp;
}

static void spec_defaults(void **state)
{
	(void)state;
	struct srv_spec *sp = parse("{\"service\":\"hello\",\"image\":\"hello:latest\"}", NULL);
	assert_string_equal(sp->name, "hello");
	assert_string_equal(sp->image, "hello");
	assert_string_equal(sp->runtime, "");
	assert_string_equal(sp->syscalls, ""); /* not given: the server's default */
	/* ... and not recorded, so that it follows the server's default */
	assert_null(json_object_get(json_object_get(sp->doc, "ember"), "syscalls"));
	assert_string_equal(sp->domain, "default");
	assert_string_equal(sp->sharing, "");
	assert_true(sp->timeout_s == 10 && sp->keep_alive_s == 600);
	assert_int_equal(sp->mem_bytes, 0);
	assert_int_equal(sp->min_warm + sp->max_concurrency + sp->queue, 0);
	/* ember_config's defaults, and nothing recorded: a later default is followed */
	assert_int_equal(sp->cpus + sp->threads, 0);
	assert_false(sp->no_ready); /* ready virtines that follow demand, not recorded */
	assert_null(json_object_get(json_object_get(sp->doc, "ember"), "ready"));
	assert_null(json_object_get(json_object_get(sp->doc, "ember"), "cpus"));
	assert_null(json_object_get(json_object_get(sp->doc, "ember"), "threads"));
	assert_false(sp->require_auth);
	assert_null(sp->envp[0]);
	assert_null(sp->code);
	assert_null(sp->files);
	assert_string_equal(json_string_value(json_object_get(sp->doc, "createdAt")),
			    "2026-01-01T00:00:00Z");
	spec_put(sp);
}

static void spec_fields(void **state)
{
	(void)state;
	struct srv_spec *sp = parse(
	    "{\"service\":\"f.1\",\"runtime\":\"js\",\"code\":\"x\",\"namespace\":\"team-a\","
	    "\"envVars\":{\"B\":\"2\",\"A\":\"1\",\"content_type\":\"text/plain\"},"
	    "\"limits\":{\"memory\":\"128Mi\"},\"files\":\"aGk=\",\"ember\":{\"timeout\":\"500ms\","
	    "\"keepAlive\":0,\"syscalls\":\"guest\",\"sharing\":\"off\",\"auth\":true,"
	    "\"minWarm\":64,\"maxConcurrency\":100000,\"queue\":0,\"cpus\":16,"
	    "\"threads\":4096}}",
	    NULL);
	assert_string_equal(sp->runtime, "js");
	assert_int_equal(sp->code_len, 1);
	assert_memory_equal(sp->code, "x", 1);
	assert_string_equal(sp->domain, "team-a"); /* the namespace, without a sharingDomain */
	/* the environment in key order, whatever order it came in */
	assert_string_equal(sp->envp[0], "A=1");
	assert_string_equal(sp->envp[1], "B=2");
	assert_string_equal(sp->envp[2], "content_type=text/plain");
	assert_null(sp->envp[3]);
	assert_string_equal(sp->content_type, "text/plain");
	assert_int_equal(sp->mem_bytes, 128ULL << 20);
	assert_int_equal(sp->files_len, 2); /* "hi": the padding is no data */
	assert_memory_equal(sp->files, "hi", 2);
	assert_true(sp->timeout_s > 0.4999 && sp->timeout_s < 0.5001);
	assert_true(sp->keep_alive_s == 0);
	assert_string_equal(sp->syscalls, "guest");
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(sp->doc, "ember"), "syscalls")),
	    "guest");
	assert_string_equal(sp->sharing, "off");
	assert_true(sp->require_auth);
	assert_int_equal(sp->min_warm, 64);
	assert_int_equal(sp->max_concurrency, 100000);
	assert_int_equal(sp->cpus, 16); /* EMBER_CPUS_MAX */
	assert_int_equal(sp->threads, 4096);
	json_t *em = json_object_get(sp->doc, "ember");
	assert_int_equal(json_integer_value(json_object_get(em, "cpus")), 16);
	assert_int_equal(json_integer_value(json_object_get(em, "threads")), 4096);
	spec_put(sp);
	sp =
	    parse("{\"service\":\"g\",\"image\":\"g\",\"ember\":{\"cpus\":1,\"threads\":1}}", NULL);
	assert_int_equal(sp->cpus, 1); /* the least of each */
	assert_int_equal(sp->threads, 1);
	spec_put(sp);
	sp = parse("{\"service\":\"g\",\"image\":\"g\",\"namespace\":\"n\","
		   "\"ember\":{\"sharingDomain\":\"d\"}}",
		   NULL);
	assert_string_equal(sp->domain, "d"); /* sharingDomain wins over the namespace */
	spec_put(sp);
	sp = parse("{\"service\":\"g\",\"image\":\"g\",\"namespace\":\"Not A Name\"}", NULL);
	assert_string_equal(sp->domain, "default"); /* an unusable namespace is not a domain */
	spec_put(sp);
	sp = parse("{\"service\":\"g\",\"image\":\"g\",\"ember\":{\"ready\":0}}", NULL);
	assert_true(sp->no_ready);
	json_t *r = json_object_get(json_object_get(sp->doc, "ember"), "ready");
	assert_true(json_is_integer(r) && json_integer_value(r) == 0); /* recorded: shown back */
	spec_put(sp);
}

static void spec_refusals(void **state)
{
	(void)state;
	static const char *const cases[][2] = {
	    {"[]", "must be a JSON object"},
	    {"{}", "service must be a string"},
	    {"{\"service\":\"Hello\",\"image\":\"h\"}", "service must match"},
	    {"{\"service\":\"a..b\",\"image\":\"h\"}", "service must match"},
	    {"{\"service\":\"h\"}", "give image"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"runtime\":\"js\"}", "not both"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"code\":\"x\"}", "code goes with runtime"},
	    {"{\"service\":\"h\",\"image\":\"UPPER\"}", "image must name"},
	    {"{\"service\":\"h\",\"image\":7}", "image must name"},
	    {"{\"service\":\"h\",\"runtime\":\"ruby\",\"code\":\"x\"}", "runtime must be"},
	    {"{\"service\":\"h\",\"runtime\":\"js\"}", "code must be"},
	    {"{\"service\":\"h\",\"runtime\":\"js\",\"code\":\"\"}", "code must be"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"envVars\":[]}", "envVars must be an object"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"envVars\":{\"A\":1}}", "envVars.A must be"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"envVars\":{\"A=B\":\"1\"}}", "not a variable"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"envVars\":{\"\":\"1\"}}", "not a variable"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"labels\":{\"a\":true}}", "labels.a must be"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"limits\":7}", "limits must be an object"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"limits\":{\"memory\":\"4M\"}}", "limits.memory"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"limits\":{\"memory\":\"65G\"}}",
	     "limits.memory"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"limits\":{\"memory\":128}}", "limits.memory"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"files\":\"abc\"}", "files must be"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"files\":\"\"}", "files must be"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"files\":\"a*==\"}", "files must be"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"ember\":[]}", "ember must be an object"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"ember\":{\"timeout\":0}}", "ember.timeout"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"ember\":{\"timeout\":\"25h\"}}",
	     "ember.timeout"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"ember\":{\"keepAlive\":\"soon\"}}",
	     "ember.keepAlive"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"ember\":{\"syscalls\":\"fast\"}}",
	     "ember.syscalls"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"ember\":{\"syscalls\":1}}", "ember.syscalls"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"ember\":{\"sharing\":\"all\"}}",
	     "ember.sharing"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"ember\":{\"sharingDomain\":\"A B\"}}",
	     "sharingDomain"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"namespace\":7}", "sharingDomain"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"ember\":{\"auth\":1}}", "ember.auth"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"ember\":{\"minWarm\":65}}", "ember.minWarm"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"ember\":{\"minWarm\":-1}}", "ember.minWarm"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"ember\":{\"queue\":1.5}}", "ember.queue"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"ember\":{\"maxConcurrency\":100001}}",
	     "ember.maxConcurrency"},
	    /* 0 is no value: ember_config's 0 is its default, said by leaving the field out */
	    {"{\"service\":\"h\",\"image\":\"h\",\"ember\":{\"cpus\":0}}", "ember.cpus"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"ember\":{\"cpus\":17}}", "from 1 to 16"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"ember\":{\"cpus\":-1}}", "ember.cpus"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"ember\":{\"cpus\":\"2\"}}", "ember.cpus"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"ember\":{\"cpus\":2.5}}", "ember.cpus"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"ember\":{\"threads\":0}}", "ember.threads"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"ember\":{\"threads\":4097}}", "from 1 to 4096"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"ember\":{\"threads\":true}}", "ember.threads"},
	    /* ready: 0 alone (no ready virtine), never with a floor of them */
	    {"{\"service\":\"h\",\"image\":\"h\",\"ember\":{\"ready\":1}}",
	     "ember.ready must be 0"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"ember\":{\"ready\":\"0\"}}",
	     "ember.ready must be 0"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"ember\":{\"ready\":false}}",
	     "ember.ready must be 0"},
	    {"{\"service\":\"h\",\"image\":\"h\",\"ember\":{\"ready\":0,\"minWarm\":2}}",
	     "without ember.minWarm"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		parse(cases[i][0], cases[i][1]);
}

/* null members count as absent, as OpenFaaS's clients send them */
static void spec_nulls_are_absent(void **state)
{
	(void)state;
	struct srv_spec *sp = parse("{\"service\":\"h\",\"image\":\"h\",\"runtime\":null,"
				    "\"envVars\":null,\"limits\":null,\"files\":null,"
				    "\"ember\":{\"timeout\":null,\"syscalls\":null,\"cpus\":null,"
				    "\"threads\":null}}",
				    NULL);
	assert_string_equal(sp->syscalls, "");
	assert_int_equal(sp->cpus + sp->threads, 0);
	assert_true(sp->timeout_s == 10);
	spec_put(sp);
}

/* the request path's formatters: the text "%.*f" gives (away from a tie, which srv_fixed rounds
 * up), a copy that is always terminated, and
 * a call id in the standard UUID form, version 4, different each time */
static void formatters(void **state)
{
	(void)state;
	static const struct {
		double v;
		int decimals;
	} fixed[] = {{0, 3},	    {0.0004, 3}, {0.00051, 3}, {1.2346, 3}, {12.99951, 3},  {-1, 3},
		     {0.000001, 6}, {3.25, 6},	 {42.4, 0},    {7, 1},	    {123456.789, 3}};
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		char got[32], want[32];
		srv_fixed(got, sizeof(got), fixed[i].v, fixed[i].decimals);
		snprintf(want, sizeof(want), "%.*f", fixed[i].decimals,
			 fixed[i].v < 0 ? 0 : fixed[i].v);
		assert_string_equal(got, want);
	}
	char small[4];
	srv_fixed(small, sizeof(small), 1234.5, 1);
	assert_string_equal(small, "123");
	char cut[4] = "xyz";
	srv_copy(cut, sizeof(cut), "abcdef");
	assert_string_equal(cut, "abc");
	srv_copy(cut, sizeof(cut), "");
	assert_string_equal(cut, "");
	char a[SRV_CALL_ID_MAX], b[SRV_CALL_ID_MAX];
	srv_call_id(a, sizeof(a));
	srv_call_id(b, sizeof(b));
	assert_int_equal(strlen(a), 36);
	assert_string_not_equal(a, b);
	for (int i = 0; i < 36; i++)
		assert_true(i == 8 || i == 13 || i == 18 || i == 23
				? a[i] == '-'
				: strchr("0123456789abcdef", a[i]) != NULL);
	assert_int_equal(a[14], '4');
	assert_non_null(strchr("89ab", a[19]));
	char shortid[5];
	srv_call_id(shortid, sizeof(shortid));
	assert_int_equal(strlen(shortid), 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(sizes),	     cmocka_unit_test(durations),
	    cmocka_unit_test(names),	     cmocka_unit_test(callback_urls),
	    cmocka_unit_test(spec_defaults), cmocka_unit_test(spec_fields),
	    cmocka_unit_test(spec_refusals), cmocka_unit_test(spec_nulls_are_absent),
	    cmocka_unit_test(formatters),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
