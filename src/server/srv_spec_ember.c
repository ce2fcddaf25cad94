/* Deployments: the fields under "ember" (timeouts, keep-alive, warm capacity, limits of an
 * invocation, syscalls, sharing, auth) validated into a srv_spec and recorded in its doc. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "ember/abi.h"
#include "server/srv_core.h"
#include "server/srv_spec.h"

#define DEFAULT_TIMEOUT	   10.0
#define DEFAULT_KEEP_ALIVE 600.0 /* ten minutes */

/* The counts under "ember": integers from min to max, 0 when not given. cpus and threads are
 * ember_config's own (0 there is Ember's default, 1 vCPU and 256 threads), so 0 is no value of
 * theirs a deployment may give. */
static const struct {
	const char *key;
	unsigned min, max;
	size_t at; /* the srv_spec member it fills */
	const char *what;
} counts[] = {
    {"minWarm", 0, 64, offsetof(struct srv_spec, min_warm), ""},
    {"maxConcurrency", 0, 100000, offsetof(struct srv_spec, max_concurrency), ""},
    {"queue", 0, 100000, offsetof(struct srv_spec, queue), ""},
    {"cpus", 1, EMBER_CPUS_MAX, offsetof(struct srv_spec, cpus), ": the vCPUs of each virtine"},
    {"threads", 1, SRV_THREADS_MAX, offsetof(struct srv_spec, threads),
     ": the threads an invocation may have at once"},
    {"pids", 1, SRV_PIDS_MAX, offsetof(struct srv_spec, pids),
     ": the processes an invocation may have at once"},
};

static int count_fields(const json_t *e, struct srv_spec *sp, char *err, size_t errlen)
{
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		const json_t *v = spec_member(e, counts[i].key);
		if (!v)
			continue;
		if (!json_is_integer(v) || json_integer_value(v) < counts[i].min ||
		    json_integer_value(v) > counts[i].max)
			return snprintf(err, errlen, "ember.%s must be an integer from %u to %u%s",
					counts[i].key, counts[i].min, counts[i].max,
					counts[i].what),
			       -1;
		*(unsigned *)((char *)sp + counts[i].at) = (unsigned)json_integer_value(v);
	}
	return 0;
}

int spec_ember_fields(const json_t *in, struct srv_spec *sp, char *err, size_t errlen)
{
	const json_t *e = spec_member(in, "ember"), *v;
	sp->timeout_s = DEFAULT_TIMEOUT;
	sp->keep_alive_s = DEFAULT_KEEP_ALIVE;
	if (e && !json_is_object(e))
		return snprintf(err, errlen, "ember must be an object"), -1;
	if (e && (v = spec_member(e, "timeout")) &&
	    (srv_parse_duration(v, &sp->timeout_s) || sp->timeout_s <= 0 || sp->timeout_s > 86400))
		return snprintf(err, errlen,
				"ember.timeout must be a duration from 1ms to 24h, such as 10 or "
				"\"500ms\""),
		       -1;
	if (e && (v = spec_member(e, "keepAlive")) && srv_parse_duration(v, &sp->keep_alive_s))
		return snprintf(err, errlen,
				"ember.keepAlive must be a duration, such as 300 or \"5m\" (0: "
				"never unload)"),
		       -1;
	sp->syscalls[0] = 0; /* the server's default */
	if (e && (v = spec_member(e, "syscalls"))) {
		if (!json_is_string(v) ||
		    (strcmp(json_string_value(v), "trap") && strcmp(json_string_value(v), "guest")))
			return snprintf(err, errlen,
					"ember.syscalls must be \"trap\" or \"guest\""),
			       -1;
		strcpy(sp->syscalls, json_string_value(v));
	}
	if (e && (v = spec_member(e, "sharing"))) {
		const char *m = json_is_string(v) ? json_string_value(v) : "";
		if (strcmp(m, "upm") && strcmp(m, "off") && strcmp(m, "ksm"))
			return snprintf(err, errlen,
					"ember.sharing must be \"upm\", \"off\" or \"ksm\""),
			       -1;
		strcpy(sp->sharing, m);
	}
	const json_t *dom = e ? spec_member(e, "sharingDomain") : NULL,
		     *ns = spec_member(in, "namespace");
	if ((dom && (!json_is_string(dom) || !srv_name_ok(json_string_value(dom)))) ||
	    (!dom && ns && !json_is_string(ns)))
		return snprintf(
			   err, errlen,
			   "ember.sharingDomain (or namespace) must be a name: letters, digits, "
			   "'-', '_', '.', at most 63"),
		       -1;
	snprintf(sp->domain, sizeof(sp->domain), "%s",
		 dom					    ? json_string_value(dom)
		 : ns && srv_name_ok(json_string_value(ns)) ? json_string_value(ns)
							    : "default");
	if (e && (v = spec_member(e, "auth"))) {
		if (!json_is_boolean(v))
			return snprintf(err, errlen, "ember.auth must be true or false"), -1;
		sp->require_auth = json_is_true(v);
	}
	if (e && count_fields(e, sp, err, errlen))
		return -1;
	/* 0 alone for now: how many a function keeps otherwise follows its demand */
	if (e && (v = spec_member(e, "ready")) &&
	    (!json_is_integer(v) || json_integer_value(v) != 0 || sp->min_warm))
		return snprintf(err, errlen,
				"ember.ready must be 0, without ember.minWarm: no ready virtine "
				"is kept, each invocation restores its own (leave it out for "
				"ready virtines that follow demand)"),
		       -1;
	sp->no_ready = e && spec_member(e, "ready");
	json_t *out = json_pack(
	    "{s:f,s:i,s:i,s:i,s:f,s:b,s:s}", "timeout", sp->timeout_s, "minWarm", (int)sp->min_warm,
	    "maxConcurrency", (int)sp->max_concurrency, "queue", (int)sp->queue, "keepAlive",
	    sp->keep_alive_s, "auth", sp->require_auth, "sharingDomain", sp->domain);
	if (out && sp->syscalls[0])
		json_object_set_new(out, "syscalls", json_string(sp->syscalls));
	if (out && sp->sharing[0])
		json_object_set_new(out, "sharing", json_string(sp->sharing));
	/* recorded only when given, as syscalls and sharing: a deployment without them keeps
	 * following Ember's defaults */
	if (out && sp->cpus)
		json_object_set_new(out, "cpus", json_integer(sp->cpus));
	if (out && sp->threads)
		json_object_set_new(out, "threads", json_integer(sp->threads));
	if (out && sp->pids)
		json_object_set_new(out, "pids", json_integer(sp->pids));
	if (out && sp->no_ready)
		json_object_set_new(out, "ready", json_integer(0));
	return json_object_set_new(sp->doc, "ember", out);
}
