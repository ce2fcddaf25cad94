#!/bin/sh
# Function logs end to end: a function's stderr kept in its bounded ring and served by
# GET /system/logs (NDJSON, tail, since, instance, follow), a flood that the bound holds, long
# lines cut, bad UTF-8 made valid; one REPORT line per invocation in the server's log.
# Run from the repository root; B is the build directory (default build); EMBER_BACKEND is
# kvm, ptrace or auto (the default). SERVER_LOG=FILE keeps the server's log. Every wait polls,
# bounded by AWAIT_POLLS polls 0.1 s apart (default 600).
set -u
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
pick_backend
# shellcheck source=tests/integration/srv_lib.sh
. "$(dirname "$0")/srv_lib.sh"
follower=
# shellcheck disable=SC2317 # run by the trap
logs_cleanup() {
	[ -n "$follower" ] && kill -KILL "$follower" 2>/dev/null
	srv_cleanup
}
trap logs_cleanup EXIT

RING_BYTES=65536
RING_LINES=300
printf '{"shutdownTimeout": 600, "logRingSize": %s, "logRingLines": %s}\n' \
	$RING_BYTES $RING_LINES >"$tmp/serve.json"
SERVE_ARGS="--config $tmp/serve.json"

# shellcheck disable=SC2317 # run by await
gone() {
	! kill -0 "$1" 2>/dev/null
}

# follow QUERY: GET /system/logs?QUERY with the test's credentials in the background, the
# stream into $tmp/follow, curl's pid in $follower
follow() {
	: >"$tmp/follow"
	curl -sN -u "$AUTH" "$U/system/logs?$1" >"$tmp/follow" 2>/dev/null &
	follower=$!
}

# logs QUERY: GET /system/logs?QUERY into $tmp/logs; the status code
logs() {
	http GET "/system/logs?$1"
	cp "$tmp/body" "$tmp/logs"
}

# call NAME ID DATA: invokes NAME with X-Call-Id ID and DATA as the body (curl's --data-binary
# argument); the status code; the call ids the server answered with are kept in $tmp/ids
call() {
	curl -s -o "$tmp/body" -D "$tmp/headers" -w '%{http_code}' -H "X-Call-Id: $2" \
		--data-binary "$3" "$U/function/$1"
	tr -d '\r' <"$tmp/headers" | sed -n 's/^X-Call-Id: //p' >>"$tmp/ids"
}

# lines PYEXPR WHAT: evaluates PYEXPR with L = the NDJSON lines of $tmp/logs, each parsed
lines() {
	if python3 -c '
import json, sys
L = [json.loads(x) for x in open(sys.argv[2], encoding="utf-8").read().split("\n") if x]
sys.exit(0 if eval(sys.argv[1]) else 1)' "$1" "$tmp/logs" 2>"$tmp/pyerr"; then
		ok "$2"
	else
		bad "$2: $(head -c 400 "$tmp/logs" | tr '\n' '|') $(tail -n 1 "$tmp/pyerr")"
	fi
}

# the REPORT lines of the server's log
reports() {
	grep 'REPORT RequestId: ' "$tmp/server.log"
}

start
expect "upload logger" 201 "$(http PUT /system/images/logger --data-binary @"$G/logger.musl")"
expect "upload crash_null" 201 "$(http PUT /system/images/crash_null --data-binary @"$G/crash_null.musl")"
expect "deploy logger" 202 "$(http POST /system/functions -d '{"service":"logger","image":"logger"}')"

# --- the route's errors
expect "logs without credentials: 401" 401 "$(NOAUTH=1 logs name=logger)"
expect "logs of an unknown function: 404" 404 "$(logs name=nope)"
has "$tmp/logs" '"error":.*nope' "404 names the function"
expect "logs without a name: 400" 400 "$(logs tail=3)"
expect "logs with a bad name: 400" 400 "$(logs name=..)"
expect "tail that is not a number: 422" 422 "$(logs 'name=logger&tail=many')"
expect "since that is not a time: 422" 422 "$(logs 'name=logger&since=yesterday')"
expect "logs before any invocation" 200 "$(logs name=logger)"
check "... are empty" test ! -s "$tmp/logs"
has "$tmp/headers" '^Content-Type: application/x-ndjson' "Content-Type application/x-ndjson"

# --- three invocations, two lines each, in order with OpenFaaS's fields
for i in 1 2 3; do
	expect "invoke logger call-$i" 200 "$(call logger "call-$i" "call-$i line a
call-$i line b
")"
done
has "$tmp/body" '^logged 28 bytes$' "the function's stdout is still the response"
expect "logs" 200 "$(logs name=logger)"
lines '[x["text"] for x in L] == ["call-%d line %s" % (i, c) for i in (1, 2, 3) for c in "ab"]' \
	"the six lines in order"
lines 'all(sorted(x) == ["instance", "name", "namespace", "text", "timestamp"] for x in L)' \
	"each line has name, namespace, instance, timestamp, text"
lines 'all(x["name"] == "logger" and x["namespace"] == "" for x in L)' "name and namespace"
lines '[x["instance"] for x in L] == ["call-%d" % i for i in (1, 1, 2, 2, 3, 3)]' \
	"instance is the call id"
lines 'all(__import__("re").fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z", x["timestamp"]) for x in L)' \
	"timestamps are RFC 3339 with nanoseconds, UTC"
lines '[x["timestamp"] for x in L] == sorted(set(x["timestamp"] for x in L))' \
	"timestamps increase"
lines 'abs(__import__("datetime").datetime.strptime(L[0]["timestamp"][:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=__import__("datetime").timezone.utc).timestamp() - __import__("time").time()) < 600' \
	"timestamps are the time of day"
third=$(sed -n '3s/.*"timestamp":"\([^"]*\)".*/\1/p' "$tmp/logs")

# --- tail, instance, since
expect "tail=2" 200 "$(logs 'name=logger&tail=2')"
lines '[x["text"] for x in L] == ["call-3 line a", "call-3 line b"]' "tail=2: the last two"
expect "tail=0" 200 "$(logs 'name=logger&tail=0')"
lines 'len(L) == 6' "tail=0: all, as OpenFaaS has it"
expect "tail=100" 200 "$(logs 'name=logger&tail=100')"
lines 'len(L) == 6' "tail past the start: all"
expect "instance=call-2" 200 "$(logs 'name=logger&instance=call-2')"
lines '[x["text"] for x in L] == ["call-2 line a", "call-2 line b"]' "instance: one call's lines"
expect "since the third line" 200 "$(logs "name=logger&since=$third")"
lines '[x["text"] for x in L] == ["call-2 line a", "call-2 line b", "call-3 line a", "call-3 line b"]' \
	"since: that line and the later ones"
expect "since and tail" 200 "$(logs "name=logger&since=$third&tail=3")"
lines '[x["text"] for x in L] == ["call-2 line b", "call-3 line a", "call-3 line b"]' \
	"since and tail together"
expect "since an hour ahead, with an offset" 200 "$(logs "name=logger&since=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%S)%2B00:00")"
lines 'len(L) == 0' "since in the future: nothing"
# times past what nanoseconds since 1970 hold in 64 bits (the year 2262): still the future
expect "since the year 9999" 200 "$(logs 'name=logger&since=9999-01-01T00:00:00Z')"
lines 'len(L) == 0' "since 9999: nothing"
expect "since 253402300800 in Unix seconds" 200 "$(logs 'name=logger&since=253402300800')"
lines 'len(L) == 0' "since 253402300800: nothing"
expect "since in Unix seconds" 200 "$(logs "name=logger&since=$(($(date +%s) - 600))")"
lines 'len(L) == 6' "since ten minutes ago in Unix seconds: all"
expect "since the epoch, RFC 3339" 200 "$(logs 'name=logger&since=1970-01-01T00:00:00Z')"
lines 'len(L) == 6' "since 1970: all"

# --- long lines are cut and marked; bad UTF-8 and control characters still make JSON
expect "a line of 20000 bytes" 200 "$(call logger long-1 long:20000)"
expect "logs of long-1" 200 "$(logs 'name=logger&instance=long-1')"
lines 'len(L) == 2 and L[1]["text"] == "after"' "the cut line and the next"
lines 'L[0]["text"].startswith("y" * 8000) and L[0]["text"].endswith(" [... %d bytes cut]" % (20000 - len(L[0]["text"].split(" ")[0])))' \
	"the long line keeps its start and says how much was cut"
lines 'len(L[0]["text"]) < 8300' "the cut line is at most 8 KiB and the mark"
printf 'bad \377\376 utf-8\ttab\r\n\033[31mred\n' >"$tmp/odd"
expect "bytes that are not UTF-8" 200 "$(call logger odd-1 @"$tmp/odd")"
expect "logs of odd-1" 200 "$(logs 'name=logger&instance=odd-1')"
lines '[x["text"] for x in L] == ["bad \ufffd\ufffd utf-8\ttab", "\x1b[31mred"]' \
	"bad bytes become U+FFFD, CR LF ends a line, escapes survive"

# --- follow: a line produced after the request started comes down the open response
follow 'name=logger&follow=true&tail=1'
await "the follower to get the last line" grep -q '"instance":"odd-1"' "$tmp/follow"
expect "invoke while followed" 200 "$(call logger followed-1 'new line')"
await "the new line to reach the follower" grep -q '"text":"new line"' "$tmp/follow"
check "the follower is still connected" kill -0 "$follower"
cp "$tmp/follow" "$tmp/logs"
lines '[x["instance"] for x in L] == ["odd-1", "followed-1"]' "follow: tail=1, then the new line"
kill "$follower"
{ wait "$follower"; } 2>/dev/null
follower=

# a follower of a function that is deleted: its stream ends, and the ring goes with it
expect "deploy logger2" 202 "$(http POST /system/functions -d '{"service":"logger2","image":"logger"}')"
expect "invoke logger2" 200 "$(call logger2 l2-1 'before delete')"
follow 'name=logger2&follow=1'
await "the logger2 follower to start" grep -q 'before delete' "$tmp/follow"
expect "delete logger2" 202 "$(http DELETE /system/functions -d '{"functionName":"logger2"}')"
await "the follower of a deleted function to end" gone "$follower"
{ wait "$follower"; } 2>/dev/null
follower=
expect "logs of a deleted function: 404" 404 "$(logs name=logger2)"
expect "deploy logger2 again" 202 "$(http POST /system/functions -d '{"service":"logger2","image":"logger"}')"
expect "logs of the new logger2" 200 "$(logs name=logger2)"
check "... start empty" test ! -s "$tmp/logs"

# --- a flood: the ring holds its bound, and so does the server's memory
rss() {
	curl -s "$U/metrics" | sed -n 's/^process_resident_memory_bytes //p'
}
# floods N: N floods of 2 MiB on one connection (one server thread, so one malloc arena)
floods() {
	f_n=$1
	set --
	while [ $# -lt "$f_n" ]; do
		set -- "$@" "$U/function/logger"
	done
	curl -s -H 'X-Call-Id: flood' --data-binary flood:2048 "$@" >"$tmp/floods"
	for _ in "$@"; do echo flood >>"$tmp/ids"; done
}
floods 3
before=$(rss)
floods 30
after=$(rss)
check "30 floods of 2 MiB answered" test "$(grep -c '^flooded 2048 KiB$' "$tmp/floods")" = 30
expect "logs after the flood" 200 "$(logs name=logger)"
lines "len(L) <= $RING_LINES" "at most logRingLines ($RING_LINES) lines kept"
lines "sum(len(x['text'].encode()) + len(x['instance']) for x in L) <= $RING_BYTES" \
	"at most logRingSize ($RING_BYTES) bytes of text kept"
lines 'L[-1]["text"].startswith("flood 016384 ") and L[-2]["text"].startswith("flood 016383 ")' \
	"the newest lines are kept, in order"
echo "     resident memory: $before bytes before, $after after 30 more floods"
check "the server's memory grew by less than 16 MiB over 60 MiB of stderr" \
	test $((after - before)) -lt $((16 << 20))

# --- REPORT: one line per invocation, named by its call id
expect "deploy crash_null" 202 "$(http POST /system/functions -d '{"service":"crash","image":"crash_null"}')"
call crash crash-1 x >/dev/null
expect "deploy a function with keepAlive 1" 202 "$(http POST /system/functions -d '{"service":"idle","image":"logger","ember":{"keepAlive":1}}')"
# shellcheck disable=SC2317 # run by await
idle_unloaded() {
	http GET /system/function/idle >/dev/null && grep -q '"loaded":false' "$tmp/body"
}
await "idle to be unloaded" idle_unloaded
expect "invoke idle, cold" 200 "$(call idle cold-1 'cold')"
has "$tmp/headers" 'X-Ember-Start: cold' "idle started cold"
# the server writes its log from a thread of its own, within about a millisecond: wait for
# the last invocation's line
# shellcheck disable=SC2317 # run by await
all_reported() { [ "$(reports | wc -l)" -ge "$(wc -l <"$tmp/ids")" ]; }
await "a REPORT line for each invocation" all_reported
reports >"$tmp/reports"
tab=$(printf '\t')
sed -n "s/.*REPORT RequestId: \([^$tab]*\)$tab.*/\1/p" "$tmp/reports" | sort >"$tmp/report-ids"
sort "$tmp/ids" >"$tmp/call-ids"
if cmp -s "$tmp/report-ids" "$tmp/call-ids"; then
	ok "one REPORT per invocation, by the X-Call-Id it answered ($(wc -l <"$tmp/call-ids") of them)"
else
	bad "REPORT ids differ from the X-Call-Ids: $(diff "$tmp/call-ids" "$tmp/report-ids" | head -5 | tr '\n' '|')"
fi
has "$tmp/reports" "^ember serve: REPORT RequestId: call-1${tab}Function: logger${tab}Duration: [0-9]+\.[0-9]{3} ms${tab}Exits: [1-9][0-9]*${tab}Pages Written: [0-9]+${tab}Memory Size: 64 MB${tab}Max Memory Used: [1-9][0-9]* KiB${tab}Outcome: ok${tab}Exit Code: 0$" \
	"a warm REPORT line, field by field"
has "$tmp/reports" "RequestId: crash-1${tab}Function: crash${tab}.*Outcome: crash${tab}Exit Code: 139$" \
	"a crash's REPORT: outcome crash, exit code 139"
has "$tmp/reports" "RequestId: cold-1${tab}Function: idle${tab}Duration: [0-9.]+ ms${tab}Init Duration: [0-9]+\.[0-9]{3} ms${tab}Exits" \
	"a cold start's REPORT has Init Duration"
check "a warm one has none" sh -c "! grep 'RequestId: call-1' '$tmp/reports' | grep -q 'Init Duration'"

# --- shutdown does not wait for a follower; --no-report; the ring is not kept over a restart
follow 'name=logger&follow=True&tail=1'
await "a follower before the shutdown" grep -q flood "$tmp/follow"
kill -TERM "$pid"
await "the server to stop with a follower attached" gone "$pid"
wait "$pid"
rc=$?
pid=
expect "SIGTERM with a follower: exit status 0" 0 "$rc"
await "the follower to end with the server" gone "$follower"
{ wait "$follower"; } 2>/dev/null
follower=
start --no-report
reports >"$tmp/reports.before"
expect "invoke with --no-report" 200 "$(call logger quiet-1 quiet)"
expect "logs after a restart" 200 "$(logs name=logger)"
lines '[x["instance"] for x in L] == ["quiet-1"]' "after a restart, only the new lines"
check "--no-report: no REPORT line" test "$(reports | wc -l)" = "$(wc -l <"$tmp/reports.before")"
kill -TERM "$pid"
wait "$pid"
pid=
finish
