/* The stack file (src/client/stack*.c, ember deploy -f): the input as stack.yml, read with libyaml
 * by cli_stack_load ($VARs substituted), next to a handler.js, a handler.lua and an
 * environment_file it may name; every function it accepts is turned into its deployment
 * (cli_deploy_source; lang c is left out: that runs a compiler) and given to the server's
 * spec_parse, as ember deploy would send it. An accepted function holds together, and a
 * deployment the server accepts deploys that function. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/stack.h"
#include "common.h"
#include "server/srv_core.h"
#include "server/srv_spec.h"

static int strings(const json_t *o)
{
	const char *k;
	json_t *v;
	if (!json_is_object(o))
		return 0;
	json_object_foreach((json_t *)o, k, v)
	{
		if (!json_is_string(v))
			return 0;
	}
	return 1;
}

FZ_UNTRACED static void check(const struct cli_stack_fn *fn)
{
	FZ_CHECK(srv_name_ok(fn->name), "function '%s'", fn->name);
	FZ_CHECK(fn->kind >= CLI_FN_JS && fn->kind <= CLI_FN_IMAGE, "kind %d", (int)fn->kind);
	FZ_CHECK(fn->kind != CLI_FN_IMAGE || fn->image[0], "%s: no lang and no image", fn->name);
	FZ_CHECK(strings(fn->env) && strings(fn->labels) && strings(fn->annotations),
		 "%s: environment, labels or annotations not strings", fn->name);
	FZ_CHECK(!fn->ember || json_is_object(fn->ember), "%s: ember settings", fn->name);
	FZ_CHECK(fn->line >= 1, "%s: line %d", fn->name, fn->line);
}

/* what ember deploy would send for fn, through the server's own check */
static void deploy(const struct cli_stack_fn *fn)
{
	struct cli_deploy_src src;
	struct srv_spec *sp;
	char why[512], err[SRV_ERR_MAX];
	/* files: would pack whatever folder the input names (/, say): not followed here */
	struct cli_stack_fn f = *fn;
	f.files[0] = 0;
	if (fn->kind == CLI_FN_C || cli_deploy_source(&f, &src, why, sizeof(why)))
		return;
	if (spec_parse(src.deployment, NULL, &sp, err, sizeof(err)) == 0) {
		FZ_CHECK(!strcmp(sp->name, fn->name), "deploys '%s' for '%s'", sp->name, fn->name);
		FZ_CHECK(json_equal(json_object_get(sp->doc, "envVars"), fn->env),
			 "%s: the server's environment is not the file's", fn->name);
		spec_put(sp);
	}
	cli_deploy_source_free(&src);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[8200];
	static FILE *quiet;
	const char *dir = fz_tmpdir();
	if (!quiet) {
		static const char env[] = "environment:\n  FROM_FILE: yes\n  B: \"2\"\n";
		fz_write(dir, "handler.js", "function handler(i) { return i; }\n", 35);
		fz_write(dir, "handler.lua", "return function(i) return i end\n", 32);
		fz_write(dir, "env.yml", env, sizeof(env) - 1);
		setenv("FUZZ_NAME", "from-env", 1);
		snprintf(path, sizeof(path), "%s/stack.yml", dir);
		quiet = fopen("/dev/null", "w");
		FZ_CHECK(quiet, "/dev/null");
	}
	fz_write(dir, "stack.yml", data, size);
	struct cli_stack st;
	char why[1024];
	/* its warnings (ignored keys) go nowhere; a sanitizer's report still reaches fd 2 */
	FILE *err = stderr;
	stderr = quiet;
	int rc = cli_stack_load(path, 1, &st, why, sizeof(why));
	stderr = err;
	if (rc) {
		FZ_CHECK(why[0], "refused without a reason");
		return 0;
	}
	FZ_CHECK(st.nfns > 0, "accepted without functions");
	for (size_t i = 0; i < st.nfns; i++) {
		check(&st.fns[i]);
		deploy(&st.fns[i]);
	}
	cli_stack_free(&st);
	return 0;
}
