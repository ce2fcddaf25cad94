/* The names the public API gives its codes: load errors, outcomes, starts. */
#include "ember/ember.h"

static const struct {
	int rc;
	const char *name;
} error_names[] = {
    {0, "ok"},
    {EMBER_ERR, "error"},
    {EMBER_ERR_NOKVM, "nokvm"},
    {EMBER_ERR_IMAGE, "image"},
    {EMBER_ERR_CONFIG, "config"},
    {EMBER_ERR_INIT, "init"},
    {EMBER_ERR_NOMEM, "nomem"},
    {EMBER_ERR_IO, "io"},
};

const char *ember_error_name(int rc)
{
	for (size_t i = 0; i < sizeof(error_names) / sizeof(error_names[0]); i++)
		if (error_names[i].rc == rc)
			return error_names[i].name;
	return "unknown";
}

const char *ember_outcome_name(enum ember_outcome o)
{
	static const char *const names[] = {
	    [EMBER_OK] = "ok",	     [EMBER_CRASH] = "crash", [EMBER_TIMEOUT] = "timeout",
	    [EMBER_LIMIT] = "limit", [EMBER_ERROR] = "error",
	};
	return (unsigned)o < sizeof(names) / sizeof(names[0]) ? names[o] : "error";
}

const char *ember_start_name(enum ember_start st)
{
	static const char *const names[] = {
	    [EMBER_START_WARM] = "warm",
	    [EMBER_START_RESTORE] = "restore",
	    [EMBER_START_COLD] = "cold",
	    [EMBER_START_INIT] = "init",
	};
	return (unsigned)st < sizeof(names) / sizeof(names[0]) ? names[st] : "init";
}
