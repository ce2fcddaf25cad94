#!/bin/sh
# Status codes that say who failed, readiness and the gateway's metrics: 502 for a function's
# own failure (crash, output limit, non-zero exit) with X-Ember-Outcome, 504 for its timeout,
# 500 for Ember's; /readyz 503 until the deployments kept in the state folder are loaded, while
# /healthz already answers; gateway_function_invocation_started, http_requests_total and
# http_request_duration_seconds in /metrics. Run from the repository root.
set -u
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
pick_backend
# shellcheck source=tests/integration/srv_lib.sh
. "$(dirname "$0")/srv_lib.sh"

# outcome WHAT STATUS OUTCOME NAME: invokes NAME, checks the status and X-Ember-Outcome
outcome() {
	expect "$1: $2" "$2" "$(http POST "/function/$4" -d "${5:-x}")"
	contains "$1: X-Ember-Outcome $3" "X-Ember-Outcome: $3" "$tmp/headers"
}

# upload_deploy NAME GUEST [EMBER-JSON]
upload_deploy() {
	http PUT "/system/images/$1" --data-binary @"$B/guest/$2" >/dev/null
	expect "deploy $1" 202 "$(http POST /system/functions \
		-d "{\"service\":\"$1\",\"image\":\"$1\"${3:+,\"ember\":$3}}")"
}

start
check "readyz once nothing is left to load" await "readyz" curl -sf "$U/readyz" -o /dev/null
upload_deploy crashy crashy.musl
upload_deploy exit3 exitcode.musl
upload_deploy outbomb outbomb.musl
upload_deploy loop loop.musl '{"timeout":1}'
upload_deploy gate crashy.musl # its image becomes a FIFO for the readiness checks below
outcome "ok" 200 ok crashy fine
outcome "a crash" 502 crash crashy crash
contains "a crash says why" "page fault" "$tmp/body"
outcome "a crash again (the virtine is reset)" 502 crash crashy crash
outcome "fine after the crashes" 200 ok crashy fine
outcome "output past its limit" 502 limit outbomb
outcome "a timeout" 504 timeout loop
printf 'function handler(i) error("boom") end\n' >"$tmp/fail.lua"
python3 -c 'import json, sys
print(json.dumps({"service": "fail", "runtime": "lua", "code": open(sys.argv[1]).read()}))' \
	"$tmp/fail.lua" >"$tmp/fail.json"
expect "deploy a failing lua handler" 202 "$(http POST /system/functions -d @"$tmp/fail.json")"
outcome "a non-zero exit" 502 ok fail
contains "its exit code" "X-Ember-Exit-Code: 1" "$tmp/headers"

# --- metrics of the gateway
http GET /metrics >/dev/null
cp "$tmp/body" "$tmp/metrics"
contains "invocations started are counted" \
	'gateway_function_invocation_started{function_name="crashy"} 4' "$tmp/metrics"
contains "http_requests_total by route, method and status" \
	'http_requests_total{code="502",method="POST",path="/function/"} ' "$tmp/metrics"
contains "http_requests_total counts deployments" \
	'http_requests_total{code="202",method="POST",path="/system/functions"} 6' "$tmp/metrics"
contains "http_request_duration_seconds is a histogram" \
	'http_request_duration_seconds_bucket{code="200",method="POST",path="/function/",le="+Inf"}' \
	"$tmp/metrics"
expect "an unknown function: 404" 404 "$(http POST /function/nope -d x)"
http GET /metrics >/dev/null
if grep -q 'function_name="nope"' "$tmp/body"; then
	bad "an unknown name made a metrics series"
else
	ok "an unknown name makes no metrics series"
fi
contains "requests to no route are one series" \
	'http_requests_total{code="404",method="POST",path="/function/"} 1' "$tmp/body"
if stop; then ok "stop"; else bad "stop: $rc"; fi

# --- readiness: after the restart the server loads every deployment before it is ready. The
# image of one of them, gate, is a FIFO: its load waits in open() until the test opens the other
# end, so /readyz is seen before and after the loads without a race (gate's load then fails, as
# a FIFO is no executable, and is logged: ready means every deployment was loaded or tried).
img=$(ls "$tmp"/state/functions/gate.image.*) # its version's image, named by gate.json
rm -f "$img"
mkfifo "$img"
start
expect "healthz while the deployments load" 200 "$(NOAUTH=1 http GET /healthz)"
expect "readyz while the deployments load: 503" 503 "$(NOAUTH=1 http GET /readyz)"
contains "readyz says why" "loading" "$tmp/body"
exec 3<>"$img" # the server's open() returns
check "readyz after the loads" await "readyz" curl -sf "$U/readyz" -o /dev/null
exec 3>&-
contains "the failed load is logged" "cannot load gate" "$tmp/server.log"
expect "a restored function answers" 200 "$(http POST /function/crashy -d fine)"
if stop; then ok "stop after readiness"; else bad "stop after readiness: $rc"; fi
rm -f "$img"

# --- Ember's own failure: the lua runtime is gone after a restart
mkdir -p "$tmp/noruntimes"
EMBER_RUNTIME_DIR=$tmp/noruntimes start
expect "a function that cannot be loaded: 500" 500 "$(http POST /function/fail -d x)"
contains "500 says why" "runtime" "$tmp/body"
if stop; then ok "stop after the load failure"; else bad "stop after the load failure: $rc"; fi
finish
