/* Unit tests for ember bench conformance's readers of the suites' own output: Go's -test.v,
 * unittest's verbose lines, GoogleTest's; the cases listed, each verdict and its first reason. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "bench/bench_conf.h"

static void expect(const struct conf_suite *s, const char *out, const char *name,
		   enum conf_res want, const char *why_has)
{
	char why[512] = "";
	enum conf_res got = s->result(out, name, why, sizeof(why));
	if (got != want)
		fail_msg("%s %s: %s, wanted %s", s->name, name, conf_res_name(got),
			 conf_res_name(want));
	if (why_has && !strstr(why, why_has))
		fail_msg("%s %s: reason '%s', wanted '%s' in it", s->name, name, why, why_has);
}

static void free_file(struct conf_file *f)
{
	for (size_t i = 0; i < f->ncases; i++)
		free(f->cases[i].name);
	free(f->cases);
}

static void test_go(void **state)
{
	(void)state;
	static const char out[] = "=== RUN   TestA\n"
				  "--- PASS: TestA (0.00s)\n"
				  "=== RUN   TestAB\n"
				  "    x_test.go:12: got 1, want 2\n"
				  "    x_test.go:13: later\n"
				  "--- FAIL: TestAB (0.01s)\n"
				  "=== RUN   TestC\n"
				  "    c_test.go:3: no network here\n"
				  "--- SKIP: TestC (0.00s)\n"
				  "=== RUN   TestD\n"
				  "panic: boom\n";
	expect(&conf_go, out, "TestA", CONF_PASS, NULL);
	expect(&conf_go, out, "TestAB", CONF_FAIL, "x_test.go:12: got 1, want 2");
	expect(&conf_go, out, "TestC", CONF_SKIP, "no network here");
	expect(&conf_go, out, "TestD", CONF_NONE, NULL); /* died: the run's end says why */
	expect(&conf_go, out, "TestB", CONF_NONE, NULL); /* a prefix of TestAB is not it */
	expect(&conf_go, "  --- PASS: TestSub (0.00s)\n", "TestSub", CONF_NONE, NULL);

	struct conf_file f = {.suite = &conf_go};
	char list[] = "TestA\nBenchmarkX\nExampleY\nFuzzZ\nok  \tsync\t0.01s\n";
	assert_int_equal(conf_go.list(&f, list), 0);
	assert_int_equal(f.ncases, 3);
	assert_string_equal(f.cases[0].name, "TestA");
	assert_string_equal(f.cases[1].name, "ExampleY");
	assert_string_equal(f.cases[2].name, "FuzzZ");
	free_file(&f);
}

static void test_python(void **state)
{
	(void)state;
	static const char out[] =
	    "test_a (test.test_x.T.test_a) ... ok\n"
	    "test_b (test.test_x.T.test_b) ... FAIL\n"
	    "test_c (test.test_x.T.test_c) ... skipped 'needs the network'\n"
	    "test_d (test.test_x.T.test_d) ... some output of its own\n"
	    "ok\n"
	    "test_e (test.test_x.T.test_e) ... expected failure\n"
	    "test_f (test.test_x.T.test_f) ... ERROR\n"
	    "\n"
	    "======================================================================\n"
	    "FAIL: test_b (test.test_x.T.test_b)\n"
	    "----------------------------------------------------------------------\n"
	    "Traceback (most recent call last):\n"
	    "  File \"/usr/lib/python3.11/test/test_x.py\", line 9, in test_b\n"
	    "    self.assertEqual(1, 2)\n"
	    "AssertionError: 1 != 2\n"
	    "\n"
	    "======================================================================\n"
	    "ERROR: test_f (test.test_x.T.test_f)\n"
	    "----------------------------------------------------------------------\n"
	    "Traceback (most recent call last):\n"
	    "  File \"/usr/lib/python3.11/test/test_x.py\", line 12, in test_f\n"
	    "    os.mkfifo(p)\n"
	    "OSError: [Errno 38] Function not implemented\n";
	expect(&conf_python, out, "test.test_x.T.test_a", CONF_PASS, NULL);
	expect(&conf_python, out, "test.test_x.T.test_b", CONF_FAIL, "AssertionError: 1 != 2");
	expect(&conf_python, out, "test.test_x.T.test_c", CONF_SKIP, "needs the network");
	expect(&conf_python, out, "test.test_x.T.test_d", CONF_PASS, NULL);
	expect(&conf_python, out, "test.test_x.T.test_e", CONF_PASS, NULL);
	expect(&conf_python, out, "test.test_x.T.test_f", CONF_FAIL, "[Errno 38]");
	expect(&conf_python, out, "test.test_x.T.test_g", CONF_NONE, NULL);
	/* a forked child that went on running the module after the summary: not the case's */
	expect(&conf_python, "---\nRan 1 test\ntest_h (test.test_x.T.test_h) ... ok\n",
	       "test.test_x.T.test_h", CONF_NONE, NULL);

	struct conf_file f = {.suite = &conf_python};
	char list[] = "test.test_x.T.test_a\n0:00:00 load avg: 0.5 ...\ntest.test_x.T.test_b\n";
	assert_int_equal(conf_python.list(&f, list), 0);
	assert_int_equal(f.ncases, 2);
	assert_string_equal(f.cases[1].name, "test.test_x.T.test_b");
	free_file(&f);
}

static void test_gtest(void **state)
{
	(void)state;
	static const char out[] = "[ RUN      ] PipeTest.Read\n"
				  "[       OK ] PipeTest.Read (0 ms)\n"
				  "[ RUN      ] PipeTest.Flags\n"
				  "test/syscalls/linux/pipe.cc:70: Failure\n"
				  "Value of: fcntl(fd, F_GETPIPE_SZ)\n"
				  "[  FAILED  ] PipeTest.Flags (1 ms)\n"
				  "[ RUN      ] P/PipeTest.NonBlocking/0\n"
				  "[  SKIPPED ] P/PipeTest.NonBlocking/0 (0 ms)\n"
				  "[  FAILED  ] P/PipeTest.Big/1, where GetParam() = 4\n";
	expect(&conf_gvisor, out, "PipeTest.Read", CONF_PASS, NULL);
	expect(&conf_gvisor, out, "PipeTest.Flags", CONF_FAIL, "Value of: fcntl(fd, F_GETPIPE_SZ)");
	expect(&conf_gvisor, out, "P/PipeTest.NonBlocking/0", CONF_SKIP, NULL);
	expect(&conf_gvisor, out, "P/PipeTest.Big/1", CONF_FAIL, NULL);
	expect(&conf_gvisor, out, "PipeTest.Rea", CONF_NONE, NULL);

	struct conf_file f = {.suite = &conf_gvisor};
	char list[] = "PipeTest.\n  Read\n  Flags\nP/PipeTest.\n  NonBlocking/0  # GetParam() = 1\n"
		      "GetdentsTest/0.  # TypeParam = linux_dirent\n  SmallDir\n";
	assert_int_equal(conf_gvisor.list(&f, list), 0);
	assert_int_equal(f.ncases, 4);
	assert_string_equal(f.cases[2].name, "P/PipeTest.NonBlocking/0");
	assert_string_equal(f.cases[3].name, "GetdentsTest/0.SmallDir"); /* a typed suite's */
	free_file(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_go),
	    cmocka_unit_test(test_python),
	    cmocka_unit_test(test_gtest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
