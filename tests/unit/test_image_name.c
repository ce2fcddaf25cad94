/* Unit tests for srv_image_name: the image references faas-cli writes, mapped to Ember names. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "server/srv_serve.h"

static void expect_name(const char *ref, const char *want)
{
	char name[64] = "untouched";
	if (srv_image_name(ref, name, sizeof(name)))
		fail_msg("'%s' refused, expected '%s'", ref, want);
	if (strcmp(name, want))
		fail_msg("'%s' -> '%s', expected '%s'", ref, name, want);
}

static void expect_refused(const char *ref)
{
	char name[64];
	if (!srv_image_name(ref, name, sizeof(name)))
		fail_msg("'%s' accepted as '%s'", ref, name);
}

static void test_plain_names(void **state)
{
	(void)state;
	expect_name("hello", "hello");
	expect_name("hello-js", "hello-js");
	expect_name("a", "a");
	expect_name("fn_1.v2", "fn_1.v2");
}

static void test_tags(void **state)
{
	(void)state;
	expect_name("hello:latest", "hello");
	expect_name("hello:0.1.0", "hello");
	expect_name("hello:Build_7-rc.1", "hello");
	expect_name("hello:_x", "hello");
}

static void test_paths_and_registries(void **state)
{
	(void)state;
	expect_name("alexellis/hello:latest", "hello");
	expect_name("ghcr.io/org/hello:1.2", "hello");
	expect_name("docker.io/library/hello", "hello");
	expect_name("localhost:5000/hello", "hello"); /* the port is not a tag */
	expect_name("localhost:5000/team/hello:v3", "hello");
	expect_name("registry.example.com:443/a/b/c/hello:1", "hello");
	expect_name("Registry.Example.com/hello", "hello"); /* a host may have capitals */
	expect_name("localhost/hello", "hello");
}

/* the components before the name: a registry first, then names; never a way up */
static void test_components(void **state)
{
	(void)state;
	expect_refused("../hello");
	expect_refused("./hello");
	expect_refused("org/../hello");
	expect_refused("org/./hello");
	expect_refused("a..b.io/hello");
	expect_refused("org/Team/hello");
	expect_refused("registry:port/hello");
	expect_refused("registry:/hello");
	expect_refused("org/b:1/hello");
	expect_refused("-reg.io/hello");
	expect_refused("reg_x.io/hello");
}

static void test_digests(void **state)
{
	(void)state;
	expect_name("hello@sha256:0123456789abcdef", "hello");
	expect_name("ghcr.io/org/hello:1.2@sha256:0123456789abcdef", "hello");
}

static void test_malformed(void **state)
{
	(void)state;
	expect_refused("");
	expect_refused(":latest");
	expect_refused("hello:");
	expect_refused("hello:.x"); /* a tag starts with a word character */
	expect_refused("hello:-x");
	expect_refused("hello:a b");
	expect_refused("org/");
	expect_refused("/hello");
	expect_refused("org//hello");
	expect_refused("hello@");
	expect_refused("@sha256:00");
	char long_tag[160];
	memset(long_tag, 'a', sizeof(long_tag));
	memcpy(long_tag, "hello:", 6);
	long_tag[6 + 129] = 0; /* 129 characters: one too many */
	expect_refused(long_tag);
	long_tag[6 + 128] = 0;
	expect_name(long_tag, "hello");
}

/* the last component must still be a name Ember accepts */
static void test_bad_names(void **state)
{
	(void)state;
	expect_refused("Hello");
	expect_refused("ghcr.io/org/Hello:1");
	expect_refused("-hello");
	expect_refused("org/..:1");
	expect_refused("a..b");
	expect_refused("hello$");
	char big[80];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	expect_refused(big); /* longer than 63 */
	big[63] = 0;
	expect_name(big, big);
	char name[8];
	assert_int_equal(srv_image_name("registry/abcdefgh:1", name, sizeof(name)), -1);
	assert_int_equal(srv_image_name("registry/abcdefg:1", name, sizeof(name)), 0);
	assert_string_equal(name, "abcdefg");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plain_names),
	    cmocka_unit_test(test_tags),
	    cmocka_unit_test(test_paths_and_registries),
	    cmocka_unit_test(test_digests),
	    cmocka_unit_test(test_components),
	    cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_bad_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
