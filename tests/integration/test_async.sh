#!/bin/sh
# ember serve's async invocations: POST /async-function/NAME answers 202 with X-Call-Id at once,
# the call runs later from a bounded queue, and its result is POSTed to X-Callback-Url (a
# receiver in this suite, callback_server.py): a success, a crash, the caller's own X-Call-Id,
# the metadata captured when it was accepted, a full queue (429), an unknown function (404), bad
# callback URLs (400), callbacks that fail or fail once, the metrics, and SIGTERM with calls
# queued: every accepted call's callback arrives exactly once after the restart.
# Run from the repository root; B is the build directory (default build); EMBER_BACKEND is
# kvm, ptrace or auto (the default: kvm when /dev/kvm works); SERVER_LOG=FILE keeps the
# server's log. Nothing sleeps for a fixed time: every wait polls (srv_lib.sh's await).
set -u
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
pick_backend
# shellcheck source=tests/integration/srv_lib.sh
. "$(dirname "$0")/srv_lib.sh"
cbpid=
# shellcheck disable=SC2317 # run by the trap
async_cleanup() {
	[ -n "$cbpid" ] && kill -KILL "$cbpid" 2>/dev/null
	srv_cleanup
}
trap async_cleanup EXIT
# the shutdown waits for the async call running (a nap of a second) on any machine
printf '{"shutdownTimeout": 600}\n' >"$tmp/serve.json"

# --- the callback receiver, on a port of its own choosing
mkdir "$tmp/cb"
python3 "$(dirname "$0")/callback_server.py" "$tmp/cb" 2>"$tmp/cb.log" &
cbpid=$!
# shellcheck disable=SC2317 # run by await
cb_listening() { [ -s "$tmp/cb/port" ]; }
await "the callback receiver to listen" cb_listening || finish
CB=http://127.0.0.1:$(cat "$tmp/cb/port")

# arrived ID [N]: the Nth callback of call ID (default the first) arrived whole
# shellcheck disable=SC2317 # run by await
arrived() { [ -f "$tmp/cb/$1.${2:-1}.headers" ]; }
# callback ID [N]: waits for it; its request line and headers in $tmp/cbh, its body in $tmp/cbb
callback() {
	: >"$tmp/cbh"
	: >"$tmp/cbb"
	await "callback ${2:-1} of call $1" arrived "$1" "${2:-1}" || return 1
	tr -d '\r' <"$tmp/cb/$1.${2:-1}.headers" >"$tmp/cbh"
	cp "$tmp/cb/$1.${2:-1}.body" "$tmp/cbb"
}
# header NAME FILE: the value of header NAME in FILE (headers as curl or the receiver saved them)
header() { tr -d '\r' <"$2" | sed -n "s/^$1: //p" | head -n 1; }
# metric NAME: its value in /metrics
metric() { curl -s "$U/metrics" | awk -v n="$1" '$1 == n { print $2 }'; }
# shellcheck disable=SC2317 # run by await
metric_is() { [ "$(metric "$1")" = "$2" ]; }
# async NAME [CURL ARGS...]: POST /async-function/NAME...; the status in $code, the call id in $id
async() {
	a_name=$1
	shift
	code=$(http POST "/async-function/$a_name" "$@")
	id=$(header X-Call-Id "$tmp/headers")
}

start --config "$tmp/serve.json" --async-workers 1 --async-queue 1
for f in hello crashy nap meta; do
	img=$B/guest/$f.musl
	[ $f = hello ] && img=$B/functions/hello
	expect "upload $f" 201 "$(http PUT "/system/images/$f" --data-binary @"$img")"
	expect "deploy $f" 202 "$(http POST /system/functions -d "{\"service\":\"$f\",\"image\":\"$f\"}")"
done

# --- a success: 202 with X-Call-Id and no body at once; the result goes to the callback
async hello -d Ember -H "X-Callback-Url: $CB/done"
expect "async hello: 202" 202 "$code" ""
hello_id=$id
check "async hello: X-Call-Id" [ -n "$hello_id" ]
callback "$hello_id"
contains "callback: POSTed to the URL's path" "POST /done" "$tmp/cbh"
check "callback: the function's output is the body" [ "$(cat "$tmp/cbb")" = "Hello, Ember!" ]
for h in "X-Call-Id: $hello_id" "X-Function-Status: 200" "X-Function-Name: hello" \
	"X-Ember-Outcome: ok" "X-Ember-Exit-Code: 0" "Content-Type: text/plain; charset=utf-8"; do
	contains "callback: $h" "$h" "$tmp/cbh"
done
has "$tmp/cbh" '^X-Duration-Seconds: [0-9]+\.[0-9]{6}$' "callback: X-Duration-Seconds"

# --- a crash: X-Function-Status and body as the sync call answers them
sync_code=$(http POST /function/crashy -d crash)
cp "$tmp/body" "$tmp/sync_body"
check "sync crash: a 5xx" [ "${sync_code#5}" != "$sync_code" ]
async crashy -d crash -H "X-Callback-Url: $CB/crash"
expect "async crash: 202" 202 "$code"
callback "$id"
contains "crash callback: X-Function-Status as the sync call ($sync_code)" \
	"X-Function-Status: $sync_code" "$tmp/cbh"
contains "crash callback: X-Ember-Outcome: crash" "X-Ember-Outcome: crash" "$tmp/cbh"
check "crash callback: the body is the sync call's" cmp -s "$tmp/cbb" "$tmp/sync_body"

# --- the caller's own X-Call-Id, and the metadata captured when the call was accepted
async 'meta/p/q?k=v' -d x -H 'X-Test: a' -H 'X-Call-Id: my-call.1' \
	-H "X-Callback-Url: $CB/meta"
expect "async meta, own X-Call-Id: 202" 202 "$code"
check "the caller's X-Call-Id is kept in the 202" [ "$id" = my-call.1 ]
callback my-call.1
contains "callback: the caller's X-Call-Id" "X-Call-Id: my-call.1" "$tmp/cbh"
for l in Http_Method=POST Http_Path=/p/q Http_Query=k=v Http_X_Test=a Http_X_Call_Id=my-call.1; do
	contains "async meta: $l" "$l" "$tmp/cbb"
done
async meta -d x -H "X-Callback-Url: $CB/meta"
expect "async meta, no X-Call-Id: 202" 202 "$code"
callback "$id"
contains "async meta: the call id given to the function" "Http_X_Call_Id=$id" "$tmp/cbb"

# --- no callback: it runs all the same
done_before=$(metric ember_async_calls_completed_total)
async hello -d quiet
expect "async without X-Callback-Url: 202" 202 "$code"
await "the call without a callback to complete" metric_is ember_async_calls_completed_total \
	$((done_before + 1))
ok "the call without a callback completed"

# --- refused at once, nothing queued
accepted=$(metric ember_async_calls_accepted_total)
async nosuch -d x -H "X-Callback-Url: $CB/x"
expect "unknown function: 404" 404 "$code"
contains "404 names the function" "nosuch" "$tmp/body"
for u in ftp://127.0.0.1/x file:///etc/passwd not-a-url http:// 'http://a b/'; do
	async hello -d x -H "X-Callback-Url: $u"
	expect "X-Callback-Url '$u': 400" 400 "$code"
done
contains "400 says why" "X-Callback-Url" "$tmp/body"
expect "deploy private (ember.auth)" 202 "$(http POST /system/functions \
	-d '{"service":"private","image":"hello","ember":{"auth":true}}')"
NOAUTH=1 async private -d x -H "X-Callback-Url: $CB/x"
expect "a private function without credentials: 401" 401 "$code"
expect "GET /async-function/hello: 405" 405 "$(http GET /async-function/hello)"
expect "a bad name: 400" 400 "$(http POST /async-function/Bad -d x)"
check "nothing refused was queued" metric_is ember_async_calls_accepted_total "$accepted"
async private -d Private -H "X-Callback-Url: $CB/private"
expect "a private function with credentials: 202" 202 "$code"
callback "$id"
check "the private function's result" [ "$(cat "$tmp/cbb")" = "Hello, Private!" ]

# --- a full queue: one worker busy, one call waiting, the next one refused with 429
async nap -d '2000 long' -H "X-Callback-Url: $CB/nap"
expect "a long nap: 202" 202 "$code"
long_id=$id
await "the worker to take the long nap" metric_is ember_async_running 1
async nap -d '10 short' -H "X-Callback-Url: $CB/nap"
expect "a short nap, queued: 202" 202 "$code"
short_id=$id
check "the queue holds one call" metric_is ember_async_queue_depth 1
async nap -d '10 refused' -H "X-Callback-Url: $CB/nap"
expect "the queue is full: 429" 429 "$code"
contains "429 says the queue is full" "queue is full" "$tmp/body"
check "ember_async_calls_rejected_total 1" metric_is ember_async_calls_rejected_total 1
callback "$long_id"
check "the long nap's result" [ "$(cat "$tmp/cbb")" = "napped 2000 long" ]
callback "$short_id"
check "the queued nap's result" [ "$(cat "$tmp/cbb")" = "napped 10 short" ]

# --- a function at its own limit (maxConcurrency 1, no queue of its own): a synchronous caller
# would get 429; the async call waits for the place instead
expect "deploy solo (maxConcurrency 1, queue 0)" 202 "$(http POST /system/functions \
	-d '{"service":"solo","image":"nap","ember":{"maxConcurrency":1,"queue":0}}')"
curl -s -o "$tmp/solo_sync" -d '1500 sync' "$U/function/solo" &
solo_pid=$!
# shellcheck disable=SC2317 # run by await
solo_busy() { http GET /system/function/solo >/dev/null && grep -q '"inflight":1' "$tmp/body"; }
await "solo to be busy" solo_busy
expect "solo busy: a synchronous caller gets 429" 429 "$(http POST /function/solo -d '1 x')"
async solo -d '10 async' -H "X-Callback-Url: $CB/solo"
expect "solo busy: an async call is accepted" 202 "$code"
callback "$id"
contains "the async call waited for solo: 200" "X-Function-Status: 200" "$tmp/cbh"
check "... and ran" [ "$(cat "$tmp/cbb")" = "napped 10 async" ]
wait "$solo_pid"
check "the synchronous call ran too" [ "$(cat "$tmp/solo_sync")" = "napped 1500 sync" ]

# --- callbacks that fail: tried three times, then logged and dropped; a 4xx is not tried again
dead=http://127.0.0.1:$(free_port)/gone
async hello -d x -H "X-Callback-Url: $dead"
expect "async hello, callback to a closed port: 202" 202 "$code"
dead_id=$id
async hello -d x -H "X-Callback-Url: $CB/status/404"
expect "async hello, callback answers 404: 202" 202 "$code"
gone_id=$id
await "both failed callbacks to be counted" metric_is ember_async_callbacks_failed_total 2
# shellcheck disable=SC2317 # run by await
logged() { grep -qF -- "$1" "$tmp/server.log"; }
await "the failed callback to be logged" logged "async call $dead_id: callback to"
has "$tmp/server.log" "async call $dead_id: .*dropped after try 3 of 3" "a closed port: logged after 3 tries"
has "$tmp/server.log" "async call $gone_id: .*dropped after try 1 of 3: it answered 404" \
	"a 404: logged after 1 try"
check "a 404 is not tried again" [ ! -e "$tmp/cb/$gone_id.2.headers" ]
# a 503 is tried again: the receiver answers 503 to the first try of /flaky, 200 to the next
async hello -d x -H "X-Callback-Url: $CB/flaky"
expect "async hello, flaky callback: 202" 202 "$code"
callback "$id" 2
contains "flaky: the second try has the same call id" "X-Call-Id: $id" "$tmp/cbh"
check "flaky: no more failures counted" metric_is ember_async_callbacks_failed_total 2

# --- SIGTERM with calls queued: they stay on disk and run after the restart, exactly once
await "the queue to drain" metric_is ember_async_queue_depth 0
await "the worker to be idle" metric_is ember_async_running 0
if stop; then ok "SIGTERM: exit status 0"; else bad "SIGTERM: exit status $rc"; fi
start --config "$tmp/serve.json" --async-workers 1 --async-queue 8
ids=
for i in 1 2 3 4 5; do
	async nap -d "1000 r$i" -H "X-Call-Id: restart-$i" -H "X-Callback-Url: $CB/restart"
	expect "restart: nap $i: 202" 202 "$code"
	ids="$ids restart-$i"
done
await "the worker to take the first nap" metric_is ember_async_running 1
check "restart: calls are queued at the SIGTERM" [ "$(metric ember_async_queue_depth)" -ge 1 ]
if stop; then ok "SIGTERM with calls queued: exit status 0"; else bad "SIGTERM with calls queued: exit status $rc"; fi
check "the call running at the SIGTERM delivered its callback before the exit" arrived restart-1
left=$(find "$tmp/state/async" -name '*.call' | wc -l)
check "the queued calls are on disk after the exit ($left)" [ "$left" -ge 1 ]
start --config "$tmp/serve.json" --async-workers 1 --async-queue 8
contains "the restart says it queued them again" \
	"$left async calls accepted before the restart are queued again" "$tmp/server.log"
for i in $ids; do
	callback "$i"
	check "$i: its result" [ "$(cat "$tmp/cbb")" = "napped 1000 r${i#restart-}" ]
done
await "the restarted queue to drain" metric_is ember_async_calls_completed_total "$left"
check "every call file is removed when its call is done" \
	[ -z "$(find "$tmp/state/async" -name '*.call')" ]
if stop; then ok "SIGTERM after the restart: exit status 0"; else bad "SIGTERM after the restart: exit status $rc"; fi
for i in $ids; do
	check "$i: its callback arrived exactly once" [ ! -e "$tmp/cb/$i.2.headers" ]
done

# --- at least once: a call still running when the shutdown gives up runs again at the next start
printf '{"shutdownTimeout": 0.2}\n' >"$tmp/short.json"
start --config "$tmp/short.json" --async-workers 1
async nap -d '1500 again' -H 'X-Call-Id: again' -H "X-Callback-Url: $CB/again"
expect "a nap longer than shutdownTimeout: 202" 202 "$code"
await "the worker to take it" metric_is ember_async_running 1
stop
check "SIGTERM abandons the running call: exit status 125" [ "$rc" = 125 ]
check "the abandoned call is still on disk" [ -n "$(find "$tmp/state/async" -name '*.call')" ]
check "its callback never came" [ ! -e "$tmp/cb/again.1.headers" ]
# an unreadable call file beside it is set aside, not run and not deleted
printf 'junk' >"$tmp/state/async/00000000000000ff.call"
start --config "$tmp/serve.json" --async-workers 1
callback again
check "the abandoned call ran again after the restart" [ "$(cat "$tmp/cbb")" = "napped 1500 again" ]
await "the unreadable file to be set aside" test -e "$tmp/state/async/00000000000000ff.call.bad" &&
	ok "the unreadable file is set aside as .bad"
contains "the unreadable file is logged" "00000000000000ff.call is unreadable" "$tmp/server.log"
if stop; then ok "SIGTERM: exit status 0"; else bad "SIGTERM: exit status $rc"; fi

# --- options
for a in "--async-workers 0" "--async-workers 257" "--async-queue x" "--async-queue 0"; do
	# shellcheck disable=SC2086 # the option and its value
	timeout 60 "$E" serve --listen "127.0.0.1:$port" --state "$tmp/state" $a 2>"$tmp/err"
	rc=$?
	check "ember serve $a: exit 125" [ "$rc" = 125 ]
done
printf '{"asyncWorkers": "many"}\n' >"$tmp/bad.json"
timeout 60 "$E" serve --listen "127.0.0.1:$port" --state "$tmp/state" --config "$tmp/bad.json" \
	2>"$tmp/err"
rc=$?
check "config asyncWorkers \"many\": exit 125" [ "$rc" = 125 ]
contains "config asyncWorkers: says why" "asyncWorkers must be an integer" "$tmp/err"

if [ $fail -gt 0 ]; then
	echo "server log:"
	tail -n 20 "$tmp/server.log"
fi
finish
