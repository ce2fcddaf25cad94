/* GET /system/function/NAME/history[?seconds=N]: a function's last minutes, second by second. */
#include <stdlib.h>

#include "metrics/metrics.h"
#include "server/srv_core.h"
#include "server/srv_spec.h"
#include "server/srv_registry.h"
#include "server/srv_http.h"

enum MHD_Result h_history(struct srv *s, struct srv_req *r)
{
	const char *q = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "seconds");
	long seconds = HIST_SECONDS;
	if (q && *q) {
		char *end;
		seconds = strtol(q, &end, 10);
		if (*end || seconds < 0 || seconds > HIST_SECONDS)
			return srv_reply_error(r, 400, "seconds must be an integer from 0 to %d",
					       HIST_SECONDS);
	}
	struct srv_spec *sp = reg_spec(s, r->name);
	int known = sp != NULL;
	spec_put(sp);
	if (!known)
		return srv_reply_error(r, 404, "function '%s' not found", r->name);
	/* its series, by name as the metrics' (made when it was deployed) */
	struct srv_fn_metrics *f = metrics_fn(s->metrics, r->name);
	json_t *j = f ? hist_json(&f->hist, hist_now(), (unsigned)seconds) : NULL;
	if (!j)
		return srv_reply_error(r, 500, "out of memory");
	json_object_set_new(j, "name", json_string(r->name));
	return srv_reply_json(r, 200, j);
}
