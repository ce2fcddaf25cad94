/* The deployment JSON (src/server/srv_spec.c): the input as a POST /system/functions body,
 * through jansson and spec_parse; an accepted deployment holds what the server relies on, and
 * its stored form (as srv_system.c writes it) is accepted again when the server restores it at
 * start (as srv_store.c reads it), to the same deployment: nothing deployed is lost. */
#include <math.h>
#include <string.h>

#include "common.h"
#include "server/srv_core.h"
#include "server/srv_spec.h"

FZ_UNTRACED static void check(const struct srv_spec *sp)
{
	FZ_CHECK(srv_name_ok(sp->name), "name '%s'", sp->name);
	FZ_CHECK(!sp->image[0] != !sp->runtime[0], "image '%s', runtime '%s'", sp->image,
		 sp->runtime);
	FZ_CHECK(!sp->image[0] || srv_name_ok(sp->image), "image '%s'", sp->image);
	FZ_CHECK(!sp->runtime[0] || (sp->code && sp->code_len > 0), "a runtime without code");
	FZ_CHECK(!sp->syscalls[0] || !strcmp(sp->syscalls, "trap") ||
		     !strcmp(sp->syscalls, "guest"),
		 "syscalls '%s'", sp->syscalls);
	FZ_CHECK(!sp->mem_bytes ||
		     (sp->mem_bytes >= EMBER_MEM_MIN && sp->mem_bytes <= EMBER_MEM_MAX),
		 "memory %lu", sp->mem_bytes);
	FZ_CHECK(isfinite(sp->timeout_s) && sp->timeout_s > 0 && sp->timeout_s <= 86400,
		 "timeout %g", sp->timeout_s);
	FZ_CHECK(isfinite(sp->keep_alive_s) && sp->keep_alive_s >= 0, "keepAlive %g",
		 sp->keep_alive_s);
	FZ_CHECK(sp->min_warm <= 64 && sp->max_concurrency <= 100000 && sp->queue <= 100000,
		 "counts %u %u %u", sp->min_warm, sp->max_concurrency, sp->queue);
	for (size_t i = 0; sp->envp[i]; i++) {
		const char *eq = strchr(sp->envp[i], '=');
		FZ_CHECK(eq && eq > sp->envp[i], "environment entry '%s'", sp->envp[i]);
	}
}

/* the same deployment: what the server uses of it */
FZ_UNTRACED static void same(const struct srv_spec *a, const struct srv_spec *b)
{
	FZ_CHECK(json_equal(a->doc, b->doc), "the restored document differs");
	FZ_CHECK(!strcmp(a->name, b->name) && !strcmp(a->image, b->image) &&
		     !strcmp(a->runtime, b->runtime) && !strcmp(a->syscalls, b->syscalls),
		 "names differ");
	FZ_CHECK(a->code_len == b->code_len &&
		     (!a->code_len || !memcmp(a->code, b->code, a->code_len)),
		 "code differs");
	FZ_CHECK(a->mem_bytes == b->mem_bytes && a->timeout_s == b->timeout_s &&
		     a->keep_alive_s == b->keep_alive_s && a->min_warm == b->min_warm &&
		     a->max_concurrency == b->max_concurrency && a->queue == b->queue &&
		     a->require_auth == b->require_auth,
		 "limits differ: timeout %.17g and %.17g, keepAlive %.17g and %.17g", a->timeout_s,
		 b->timeout_s, a->keep_alive_s, b->keep_alive_s);
	size_t i = 0;
	for (; a->envp[i] && b->envp[i]; i++)
		FZ_CHECK(!strcmp(a->envp[i], b->envp[i]), "environment differs");
	FZ_CHECK(!a->envp[i] && !b->envp[i], "environment differs");
	FZ_CHECK(!a->content_type == !b->content_type &&
		     (!a->content_type || !strcmp(a->content_type, b->content_type)),
		 "content type differs");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_error_t e;
	json_t *in = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &e);
	struct srv_spec *sp = NULL, *back = NULL;
	char err[SRV_ERR_MAX] = "";
	if (!in)
		return 0;
	if (spec_parse(in, NULL, &sp, err, sizeof(err))) {
		FZ_CHECK(err[0], "refused without a reason");
		json_decref(in);
		return 0;
	}
	check(sp);
	char *text = json_dumps(sp->doc, JSON_INDENT(1) | JSON_SORT_KEYS);
	FZ_CHECK(text, "the deployment cannot be stored");
	json_t *stored = json_loads(text, JSON_REJECT_DUPLICATES, &e);
	FZ_CHECK(stored, "the stored deployment is not JSON: %s", e.text);
	const char *created = json_string_value(json_object_get(stored, "createdAt"));
	FZ_CHECK(spec_parse(stored, created, &back, err, sizeof(err)) == 0,
		 "the stored deployment is refused at a restart: %s", err);
	same(sp, back);
	spec_put(back);
	json_decref(stored);
	free(text);
	spec_put(sp);
	json_decref(in);
	return 0;
}
