/* The cluster's pieces that need no etcd: the shared store (a blob read back whole, one whose
 * content does not match its digest refused, a malformed digest refused, a damaged blob put
 * again repaired) and the etcd client's parsing of --cluster and its base64 keys. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/srv_cluster.h"

static char dir[64];

static int make_dir(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/ember-test-cstore-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

static void blob_path(const char *digest, char *buf, size_t len)
{
	snprintf(buf, len, "%s/sha256/%s", dir, digest + strlen("sha256:"));
}

static void round_trip(void **state)
{
	(void)state;
	char digest[CSTORE_DIGEST_MAX], err[256];
	uint8_t *data;
	size_t len;
	assert_int_equal(cstore_put(dir, "hello", 5, digest, err, sizeof(err)), 0);
	/* sha256("hello") */
	assert_string_equal(digest,
			    "sha256:"
			    "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
	assert_int_equal(cstore_get(dir, digest, &data, &len, err, sizeof(err)), 0);
	assert_int_equal(len, 5);
	assert_memory_equal(data, "hello", 5);
	free(data);
	/* the same content again: the same blob */
	assert_int_equal(cstore_put(dir, "hello", 5, digest, err, sizeof(err)), 0);
	assert_int_equal(cstore_put(dir, "", 0, digest, err, sizeof(err)), 0);
	assert_int_equal(cstore_get(dir, digest, &data, &len, err, sizeof(err)), 0);
	assert_int_equal(len, 0);
	free(data);
}

static void mismatch_refused(void **state)
{
	(void)state;
	char digest[CSTORE_DIGEST_MAX], err[512], path[256];
	uint8_t *data = (uint8_t *)"x";
	size_t len;
	assert_int_equal(cstore_put(dir, "version 1", 9, digest, err, sizeof(err)), 0);
	blob_path(digest, path, sizeof(path));
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("version 2", f);
	fclose(f);
	assert_int_equal(cstore_get(dir, digest, &data, &len, err, sizeof(err)), -1);
	assert_null(data);
	assert_non_null(strstr(err, "does not match its digest"));
	assert_non_null(strstr(err, path));
	/* putting the right content repairs it */
	assert_int_equal(cstore_put(dir, "version 1", 9, digest, err, sizeof(err)), 0);
	assert_int_equal(cstore_get(dir, digest, &data, &len, err, sizeof(err)), 0);
	free(data);
}

static void bad_digests(void **state)
{
	(void)state;
	static const char *const bad[] = {
	    "",
	    "sha256:",
	    "md5:2cf24dba5fb0a30e26e83b2ac5b9e29e",
	    "sha256:../../etc/passwd",
	    "sha256:2CF24DBA5FB0A30E26E83B2AC5B9E29E1B161E5C1FA7425E73043362938B9824",
	    "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b98240",
	};
	char err[256];
	uint8_t *data;
	size_t len;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(cstore_get(dir, bad[i], &data, &len, err, sizeof(err)), -1);
		assert_non_null(strstr(err, "malformed digest"));
	}
	assert_int_equal(
	    cstore_get(dir,
		       "sha256:"
		       "0000000000000000000000000000000000000000000000000000000000000000",
		       &data, &len, err, sizeof(err)),
	    -1);
	assert_non_null(strstr(err, "No such file"));
}

static void cluster_urls(void **state)
{
	(void)state;
	static const char *const good[] = {"etcd://127.0.0.1:2379", "etcd://a:1,b:2,[::1]:2379"};
	static const char *const bad[] = {"http://127.0.0.1:2379", "etcd://", "etcd://host",
					  "etcd://a:1,,b:2",
					  "etcd://a:1,b:2,c:3,d:4,e:5,f:6,g:7,h:8,i:9"};
	char err[256];
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct etcd *ec = etcd_new(good[i], err, sizeof(err));
		assert_non_null(ec);
		etcd_free(ec);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		assert_null(etcd_new(bad[i], err, sizeof(err)));
		assert_non_null(strstr(err, "--cluster"));
	}
}

static void keys(void **state)
{
	(void)state;
	json_t *r = etcd_prefix_range("/ember/functions/");
	size_t n;
	char *k = etcd_unb64(json_object_get(r, "key"), &n);
	char *e = etcd_unb64(json_object_get(r, "range_end"), &n);
	assert_string_equal(k, "/ember/functions/");
	assert_string_equal(e, "/ember/functions0"); /* '/' + 1: past every key under it */
	free(k);
	free(e);
	json_decref(r);
	json_t *s = json_string("not base64!");
	assert_null(etcd_unb64(s, &n));
	json_decref(s);
	s = json_string("12");
	assert_int_equal(etcd_int(s), 12);
	json_decref(s);
	assert_int_equal(etcd_int(NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(round_trip, make_dir, remove_dir),
	    cmocka_unit_test_setup_teardown(mismatch_refused, make_dir, remove_dir),
	    cmocka_unit_test_setup_teardown(bad_digests, make_dir, remove_dir),
	    cmocka_unit_test(cluster_urls),
	    cmocka_unit_test(keys),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
