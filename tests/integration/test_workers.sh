#!/bin/sh
# ember serve --workers 3 end to end: the supervisor and its workers (their pids in
# /system/info), deployments that reach every worker, calls over fresh connections (spread over
# the workers by SO_REUSEPORT) that all answer and are all counted in /metrics and
# /system/functions, a function's virtines in its owner worker only, a secret's update seen by
# the worker running its users, a worker killed with SIGKILL under load (the others keep
# serving, only its calls fail, and it comes back with its functions), calls in flight in a
# worker that dies (502 when forwarded there), SIGTERM stopping everything with status 0; and without --workers, no supervisor.
# Run from the repository root (B, EMBER_BACKEND, SERVER_LOG as for test_server.sh). Every wait
# polls for the state it needs.
set -u
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
pick_backend
# shellcheck source=tests/integration/srv_lib.sh
. "$(dirname "$0")/srv_lib.sh"

# on any exit, a check failed or not: the supervisor first (it restarts no worker after), then
# its workers and the load this suite started, each by its pid
lpid='' cpids='' ipids=''
# shellcheck disable=SC2317 # run by the trap
wk_cleanup() {
	kids=
	[ -n "$pid" ] && kids=$(cat /proc/"$pid"/task/*/children 2>/dev/null)
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	for k in $kids $lpid $cpids $ipids; do kill -KILL "$k" 2>/dev/null; done
	srv_cleanup
}
trap wk_cleanup EXIT

N=3
FNS="hello-0 hello-1 hello-2 hello-3 hello-4 hello-5"
CALLS=10
J="python3 -c"

# workers: /system/info's workers, one line each: INDEX PID UP FUNCTIONS LOADED,...
workers() {
	curl -s -u "$AUTH" "$U/system/info" | $J 'import json, sys
for w in json.load(sys.stdin)["ember"].get("workers", []):
    print(w["index"], w["pid"], int(w["up"]), w.get("functions", -1), ",".join(w.get("loaded", [])) or "-")'
}
# worker_pid I: the pid of worker I, as /system/info says
worker_pid() { workers | awk -v i="$1" '$1 == i && $3 == 1 { print $2 }'; }
# shellcheck disable=SC2317 # run by await
all_know() { [ "$(workers | awk -v n="$1" '$4 == n' | wc -l)" = "$N" ]; }
# shellcheck disable=SC2317 # run by await
ready() { curl -sf "$U/readyz" -o /dev/null; }
# owner F: the worker that has F loaded ("" when none, "many" when more than one)
owner() {
	workers | awk -v f="$1" '{ n = split($5, l, ","); for (i = 1; i <= n; i++) if (l[i] == f) { o = o ? "many" : $1 } } END { print o }'
}
# metric F: gateway_function_invocation_total of F with code 200, summed over the workers
metric() {
	curl -s "$U/metrics" | awk -v f="$1" 'index($0, "gateway_function_invocation_total{function_name=\"" f "\",code=\"200\"} ") == 1 { print $2 }'
}

start --workers $N
check "ready: every worker loaded the (empty) state" await "readyz" ready
sup=$pid
workers >"$tmp/workers"
same "$N workers in /system/info, each up" "$N" "$(awk '$3 == 1' "$tmp/workers" | wc -l)"
nkids=0
for p in $(awk '{ print $2 }' "$tmp/workers"); do
	[ "$(awk '/^PPid:/ { print $2 }' "/proc/$p/status" 2>/dev/null)" = "$sup" ] && nkids=$((nkids + 1))
done
same "each worker is a child of the supervisor" "$N" "$nkids"

# --- deployments through whichever worker takes the connection reach every worker
expect "upload hello" 201 "$(http PUT /system/images/hello --data-binary @"$B/functions/hello")"
for f in $FNS; do
	expect "deploy $f" 202 "$(http POST /system/functions -d "{\"service\":\"$f\",\"image\":\"hello\"}")"
done
check "every worker knows the 6 deployments" await "6 deployments in every worker" all_know 6

# --- calls over fresh connections: all answer, all are counted whatever worker took them
good=0 fwd=0
: >"$tmp/via"
for f in $FNS; do
	i=0
	while [ $i -lt $CALLS ]; do
		code=$(http POST "/function/$f" -d "$f")
		[ "$code" = 200 ] && [ "$(cat "$tmp/body")" = "Hello, $f!" ] && good=$((good + 1))
		via=$(tr -d '\r' <"$tmp/headers" | awk -F': ' 'tolower($1) == "x-ember-worker" { print $2 }')
		[ -n "$via" ] && fwd=$((fwd + 1)) && echo "$f $via" >>"$tmp/via"
		i=$((i + 1))
	done
done
same "every call over a fresh connection answered" $((6 * CALLS)) "$good"
check "some calls were forwarded to another worker ($fwd)" [ "$fwd" -gt 0 ]
cnt_ok=0 list_ok=0
curl -s -u "$AUTH" "$U/system/functions" >"$tmp/list"
for f in $FNS; do
	[ "$(metric "$f")" = "$CALLS" ] && cnt_ok=$((cnt_ok + 1))
	n=$($J 'import json, sys
print([x["invocationCount"] for x in json.load(open(sys.argv[1])) if x["name"] == sys.argv[2]][0])' "$tmp/list" "$f")
	[ "$n" = "$CALLS" ] && list_ok=$((list_ok + 1))
done
same "/metrics counts every call of each function (summed over the workers)" 6 "$cnt_ok"
same "/system/functions counts every call of each function" 6 "$list_ok"
expect "/system/function/hello-0 sums its calls" 200 "$(http GET /system/function/hello-0)"
contains "... to $CALLS" "\"invocationCount\":$CALLS," "$tmp/body"

# --- placement: a function's virtines are in one worker, the one the others forward it to
placed=0 via_ok=0
for f in $FNS; do
	o=$(owner "$f")
	case $o in [0-9]*) placed=$((placed + 1)) ;; esac
	awk -v f="$f" -v o="$o" '$1 == f && $2 != o { bad = 1 } END { exit bad }' "$tmp/via" &&
		via_ok=$((via_ok + 1))
done
same "each function is loaded in exactly one worker" 6 "$placed"
same "each forwarded call ran in the worker that holds the function" 6 "$via_ok"

# --- the workers' internal route is theirs only: not through a forward whose path libcurl
# would squash ("/function/F/../../system/worker/sync" is F's call in the owner too), not on a
# worker's loopback socket without this run's key, even with the credentials
reached=0
for f in $FNS; do
	http POST "/function/$f/../../system/worker/sync?name=$f" --path-as-is -d x >/dev/null
	[ "$(cat "$tmp/body")" = OK ] && reached=$((reached + 1))
done
same "a forwarded call's path never reaches /system/worker/sync" 0 "$reached"
# the supervisor's loopback sockets other than the address: the workers' internal ones
ss -ltnpH 2>/dev/null | awk -v p=":$port" -v s="pid=$sup," 'index($0, s) && $4 !~ p"$" { print $4 }' >"$tmp/peers"
check "the workers' internal sockets are found ($(wc -l <"$tmp/peers"))" [ "$(wc -l <"$tmp/peers")" = "$N" ]
reached=0
for a in $(cat "$tmp/peers"); do
	c=$(curl -s -u "$AUTH" -o "$tmp/body" -w '%{http_code}' -X POST "http://$a/system/worker/sync?name=hello-0")
	[ "$c" = 200 ] && reached=$((reached + 1))
	c=$(curl -s -u "$AUTH" -H 'X-Ember-Worker-Key: 0123' -o "$tmp/body" -w '%{http_code}' \
		-X POST "http://$a/system/worker/sync?name=hello-0")
	[ "$c" = 200 ] && reached=$((reached + 1))
done
same "no internal socket takes /system/worker/sync without the key" 0 "$reached"

# --- a delete through any worker reaches every worker
expect "delete hello-5" 202 "$(http DELETE /system/functions -d '{"functionName":"hello-5"}')"
check "every worker forgot hello-5" await "5 deployments in every worker" all_know 5
expect "hello-5 is gone" 404 "$(http GET /system/function/hello-5)"

# --- ember.ready 0 reaches every worker: its owner restores a virtine for each call, those
# forwarded to it too, and keeps none
expect "deploy rare (ready 0)" 202 "$(http POST /system/functions \
	-d '{"service":"rare","image":"hello","ember":{"ready":0}}')"
check "every worker knows rare" await "6 deployments in every worker" all_know 6
good=0 warm=0 fwd=0 i=0
while [ $i -lt $CALLS ]; do
	code=$(http POST /function/rare -d rare)
	[ "$code" = 200 ] && [ "$(cat "$tmp/body")" = "Hello, rare!" ] && good=$((good + 1))
	grep -qi '^X-Ember-Start: warm' "$tmp/headers" && warm=$((warm + 1))
	grep -qi '^X-Ember-Worker:' "$tmp/headers" && fwd=$((fwd + 1))
	i=$((i + 1))
done
same "rare: every call answered" "$CALLS" "$good"
same "rare: no call found a ready virtine, the $fwd forwarded ones included" 0 "$warm"
expect "rare's status" 200 "$(http GET /system/function/rare)"
check "rare's status shows ready 0 and no ready virtine" python3 -c 'import json, sys
e = json.load(open(sys.argv[1]))["ember"]
sys.exit(e.get("ready") != 0 or e.get("pool", {}).get("ready", 0) != 0)' "$tmp/body"
expect "delete rare" 202 "$(http DELETE /system/functions -d '{"functionName":"rare"}')"
check "every worker forgot rare" await "5 deployments in every worker" all_know 5

# --- a secret's update through any worker reaches the worker that runs its users
expect "upload secretread" 201 "$(http PUT /system/images/sr --data-binary @"$G/secretread.musl")"
expect "create secret a" 201 "$(http POST /system/secrets -d '{"name":"a","value":"one"}')"
expect "deploy sra, given a (read at init)" 202 "$(http POST /system/functions \
	-d '{"service":"sra","image":"sr","secrets":["a"],"envVars":{"INIT_SECRET":"a"}}')"
expect "sra reads a at init" 200 "$(http POST /function/sra -d a)"
contains "... its first value" "init one" "$tmp/body"
expect "update secret a" 200 "$(http PUT /system/secrets -d '{"name":"a","value":"two"}')"
good=0 i=0
while [ $i -lt $CALLS ]; do
	[ "$(http POST /function/sra -d a)" = 200 ] && grep -q "^init two" "$tmp/body" && good=$((good + 1))
	i=$((i + 1))
done
same "every call after the update ran an init that read the new value" "$CALLS" "$good"
# a user kept warm is loaded again with the new value in its owner only (the others drop it)
expect "deploy srw, kept warm, given a" 202 "$(http POST /system/functions \
	-d '{"service":"srw","image":"sr","secrets":["a"],"envVars":{"INIT_SECRET":"a"},"ember":{"minWarm":1}}')"
# shellcheck disable=SC2317 # run by await
srw_placed() { case $(owner srw) in [0-9]*) return 0 ;; esac; return 1; }
check "srw is loaded in one worker" await "srw loaded" srw_placed
srw_owner=$(owner srw)
expect "update secret a again" 200 "$(http PUT /system/secrets -d '{"name":"a","value":"three"}')"
same "after the update srw is loaded in its owner only" "$srw_owner" "$(owner srw)"
expect "srw reads the new value" 200 "$(http POST /function/srw -d a)"
contains "... at init" "init three" "$tmp/body"
expect "delete srw" 202 "$(http DELETE /system/functions -d '{"functionName":"srw"}')"
expect "delete sra" 202 "$(http DELETE /system/functions -d '{"functionName":"sra"}')"
check "every worker forgot sra" await "5 deployments in every worker" all_know 5

# --- a worker killed with SIGKILL under load: the others serve, it comes back
victim=$(owner hello-0)
vpid=$(worker_pid "$victim")
"$B/bench/loadgen" -r 100 -c 6 -d 6 -e any -n 5 -T 20 "$U/function/hello" >"$tmp/load" &
lpid=$!
# shellcheck disable=SC2317 # run by await
load_running() { [ "$(metric hello-1)" -gt "$CALLS" ] 2>/dev/null; }
await "the load to start" load_running
kill -KILL "$vpid"
# shellcheck disable=SC2317 # run by await
replaced() { p=$(worker_pid "$victim"); [ -n "$p" ] && [ "$p" != "$vpid" ]; }
check "worker $victim (pid $vpid) was restarted with a new pid" await "a new worker $victim" replaced
wait "$lpid"
lpid=
echo "     | $(cat "$tmp/load")"
ld() { tr ' ' '\n' <"$tmp/load" | awk -F= -v k="$1" '$1 == k { print $2 }'; }
due=$(ld due) s2=$(ld s2xx) s4=$(ld s4xx)
check "the load was served: $s2 of $due calls answered 200" [ "$s2" -gt 0 ]
same "no call failed with a 4xx or a wrong body" 0 "$((s4 + $(ld mismatch)))"
failed=$((due - s2))
check "only the calls in the dying worker failed (502 or cut: $failed of $due)" \
	[ "$failed" -le $((due / 5)) ]
check "ready again" await "readyz" ready
good=0
for f in hello-0 hello-1 hello-2 hello-3 hello-4; do
	[ "$(http POST "/function/$f" -d x)" = 200 ] && good=$((good + 1))
done
same "every function answers after the restart" 5 "$good"
# shellcheck disable=SC2317 # run by await
back_home() { [ "$(owner hello-0)" = "$victim" ]; }
check "hello-0's virtines are back in worker $victim" await "hello-0 in worker $victim" back_home
check "the restarted worker knows every deployment" await "5 deployments" all_know 5

# --- calls in flight in a worker that dies: those another worker forwarded there fail with 502,
# its own connections are cut
expect "upload nap" 201 "$(http PUT /system/images/nap --data-binary @"$G/nap.musl")"
expect "deploy nap" 202 "$(http POST /system/functions \
	-d '{"service":"nap","image":"nap","ember":{"timeout":60}}')"
expect "nap answers" 200 "$(http POST /function/nap -d 1)"
cpids=
i=0
while [ $i -lt 10 ]; do
	curl -s -m 120 -o /dev/null -w '%{http_code}' -d 30000 "$U/function/nap" >"$tmp/nap.$i" 2>/dev/null &
	cpids="$cpids $!"
	i=$((i + 1))
done
# shellcheck disable=SC2317 # run by await
napping() {
	[ "$(http GET /system/function/nap)" = 200 ] && $J 'import json, sys
e = json.load(open(sys.argv[1]))["ember"]
sys.exit(e["inflight"] + e["queued"] != 10)' "$tmp/body"
}
await "10 naps in flight" napping
nap_owner=$(owner nap)
kill -KILL "$(worker_pid "$nap_owner")"
# shellcheck disable=SC2086
wait $cpids
cpids=
n502=$(cat "$tmp"/nap.* | grep -o 502 | wc -l)
ncut=$(cat "$tmp"/nap.* | grep -o 000 | wc -l)
echo "     | of 10 naps in flight in worker $nap_owner when it died: $n502 got 502, $ncut were cut ($(cat "$tmp"/nap.* | tr "\n" " "))"
same "each nap in flight failed with 502 (forwarded) or a cut connection (its own)" 10 $((n502 + ncut))
check "those another worker forwarded there got 502" [ "$n502" -gt 0 ]
check "ready again" await "readyz" ready

# --- a restarted worker takes the connections queued on its socket as a worker, never as a lone
# server: each of 15 /system/info sent at a kill (some wait for the restart) lists the workers
vpid=$(worker_pid 1)
kill -KILL "$vpid"
ipids=
i=0
while [ $i -lt 15 ]; do
	curl -s -m 60 -u "$AUTH" -o "$tmp/info.$i" "$U/system/info" &
	ipids="$ipids $!"
	i=$((i + 1))
done
# shellcheck disable=SC2086
wait $ipids
ipids=
lone=0
i=0
while [ $i -lt 15 ]; do
	grep -q '"workers"' "$tmp/info.$i" || lone=$((lone + 1))
	i=$((i + 1))
done
same "every /system/info around a restart answered for all the workers" 0 "$lone"
check "ready again" await "readyz" ready

# --- SIGTERM stops every worker; the supervisor exits 0
pids=$(workers | awk '{ print $2 }')
if stop; then ok "SIGTERM: exit status 0"; else bad "SIGTERM: exit status $rc"; fi
left=0
for p in $pids; do kill -0 "$p" 2>/dev/null && left=$((left + 1)); done
same "no worker is left" 0 "$left"

# --- without --workers: one process, as before (no supervisor, no workers in /system/info)
start
expect "one process: info" 200 "$(http GET /system/info)"
check "no workers in /system/info" sh -c "! grep -q '\"workers\"' '$tmp/body'"
expect "one process: the state's functions answer" 200 "$(http POST /function/hello-1 -d x)"
if stop; then ok "stop"; else bad "stop: $rc"; fi
finish
