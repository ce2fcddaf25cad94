/* ember serve's config file (--config FILE): a JSON object filling what the command line left
 * unset. */
#include <jansson.h>
#include <stdio.h>

#include "base/base.h"
#include "cli/serve.h"

static int config_size(json_t *cfg, const char *key, uint64_t *out)
{
	json_t *v = json_object_get(cfg, key);
	if (!v || *out)
		return 0;
	if (json_is_integer(v) && json_integer_value(v) > 0)
		return *out = (uint64_t)json_integer_value(v), 0;
	if (json_is_string(v) && !base_parse_size(json_string_value(v), out) && *out)
		return 0;
	fprintf(stderr, "ember serve: config: %s must be a size such as \"6M\"\n", key);
	return -1;
}

/* the config's count key, unless the command line set it */
static int config_count(json_t *cfg, const char *key, unsigned max, unsigned *out)
{
	json_t *v = json_object_get(cfg, key);
	if (!v || *out)
		return 0;
	if (json_is_integer(v) && json_integer_value(v) >= 1 && json_integer_value(v) <= max)
		return *out = (unsigned)json_integer_value(v), 0;
	fprintf(stderr, "ember serve: config: %s must be an integer from 1 to %u\n", key, max);
	return -1;
}

/* fills what the command line left unset; the strings stay in cfg */
int serve_read_config(const char *path, json_t **cfgp, struct srv_options *o, struct serve_host *h,
		      unsigned *workers)
{
	json_error_t e;
	json_t *cfg = json_load_file(path, JSON_REJECT_DUPLICATES, &e);
	if (!cfg || !json_is_object(cfg)) {
		fprintf(stderr, "ember serve: %s: %s\n", path, cfg ? "not a JSON object" : e.text);
		json_decref(cfg);
		return -1;
	}
	*cfgp = cfg;
	static const char *const strs[] = {"listen",  "state", "backend",  "runtimeDir",
					   "secrets", "seed",  "sharing",  "syscalls",
					   "cluster", "store", "advertise"};
	const char **dst[] = {&o->listen,      &o->state_dir, &o->backend,  &o->runtime_dir,
			      &o->secrets_dir, &o->seed_dir,  &o->sharing,  &o->syscalls,
			      &o->cluster,     &o->store_dir, &o->advertise};
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
		json_t *v = json_object_get(cfg, strs[i]);
		if (v && !json_is_string(v)) {
			fprintf(stderr, "ember serve: config: %s must be a string\n", strs[i]);
			return -1;
		}
		if (v && !*dst[i])
			*dst[i] = json_string_value(v);
	}
	json_t *auth = json_object_get(cfg, "auth"), *insecure = json_object_get(cfg, "insecure");
	if ((auth && !json_is_boolean(auth)) || (insecure && !json_is_boolean(insecure))) {
		fprintf(stderr, "ember serve: config: auth and insecure must be true or false\n");
		return -1;
	}
	o->no_auth |= json_is_false(auth);
	o->insecure |= json_is_true(insecure);
	json_t *rep = json_object_get(cfg, "report");
	json_t *lines = json_object_get(cfg, "logRingLines");
	if ((rep && !json_is_boolean(rep)) ||
	    (lines && (!json_is_integer(lines) || json_integer_value(lines) < 1 ||
		       json_integer_value(lines) > 1000000))) {
		fprintf(
		    stderr,
		    "ember serve: config: report must be true or false, logRingLines 1..1000000\n");
		return -1;
	}
	if (rep && json_is_false(rep))
		o->no_report = 1;
	if (lines && !o->log_ring_lines)
		o->log_ring_lines = (unsigned)json_integer_value(lines);
	json_t *user = json_object_get(cfg, "user"), *sandbox = json_object_get(cfg, "sandbox");
	if ((user && !json_is_string(user)) || (sandbox && !json_is_boolean(sandbox))) {
		fprintf(stderr,
			"ember serve: config: user must be a string, sandbox true or false\n");
		return -1;
	}
	if (user && !h->user)
		h->user = json_string_value(user);
	h->no_sandbox |= json_is_false(sandbox);
	json_t *ct = json_object_get(cfg, "connectionTimeout");
	json_t *st = json_object_get(cfg, "shutdownTimeout");
	if ((ct && (!json_is_integer(ct) || json_integer_value(ct) < 1 ||
		    json_integer_value(ct) > 3600)) ||
	    (st && (!json_is_number(st) || !(json_number_value(st) > 0)))) {
		fprintf(stderr, "ember serve: config: connectionTimeout must be 1..3600 seconds, "
				"shutdownTimeout a positive number of seconds\n");
		return -1;
	}
	json_t *ca = json_object_get(cfg, "costlyAfter");
	if (ca && (!json_is_integer(ca) || json_integer_value(ca) < 0 ||
		   json_integer_value(ca) > 3600000)) {
		fprintf(stderr, "ember serve: config: costlyAfter must be 0..3600000 ms\n");
		return -1;
	}
	if (ca && !o->costly_after_ms)
		o->costly_after_ms = json_integer_value(ca) ? (int)json_integer_value(ca) : -1;
	if (ct)
		o->conn_timeout_s = (unsigned)json_integer_value(ct);
	if (st)
		o->shutdown_s = json_number_value(st);
	return config_size(cfg, "maxBodySize", &o->max_body) ||
	       config_size(cfg, "maxImageSize", &o->max_image) ||
	       config_size(cfg, "memoryBudget", &o->memory_budget) ||
	       config_size(cfg, "logRingSize", &o->log_ring_bytes) ||
	       config_count(cfg, "asyncWorkers", MAX_ASYNC_WORKERS, &o->async_workers) ||
	       config_count(cfg, "asyncQueue", MAX_ASYNC_QUEUE, &o->async_queue) ||
	       config_count(cfg, "readTimeout", 3600, &o->read_timeout_s) ||
	       config_count(cfg, "maxConnections", MAX_CONNECTIONS, &o->max_conns) ||
	       config_count(cfg, "maxConnectionsPerAddress", MAX_CONNECTIONS,
			    &o->max_conns_per_addr) ||
	       config_count(cfg, "costlySlots", MAX_COSTLY_SLOTS, &o->costly_slots) ||
	       config_count(cfg, "costlyQueue", MAX_ASYNC_QUEUE, &o->costly_queue) ||
	       config_count(cfg, "workers", SERVE_WORKERS_MAX, workers);
}
