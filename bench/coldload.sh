#!/bin/sh
# The server's own cold path, through HTTP: the first request to a function the server unloaded
# after its keepAlive (2 s here; its snapshot on disk, every file of the state folder dropped
# from the page cache first) next to requests to the same function loaded, each of which
# restores a virtine from its snapshot in memory on its own path: it is deployed with
# "ember": {"ready": 0} (no ready virtine kept, docs/server.md), so a restore is what every
# request to it pays, one at a time. For hello (C), hello-js (Duktape) and json-py (CPython
# built in), or the functions FUNCS names (also hello-node: Node.js, hello-python: CPython as
# Debian ships them); warm requests (one at a time) go to a twin deployed with the default pool. Prints
# one line per function: the p50s in ms and cold/restore, and with JSON=1 a JSON object.
# Usage: sh bench/coldload.sh [BACKEND] (default kvm); N=5 cold starts, each followed by R=3
# restores; REPORTS=FILE keeps the server's log (its REPORT lines) in FILE. Needs curl and python3;
# about a minute.
set -eu
NAME=coldload.sh
B=${B:-build}
BACKEND=${1:-kvm}
N=${N:-5}
FUNCS=${FUNCS:-hello hello-js json-py}
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
# NAME: unloaded after 2 s without an invocation (keepAlive), no ready virtine while loaded;
# NAME-w, its twin (its own snapshot: another environment), keeps the default pool
RD='"ember": {"keepAlive": 2, "ready": 0}'
TW='"envVars": {"TWIN": "1"}'
deploy hello "{\"service\": \"hello\", \"image\": \"hello\", $RD}"
deploy hello-w "{\"service\": \"hello-w\", \"image\": \"hello\", $TW}"
for f in hello-js:duktape:handler.js json-py:python-static:handler.py \
	hello-node:js:handler.js hello-python:python:handler.py; do
	name=${f%%:*}
	rest=${f#*:}
	case " $FUNCS " in *" $name "*) ;; *) continue ;; esac
	src=$(python3 -c 'import json, sys; print(json.dumps(open(sys.argv[1]).read()))' \
		"functions/$name/${rest#*:}")
	deploy "$name" "{\"service\": \"$name\", \"runtime\": \"${rest%%:*}\", \"code\": $src, $RD}"
	deploy "$name-w" "{\"service\": \"$name-w\", \"runtime\": \"${rest%%:*}\", \"code\": $src, $TW}"
done

# samples.py MODE NAME URL [N]: N requests one at a time, 0.2 s apart (default 1) to NAME (to
# NAME-w for warm), each answered 200 with X-Ember-Start MODE: their latencies, ms
cat >"$tmp/samples.py" <<'EOF'
import http.client, sys, time
mode, name, url = sys.argv[1], sys.argv[2], sys.argv[3]
host = url.split("//")[1]
req = open("functions/%s/small.req" % name, "rb").read()
target = name + "-w" if mode == "warm" else name
for i in range(int(sys.argv[4]) if len(sys.argv) > 4 else 1):
    if i:
        time.sleep(0.2)  # the last one's work after its response done (the virtine dropped,
        # a shell made again), as before a request to a function called rarely
    c = http.client.HTTPConnection(host, timeout=60)
    t = time.monotonic()
    c.request("POST", "/function/" + target, body=req)
    r = c.getresponse()
    r.read()
    ms = (time.monotonic() - t) * 1e3
    start = r.getheader("X-Ember-Start")
    if r.status != 200 or start != mode:
        sys.exit("%s: HTTP %d, X-Ember-Start %s (wanted %s)" % (target, r.status, start, mode))
    print("%.3f" % ms)
EOF
# drop: every file of the state folder out of the page cache (written back first)
drop() {
	find "$S" -type f -exec python3 -c 'import os, sys
for p in sys.argv[1:]:
    fd = os.open(p, os.O_RDONLY); os.fdatasync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)' {} +
}
# sample MODE NAME N: N samples.py latencies into $tmp/MODE, prefixed by NAME
sample() {
	python3 "$tmp/samples.py" "$1" "$2" "$E" "$3" >"$tmp/one" || die "$2: a $1 sample failed"
	sed "s/^/$2 /" "$tmp/one" >>"$tmp/$1"
}
p50() { sort -n | awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]; else print "nan"}'; }
for fn in $FUNCS $(for f in $FUNCS; do echo "$f-w"; done); do
	curl -s -o "$tmp/resp" --data-binary @"functions/${fn%-w}/small.req" "$E/function/$fn" -w "%{http_code}" | grep -q 200 ||
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
	for fn in $FUNCS; do
		await "$fn to be unloaded (keepAlive)" unloaded $fn
	done
	drop
	for fn in $FUNCS; do
		sample cold $fn 1
		# loaded now; the cold start's work after its response (the snapshot read whole
		# and checked, into the page store) done meanwhile, which a request would
		# otherwise wait for
		sleep 0.5
		sample restore $fn "${R:-3}"
		sample warm $fn 3
	done
	k=$((k + 1))
done
grep -h 'REPORT.*Load Duration' "$tmp/log" | tail -n 3 >"$tmp/reports" || true
[ -n "${REPORTS:-}" ] && cp "$tmp/log" "$REPORTS"
[ "${JSON:-0}" = 1 ] || echo "backend $BACKEND; p50 ms over $N cold starts (the function unloaded after keepAlive, the state folder dropped from the page cache) and ${R:-3} restores one at a time after each (ready 0: each request restores its own virtine)"
printf '%-10s %8s %8s %6s %6s %10s %8s\n' function cold restore n_cold n_rest cold/rest warm >"$tmp/table"
for fn in $FUNCS; do
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
