#!/bin/sh
# What forwarding costs in ember serve --workers: a warm hello called over one keep-alive
# connection, alternately for a function the worker holding the connection owns (direct) and
# one another worker owns (forwarded there over its internal socket and passed back whole).
# The client reads X-Ember-Worker (set on forwarded answers only) to tell them apart, and prints
# p50 and p99 of each, in µs, per backend (bench/backends.sh). N calls each (default 2000).
# Usage: sh bench/workers.sh [N]; B is the build folder (default build).
set -eu
NAME=workers
B=${B:-build}
N=${1:-2000}
. "$(dirname "$0")/serve_lib.sh"
. "$(dirname "$0")/backends.sh"
for be in $BACKENDS; do
	SERVE_ARGS="--workers 2" serve_start "$be" "$tmp/state-$be" "$tmp/log-$be"
	await "every worker" sh -c "curl -sf '$E/readyz' >/dev/null"
	curl -sf -u "$AUTH" -X PUT --data-binary @"$B/functions/hello" "$E/system/images/hello" >/dev/null
	for i in 0 1 2 3 4 5 6 7; do
		curl -sf -u "$AUTH" -d "{\"service\":\"hello-$i\",\"image\":\"hello\"}" \
			"$E/system/functions" >/dev/null
	done
	python3 - "$E" "$N" "$be" <<'PY'
import http.client, sys, time
url, n, be = sys.argv[1], int(sys.argv[2]), sys.argv[3]
host, port = url[len("http://"):].split(":")
c = http.client.HTTPConnection(host, int(port))
def call(f):
    t = time.perf_counter_ns()
    c.request("POST", "/function/" + f, body=b"x")
    r = c.getresponse()
    r.read()
    assert r.status == 200, r.status
    return (time.perf_counter_ns() - t) / 1000, r.getheader("X-Ember-Worker")
# one function this connection's worker owns and one it does not
direct = fwd = None
for i in range(8):
    f = "hello-%d" % i
    for _ in range(20):
        call(f)  # warm: loaded, its virtines ready
    if call(f)[1] is None:
        direct = direct or f
    else:
        fwd = fwd or f
if not direct or not fwd:
    sys.exit("%s: the 8 functions have the same owner: run again" % be)
lat = {direct: [], fwd: []}
for _ in range(n):
    for f in (direct, fwd):
        lat[f].append(call(f)[0])
def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p / 100))]
for name, f in (("direct", direct), ("forwarded", fwd)):
    print("%-6s %-9s (%s) n=%d p50_us=%.0f p99_us=%.0f" % (be, name, f, n, pct(lat[f], 50), pct(lat[f], 99)))
print("%-6s forwarding adds p50 %.0f us, p99 %.0f us" % (be, pct(lat[fwd], 50) - pct(lat[direct], 50), pct(lat[fwd], 99) - pct(lat[direct], 99)))
PY
	serve_stop
done
