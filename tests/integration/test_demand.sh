#!/bin/sh
# Warm capacity that follows demand: under N concurrent clients (N requests at once, each a
# nap, so that all are in flight together) the function's ready virtines grow to at least N,
# and a second round of N finds them ready (no restore on the request path); the capacity
# shrinks again after a short keepAlive while a trickle of requests keeps the function loaded;
# the start of each invocation is named (X-Ember-Start, ember_starts_total, ember run --stats); a small memory
# budget is never exceeded (the metrics' peak) and every request still succeeds.
# Run from the repository root.
set -u
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
pick_backend
# shellcheck source=tests/integration/srv_lib.sh
. "$(dirname "$0")/srv_lib.sh"
N=${DEMAND_N:-6}
# the naps are long but cost no CPU: not costly functions, which would run one at a time
SERVE_ARGS="--costly-after 0"

# pool NAME FIELD: the field of the function's ember.pool in its status (empty when unloaded)
pool() {
	http GET "/system/function/$1" >/dev/null
	python3 -c 'import json, sys
p = json.load(open(sys.argv[1])).get("ember", {}).get("pool")
print(p[sys.argv[2]] if p else "")' "$tmp/body" "$2"
}

# shellcheck disable=SC2317 # run by await
pool_at_least() { # NAME FIELD MIN
	v=$(pool "$1" "$2")
	[ -n "$v" ] && [ "$v" -ge "$3" ]
}

# round NAME COUNT BODY: COUNT requests at once, each on its own connection; the number of
# 200 answers lands in $round_ok and their X-Ember-Start values in $tmp/starts
round() {
	i=0
	pids=
	while [ $i -lt "$2" ]; do
		curl -s -o "$tmp/r$i.body" -D "$tmp/r$i.h" -w '%{http_code}\n' -d "$3" \
			"$U/function/$1" >"$tmp/r$i.code" &
		pids="$pids $!"
		i=$((i + 1))
	done
	for p in $pids; do wait "$p"; done # not the server's
	round_ok=$(cat "$tmp"/r*.code | grep -c '^200$')
	cat "$tmp"/r*.h | grep -i '^X-Ember-Start:' | tr -d '\r' >"$tmp/starts"
	rm -f "$tmp"/r*.code "$tmp"/r*.h "$tmp"/r*.body
}

# metric NAME: its value in /metrics (labels included in NAME), empty when absent
metric() {
	curl -s "$U/metrics" | awk -v k="$1" '$1 == k {print $2}'
}

# --- ember run --stats names each start
for how in "warm" "init --no-snapshot" "cold --state $tmp/rstate --cold"; do
	# shellcheck disable=SC2086 # the words of $how: the start wanted, then run's options
	set -- $how
	want=$1
	shift
	printf x | "$E" run --backend "$EMBER_BACKEND" --stats "$@" "$G/hello.musl" \
		>/dev/null 2>"$tmp/err"
	last=$(tail -n 1 "$tmp/err")
	# shellcheck disable=SC2016 # the inner shell expands them
	check "ember run ${*:-(default)}: the invocation's start is $want" \
		sh -c 'case $1 in *"\"start\":\"$2\""*) ;; *) exit 1 ;; esac' - "$last" "$want"
	# shellcheck disable=SC2016
	check "ember run ${*:-(default)}: --stats' starts counts it" \
		sh -c 'case $1 in *"\"starts\":{"*"\"$2\":1"*) ;; *) exit 1 ;; esac' - "$last" "$want"
done

start
expect "upload nap" 201 "$(http PUT /system/images/nap --data-binary @"$G/nap.musl")"
expect "deploy nap" 202 "$(http POST /system/functions -d '{"service":"nap","image":"nap"}')"
check "a new function keeps the default pool of 2 ready" test "$(pool nap ready)" = 2
check "its target is 2" test "$(pool nap target)" = 2
expect "one request" 200 "$(http POST /function/nap -d '0 one')" "napped 0 one"
contains "a ready virtine is a warm start" "X-Ember-Start: warm" "$tmp/headers"

round nap "$N" "400 first"
check "round 1: all $N answered" test "$round_ok" = "$N"
# how many of the requests past the pool's 2 restored on their own path depends on how fast the
# refiller is; whatever it is, the headers and the status count the same ones
r1=$(pool nap restores)
named=$(grep -c 'X-Ember-Start: restore' "$tmp/starts")
check "round 1: the restores named in X-Ember-Start ($named) are those counted ($r1)" \
	test "$named" = "$r1"
check "round 1: every other start was warm" \
	test "$(grep -c 'X-Ember-Start: warm' "$tmp/starts")" = "$((N - r1))"
await "the ready virtines to grow to at least $N" pool_at_least nap ready "$N"
check "the target follows the peak of $N (with headroom)" pool_at_least nap target "$((N + 1))"
check "refills were made off the request path" pool_at_least nap refills 1
round nap "$N" "400 second"
check "round 2: all $N answered" test "$round_ok" = "$N"
check "round 2: every start was warm" test "$(grep -c 'warm' "$tmp/starts")" = "$N"
check "round 2: no restore on the request path ($r1 before, $(pool nap restores) after)" \
	test "$(pool nap restores)" = "$r1"
check "the metrics count warm starts" \
	test "$(metric 'ember_starts_total{function_name="nap",start="warm"}')" = "$((1 + N - r1 + N))"
check "the metrics count restores apart" \
	test "$(metric 'ember_starts_total{function_name="nap",start="restore"}')" = "$r1"
check "the metrics show the pool's restores" \
	test "$(metric 'ember_pool_restores_total{function_name="nap"}')" = "$r1"
check "the pool's ready virtines are in the metrics" \
	test "$(metric 'ember_pool_ready{function_name="nap"}')" -ge "$N"
check "the old ember_cold_starts_total still counts what was not warm" \
	test "$(metric 'ember_cold_starts_total{function_name="nap"}')" = "$r1"

# --- shrinking: a short keepAlive, one request at a time keeping the function loaded
expect "deploy short" 202 "$(http POST /system/functions \
	-d '{"service":"short","image":"nap","ember":{"keepAlive":"1s"}}')"
round short "$N" "300 burst"
check "short: all $N answered" test "$round_ok" = "$N"
await "short's ready virtines to grow to $N" pool_at_least short ready "$N"
# shellcheck disable=SC2317 # run by await
shrunk() {
	curl -s -o /dev/null -d '0 trickle' "$U/function/short"
	v=$(pool short ready)
	[ -n "$v" ] && [ "$v" -le 2 ]
}
await "short's capacity to shrink back to 2 after its keepAlive" shrunk
check "short is still loaded (the trickle kept it)" test -n "$(pool short ready)"
check "the trims are counted" pool_at_least short trims 1
# shellcheck disable=SC2317 # run by await
target_floor() { [ "$(pool short target)" = 2 ]; }
# the trickle's own calls may hold the target above the floor for a moment: a condition, not a
# snapshot
await "its target to come back to the floor of 2" target_floor &&
	ok "its target is back at the floor of 2"

# --- ember.ready 0: loaded, its snapshot in memory, no ready virtine; each request restores
expect "ready 1 is refused" 400 "$(http POST /system/functions \
	-d '{"service":"rare","image":"nap","ember":{"ready":1}}')"
contains "with what ready must be" "ember.ready must be 0" "$tmp/body"
expect "ready 0 with minWarm is refused" 400 "$(http POST /system/functions \
	-d '{"service":"rare","image":"nap","ember":{"ready":0,"minWarm":3}}')"
contains "naming minWarm" "without ember.minWarm" "$tmp/body"
expect "deploy rare (ready 0)" 202 "$(http POST /system/functions \
	-d '{"service":"rare","image":"nap","ember":{"ready":0}}')"
http GET /system/function/rare >/dev/null
check "its status shows ready 0" python3 -c 'import json, sys
sys.exit(json.load(open(sys.argv[1]))["ember"].get("ready") != 0)' "$tmp/body"
check "rare is loaded with no ready virtine" test "$(pool rare ready)" = 0
check "and a target of none" test "$(pool rare target)" = 0
# (its snapshot is nap's, on disk already: its first request starts cold from it)
expect "rare: a first request" 200 "$(http POST /function/rare -d "0 r0")" "napped 0 r0"
check "rare: no ready virtine after its first request" test "$(pool rare ready)" = 0
i=1
while [ $i -le 3 ]; do
	expect "rare: request $i" 200 "$(http POST /function/rare -d "0 r$i")" "napped 0 r$i"
	contains "rare: request $i restored its own virtine" "X-Ember-Start: restore" "$tmp/headers"
	check "rare: after request $i, still no ready virtine" test "$(pool rare ready)" = 0
	i=$((i + 1))
done
check "rare: the 3 restores are counted" test "$(pool rare restores)" = 3
round rare 3 "50 together"
check "rare: 3 at once all answered" test "$round_ok" = 3
check "rare: 3 at once each restored" test "$(grep -c 'X-Ember-Start: restore' "$tmp/starts")" = 3
check "rare: none kept after them" test "$(pool rare ready)" = 0
# an update with 3 requests in flight: they end on the virtines they restored, the old version
# is unloaded after them (with what it still drops), the new one keeps the default pool
i=0
pids=
while [ $i -lt 3 ]; do
	curl -s -o /dev/null -D "$tmp/u$i.h" -w '%{http_code}\n' -d "1000 during" \
		"$U/function/rare" >"$tmp/u$i.code" &
	pids="$pids $!"
	i=$((i + 1))
done
await "3 requests in flight in rare" pool_at_least rare inUse 3
expect "update rare to the default pool, 3 requests in flight" 202 \
	"$(http PUT /system/functions -d '{"service":"rare","image":"nap"}')"
for p in $pids; do wait "$p"; done # not the server's
check "rare: the 3 in flight during the update answered" \
	test "$(cat "$tmp"/u*.code | grep -c '^200$')" = 3
check "rare: each of them on a virtine it restored" \
	test "$(cat "$tmp"/u*.h | grep -ci '^X-Ember-Start: restore')" = 3
http GET /system/function/rare >/dev/null
check "rare, updated: its status shows no ready any more" python3 -c 'import json, sys
sys.exit("ready" in json.load(open(sys.argv[1]))["ember"])' "$tmp/body"
# (each version is loaded from the snapshot on disk: its first request starts cold)
expect "rare, updated: a first request" 200 "$(http POST /function/rare -d "0 u")" "napped 0 u"
await "rare, updated: the default pool of 2 ready" pool_at_least rare ready 2 &&
	ok "rare, updated: the default pool of 2 ready"
expect "rare, updated: the next request" 200 "$(http POST /function/rare -d "0 w")" "napped 0 w"
contains "rare, updated: a warm start" "X-Ember-Start: warm" "$tmp/headers"
expect "update rare back to ready 0" 202 \
	"$(http PUT /system/functions -d '{"service":"rare","image":"nap","ember":{"ready":0}}')"
expect "rare, ready 0 again: a first request" 200 "$(http POST /function/rare -d "0 v")" \
	"napped 0 v"
expect "rare, ready 0 again: the next request" 200 "$(http POST /function/rare -d "0 x")" \
	"napped 0 x"
contains "rare, ready 0 again: it restores" "X-Ember-Start: restore" "$tmp/headers"
check "rare, ready 0 again: no ready virtine" test "$(pool rare ready)" = 0
rm -f "$tmp"/u*.code "$tmp"/u*.h
stop

# --- a budget of 5 virtines of 16 MiB: 8 clients at once all get an answer, and it holds
start --memory-budget 80M
# (first rare, not loaded since the restart: its first request starts cold from disk and keeps
# nothing either)
expect "rare after a restart" 200 "$(http POST /function/rare -d '0 c')" "napped 0 c"
contains "rare after a restart: a cold start" "X-Ember-Start: cold" "$tmp/headers"
expect "rare: the next request" 200 "$(http POST /function/rare -d '0 d')" "napped 0 d"
contains "rare: the next request restores" "X-Ember-Start: restore" "$tmp/headers"
check "rare: no ready virtine after its cold start" test "$(pool rare ready)" = 0
# a virtine of 64 MiB in a budget of 80: 3 at once run one after another, each restoring once
# the one before was dropped and its memory given back (one never given back: they time out)
round rare 3 "50 in turn"
check "rare in a budget of one virtine: 3 at once all answered" test "$round_ok" = 3
check "rare in a budget of one virtine: each restored" \
	test "$(grep -c 'X-Ember-Start: restore' "$tmp/starts")" = 3
check "rare: they waited for memory" test "$(metric ember_memory_budget_waits_total)" -ge 1
expect "delete rare" 202 "$(http DELETE /system/functions -d '{"functionName":"rare"}')"
# shellcheck disable=SC2317 # run by await
no_guest_memory() { [ "$(metric ember_virtine_memory_bytes)" = 0 ]; }
await "rare's virtines all destroyed, their memory back to the budget" no_guest_memory &&
	ok "rare deleted: its virtines all destroyed, their memory back to the budget"
expect "deploy tight" 202 "$(http POST /system/functions \
	-d '{"service":"tight","image":"nap","limits":{"memory":"16M"}}')"
check "tight: its capacity is what the budget holds" test "$(pool tight capacity)" = 5
round tight 8 "300 squeeze"
check "tight: all 8 answered (the ones past the budget waited)" test "$round_ok" = 8
round tight 8 "100 again"
check "tight: all 8 answered again" test "$round_ok" = 8
peak=$(metric ember_virtine_memory_peak_bytes)
budget=$(metric ember_memory_budget_bytes)
check "the budget is in the metrics ($budget)" test "$budget" = $((80 << 20))
check "the virtines never held more than the budget (peak $peak)" test "$peak" -le "$budget"
check "the budget was full at some point (peak $peak)" test "$peak" -ge $((64 << 20))
check "requests waited for memory" test "$(metric ember_memory_budget_waits_total)" -ge 1
stop
finish
