#!/bin/sh
# The server's own cold path, through HTTP: the first request to a function the server unloaded
# after its keepAlive (1 s here; its snapshot on disk, every file of the state folder dropped
# from the page cache first) next to a request to a loaded function that needs a restore (no ready
# virtine: in a burst of 4, beyond its 2 ready ones), for hello (C), hello-js (Duktape) and json-py (CPython
# built in), and warm requests (one at a time, right after the cold one). Prints one line per
# function: the p50s in ms and cold/restore, and with JSON=1 a JSON object. Usage: sh bench/coldload.sh [BACKEND] (default kvm); N=5 samples of each.
# Needs curl and python3; about a minute.
set -eu
NAME=coldload.sh
B=${B:-build}
BACKEND=${1:-kvm}
N=${N:-5}
. "$(dirname "$0")/serve_lib.sh"
S=$tmp/state
serve_start "$BACKEND" "$S" "$tmp/log"

deploy() { # NAME JSON
	st=$(curl -s -u "$AUTH" -o "$tmp/resp" -w '%{http_code}' "$E/system/functions" -d "$2")
	[ "$st" = 202 ] || die "deploy $1: HTTP $st: $(cat "$tmp/resp")"
}
st=$(curl -s -u "$AUTH" -o "$tmp/resp" -w '%{http_code}' -X PUT \
	--data-binary @"$B/functions/hello" "$E/system/images/hello")
[ "$st" = 201 ] || die "upload hello: HTTP $st"
# unloaded after a second without an invocation (keepAlive)
KA='"ember": {"keepAlive": 1}'
deploy hello "{\"service\": \"hello\", \"image\": \"hello\", $KA}"
for f in hello-js:duktape:handler.js json-py:python-static:handler.py; do
	name=${f%%:*}
	rest=${f#*:}
	src=$(python3 -c 'import json, sys; print(json.dumps(open(sys.argv[1]).read()))' \
		"functions/$name/${rest#*:}")
	deploy "$name" "{\"service\": \"$name\", \"runtime\": \"${rest%%:*}\", \"code\": $src, $KA}"
done

# samples.py MODE NAME URL [N]: MODE restore: N bursts of 4 concurrent requests, the latency of those
# the server answered with a restore (X-Ember-Start); MODE cold: one request, its latency
cat >"$tmp/samples.py" <<'EOF'
import http.client, sys, threading, time
mode, name, url = sys.argv[1], sys.argv[2], sys.argv[3]
host = url.split("//")[1]
req = open("functions/%s/small.req" % name, "rb").read()
def one(out):
    c = http.client.HTTPConnection(host, timeout=60)
    t = time.monotonic()
    c.request("POST", "/function/" + name, body=req)
    r = c.getresponse()
    r.read()
    out.append(((time.monotonic() - t) * 1e3, r.getheader("X-Ember-Start"), r.status))
got = []
if mode in ("cold", "warm"):
    for _ in range(int(sys.argv[4]) if len(sys.argv) > 4 else 1):
        one(got)
else:
    for _ in range(int(sys.argv[4])):
        burst = []
        ts = [threading.Thread(target=one, args=(burst,)) for _ in range(4)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        got += burst
        time.sleep(0.2)  # the pool refilled (and shrinks back) between bursts
for ms, start, st in got:
    if st != 200:
        sys.exit("%s: HTTP %d" % (name, st))
    if start == mode:
        print("%.3f" % ms)
EOF
# drop: every file of the state folder out of the page cache (written back first)
drop() {
	find "$S" -type f -exec python3 -c 'import os, sys
for p in sys.argv[1:]:
    fd = os.open(p, os.O_RDONLY); os.fdatasync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)' {} +
}
p50() { sort -n | awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]; else print "nan"}'; }
for fn in hello hello-js json-py; do
	curl -s -o "$tmp/resp" --data-binary @"functions/$fn/small.req" "$E/function/$fn" -w "%{http_code}" | grep -q 200 ||
		die "$fn: the first request failed: $(cat "$tmp/resp")"
done
: >"$tmp/cold"
: >"$tmp/restore"
: >"$tmp/warm"
# loaded: the function is loaded (its status says)
loaded() { curl -sf -u "$AUTH" "$E/system/function/$1" | grep -qE '"loaded": *true'; }
unloaded() { ! loaded "$1"; }
k=0
while [ $k -lt "$N" ]; do
	for fn in hello hello-js json-py; do
		await "$fn to be unloaded (keepAlive)" unloaded $fn
	done
	drop
	for fn in hello hello-js json-py; do
		python3 "$tmp/samples.py" cold $fn "$E" | sed "s/^/$fn /" >>"$tmp/cold"
		# loaded now, its pool refilled: bursts of 4, of which those beyond the 2 ready
		# virtines restore
		python3 "$tmp/samples.py" warm $fn "$E" 3 | sed "s/^/$fn /" >>"$tmp/warm"
		sleep 0.5
		python3 "$tmp/samples.py" restore $fn "$E" 2 | sed "s/^/$fn /" >>"$tmp/restore"
	done
	k=$((k + 1))
done
grep -h 'REPORT.*Load Duration' "$tmp/log" | tail -n 3 >"$tmp/reports" || true
[ "${JSON:-0}" = 1 ] || echo "backend $BACKEND; p50 ms over $N cold starts (the function unloaded after keepAlive, the state folder dropped from the page cache) and the restores of 2 bursts of 4 requests after each (4 at once on 2 CPUs: a restore here shares the machine with 3 others)"
printf '%-10s %8s %8s %6s %6s %10s %8s\n' function cold restore n_cold n_rest cold/rest warm >"$tmp/table"
for fn in hello hello-js json-py; do
	c=$(awk -v f=$fn '$1 == f {print $2}' "$tmp/cold" | p50)
	r=$(awk -v f=$fn '$1 == f {print $2}' "$tmp/restore" | p50)
	w=$(awk -v f=$fn '$1 == f {print $2}' "$tmp/warm" | p50)
	nc=$(awk -v f=$fn '$1 == f' "$tmp/cold" | wc -l)
	nr=$(awk -v f=$fn '$1 == f' "$tmp/restore" | wc -l)
	printf '%-10s %8s %8s %6s %6s %10s %8s\n' $fn "$c" "$r" "$nc" "$nr" \
		"$(awk -v c="$c" -v r="$r" 'BEGIN {if (r > 0) printf "%.2f", c / r; else print "nan"}')" \
		"$w" >>"$tmp/table"
done
if [ "${JSON:-0}" = 1 ]; then
	awk 'NR > 1 {printf "%s\"%s\": {\"cold_p50_ms\": %s, \"restore_p50_ms\": %s, \"cold_over_restore\": %s, \"warm_p50_ms\": %s}", (NR > 2 ? ", " : "{"), $1, $2, $3, $6, $7} END {print "}"}' "$tmp/table"
else
	cat "$tmp/table"
	echo "the last REPORT lines of requests that waited for a load:"
	cat "$tmp/reports"
fi
serve_stop
