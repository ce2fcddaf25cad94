#!/bin/sh
# Costly functions: a function whose invocations crash or run long becomes costly (status,
# metrics) and its calls wait for one of the costly slots: with one slot, a second costly call
# waits while the first runs, and a third past the queue gets 429, while a cheap function is
# answered at once; cheap calls make it cheap again; --costly-after 0 turns it off; bad values
# are refused. Run from the repository root.
set -u
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
pick_backend
# shellcheck source=tests/integration/srv_lib.sh
. "$(dirname "$0")/srv_lib.sh"

# costly NAME: the status JSON's ember.costly ("true", "false", or "-" when unloaded)
costly() {
	http GET "/system/function/$1" >/dev/null
	python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["ember"]; print(str(e.get("costly","-")).lower())' "$tmp/body"
}
call() { curl -s -o /dev/null -w '%{http_code}' -d "$2" "$U/function/$1"; }
# metric LINE: /metrics has exactly that line
# shellcheck disable=SC2317 # run by await
metric() {
	http GET /metrics >/dev/null
	grep -qxF -- "$1" "$tmp/body"
}

# 1 ms: a warm hello (~0.3 ms) stays below it, two quick crashes in a row go past; one slot,
# one call may wait for it
start --costly-after 1 --costly-slots 1 --costly-queue 1
expect "upload hello" 201 "$(http PUT /system/images/hello --data-binary @"$B/functions/hello")"
expect "upload crashy" 201 "$(http PUT /system/images/crashy --data-binary @"$G/crashy.musl")"
expect "deploy hello" 202 "$(http POST /system/functions -d '{"service":"hello","image":"hello"}')"
expect "deploy crashy" 202 "$(http POST /system/functions \
	-d '{"service":"crashy","image":"crashy","ember":{"timeout":"4s"}}')"
for i in 1 2 3 4 5 6 7 8 9 10; do call hello x >/dev/null; done
same "hello: cheap after ten calls" false "$(costly hello)"
same "crashy: cheap before any call" false "$(costly crashy)"
same "crash 1 answered 502" 502 "$(call crashy crash)"
same "crash 2 answered 502" 502 "$(call crashy crash)"
same "crashy: costly after two crashes in a row" true "$(costly crashy)"
same "hello: still cheap" false "$(costly hello)"
check "metrics: crashy's gauge" metric 'ember_function_costly{function_name="crashy"} 1'
check "metrics: hello's gauge" metric 'ember_function_costly{function_name="hello"} 0'
check "metrics: found costly once" metric 'ember_costly_marked_total 1'
check "metrics: no slot busy between calls" metric 'ember_costly_slots_busy 0'

# one slot: a spin takes it, a second spin waits, a third finds the queue full
call crashy loop >"$tmp/loop1.code" &
l1=$!
await "the first spin in the slot" metric 'ember_costly_slots_busy 1' &&
	ok "the first spin holds the slot"
call crashy loop >"$tmp/loop2.code" &
l2=$!
await "the second spin waiting" metric 'ember_costly_waiting 1' &&
	ok "the second spin waits for the slot"
same "the slot busy, one waiting: a third costly call gets 429" 429 "$(call crashy fine)"
same "a cheap function meanwhile: answered" 200 "$(call hello x)"
check "metrics: one refused" metric 'ember_costly_refused_total 1'
wait "$l1"
wait "$l2"
same "the first spin timed out: 504" 504 "$(cat "$tmp/loop1.code")"
same "the second spin ran after it and timed out: 504" 504 "$(cat "$tmp/loop2.code")"
check "metrics: the slot free again" metric 'ember_costly_slots_busy 0'
check "metrics: nobody waiting" metric 'ember_costly_waiting 0'

# cheap calls make crashy cheap again, within a bounded number
n=0
while [ "$(costly crashy)" = true ] && [ $n -lt 80 ]; do
	call crashy fine >/dev/null
	n=$((n + 1))
done
same "crashy: cheap again after $n cheap calls" false "$(costly crashy)"
stop
same "clean stop" 0 "$rc"

# 0: never
start --costly-after 0
for i in 1 2 3; do call crashy crash >/dev/null; done
same "--costly-after 0: crashy stays cheap" false "$(costly crashy)"
stop

# bad values
for bad in "--costly-after abc" "--costly-slots 0" "--costly-queue x"; do
	# shellcheck disable=SC2086
	"$E" serve $bad --state "$tmp/x" >/dev/null 2>"$tmp/err"
	same "$bad: exit 125" 125 "$?"
	contains "$bad: the reason" "${bad%% *} needs" "$tmp/err"
done
printf '{"costlyAfter": -5}\n' >"$tmp/bad.json"
"$E" serve --config "$tmp/bad.json" --state "$tmp/x" >/dev/null 2>"$tmp/err"
same "costlyAfter -5: exit 125" 125 "$?"
contains "costlyAfter -5: the reason" "costlyAfter must be" "$tmp/err"
finish
