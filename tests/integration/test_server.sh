#!/bin/sh
# ember serve end to end: deploy, invoke, list, update and delete C, JS and Lua functions; the
# request's metadata (Http_Method, Http_Path, ...) on fd 4; threaded programs (pthreads with
# ember.cpus and ember.threads, Go) from build/corpus; every status code; bad input; 200
# concurrent requests; a restart (persistence); SIGTERM with a request in flight.
# Run from the repository root; B is the build directory (default build); EMBER_BACKEND is
# kvm, ptrace or auto (the default: kvm when /dev/kvm works); SERVER_LOG=FILE keeps the
# server's log. Nothing here sleeps for a fixed time: every wait polls for the state it needs
# (see await), bounded by AWAIT_POLLS polls 0.1 s apart (default 600, a minute).
set -u
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
pick_backend
# shellcheck source=tests/integration/srv_lib.sh
. "$(dirname "$0")/srv_lib.sh"
# a SIGTERM waits for requests in flight up to shutdownTimeout (default 10 s): long enough for
# the slow function on any machine, so the shutdown tests do not race it
printf '{"shutdownTimeout": 600}\n' >"$tmp/serve.json"
SERVE_ARGS="--config $tmp/serve.json --max-body 16K"

# deployment SERVICE RUNTIME FILE [EMBER-JSON]: a deployment with the source of FILE
deployment() {
	python3 -c 'import json, sys
d = {"service": sys.argv[1], "runtime": sys.argv[2], "code": open(sys.argv[3]).read()}
if len(sys.argv) > 4: d["ember"] = json.loads(sys.argv[4])
print(json.dumps(d))' "$@" >"$tmp/deploy.json"
}

start

# --- a C function: upload, deploy, invoke, list, get, update, delete
expect "healthz" 200 "$(http GET /healthz)" "OK"
expect "upload hello" 201 "$(http PUT /system/images/hello --data-binary @"$B/functions/hello")"
expect "upload args" 201 "$(http PUT /system/images/args --data-binary @"$B/guest/args.musl")"
expect "upload a text file: 400" 400 "$(http PUT /system/images/junk --data-binary @Makefile)"
contains "upload error is JSON with the reason" 'ELF' "$tmp/body"
expect "deploy hello" 202 "$(http POST /system/functions -d '{"service":"hello","image":"hello"}')"
expect "deploy hello again: 409" 409 "$(http POST /system/functions -d '{"service":"hello","image":"hello"}')"
expect "invoke hello" 200 "$(http POST /function/hello -d Ember)" "Hello, Ember!"
contains "X-Call-Id" "X-Call-Id: " "$tmp/headers"
contains "X-Duration-Seconds" "X-Duration-Seconds: " "$tmp/headers"
contains "X-Ember-Start" "X-Ember-Start: " "$tmp/headers"
expect "invoke hello, extra path and GET" 200 "$(http GET '/function/hello/x/y?q=1')" "Hello, world!"
expect "list" 200 "$(http GET /system/functions)"
contains "list names hello" '"name":"hello"' "$tmp/body"
contains "list has the image" '"image":"hello"' "$tmp/body"
contains "list counts invocations" '"invocationCount":2' "$tmp/body"
for f in replicas availableReplicas createdAt totalMemoryBytes; do
	contains "list has $f" "\"$f\":" "$tmp/body"
done
expect "get hello" 200 "$(http GET /system/function/hello)"
contains "hello runs on the backend under test" "\"backend\":\"$EMBER_BACKEND\"" "$tmp/body"
expect "update hello to args with envVars" 202 "$(http PUT /system/functions \
	-d '{"service":"hello","image":"args","envVars":{"TEST_COLOR":"blue"}}')"
expect "invoke the update" 200 "$(http POST /function/hello -d x)"
contains "the update's environment" "TEST_COLOR=blue" "$tmp/body"
expect "update a missing function: 404" 404 "$(http PUT /system/functions -d '{"service":"nope","image":"args"}')"
expect "delete hello" 202 "$(http DELETE /system/functions -d '{"functionName":"hello"}')"
expect "invoke deleted: 404" 404 "$(http POST /function/hello -d x)"
expect "get deleted: 404" 404 "$(http GET /system/function/hello)"
expect "delete again: 404" 404 "$(http DELETE /system/functions -d '{"functionName":"hello"}')"
expect "redeploy hello" 202 "$(http POST /system/functions -d '{"service":"hello","image":"hello"}')"

# --- JS and Lua
for lang in js lua; do
	src=functions/hello-$lang/handler.$lang
	deployment "h$lang" "$lang" "$src"
	expect "deploy $lang" 202 "$(http POST /system/functions -d @"$tmp/deploy.json")"
	expect "invoke $lang" 200 "$(http POST "/function/h$lang" -d "$lang")" "Hello, $lang!"
	expect "list $lang" 200 "$(http GET /system/functions)"
	contains "list has runtime $lang" "\"runtime\":\"$lang\"" "$tmp/body"
	sed 's/Hello, /Hi, /' "$src" >"$tmp/handler.$lang"
	deployment "h$lang" "$lang" "$tmp/handler.$lang"
	expect "update $lang" 202 "$(http PUT /system/functions -d @"$tmp/deploy.json")"
	expect "invoke updated $lang" 200 "$(http POST "/function/h$lang" -d "$lang")" "Hi, $lang!"
done
expect "delete js" 202 "$(http DELETE /system/functions -d '{"functionName":"hjs"}')"
printf 'function handler(\n' >"$tmp/broken.js"
deployment broken js "$tmp/broken.js"
expect "deploy a JS syntax error: 400" 400 "$(http POST /system/functions -d @"$tmp/deploy.json")"
contains "the syntax error's reason" "handler.js:" "$tmp/body"

# --- the request's metadata: method, path, query and headers as the watchdog's Http_* names
cat >"$tmp/env.js" <<'EOF'
function handler(input, env) {
	return env.Http_Method + " " + env.Http_Path + " " + env.Http_Query + " " + env.Http_X_Test;
}
EOF
deployment envjs js "$tmp/env.js"
expect "deploy a JS handler(input, env)" 202 "$(http POST /system/functions -d @"$tmp/deploy.json")"
expect "JS env: method, path, query, header" 200 \
	"$(http PUT '/function/envjs/a/b?x=1&y=two' -H 'X-Test: yes' -d body)" "PUT /a/b x=1&y=two yes"
expect "JS env: no extra path, no query" 200 "$(http GET /function/envjs -H 'x-test: 2')" "GET /  2"
cat >"$tmp/env.lua" <<'EOF'
function handler(input, env)
	return env.Http_Method .. " " .. env.Http_Path .. " " .. env.Http_Query .. " " .. env.Http_X_Test
end
EOF
deployment envlua lua "$tmp/env.lua"
expect "deploy a Lua handler(input, env)" 202 "$(http POST /system/functions -d @"$tmp/deploy.json")"
expect "Lua env" 200 "$(http POST '/function/envlua/p?q' -H 'X-Test: lua' -d x)" "POST /p q lua"
# the in-guest runtime for one function (ember.syscalls), its metadata on fd 4 included
expect "deploy hello-guest, ember.syscalls guest" 202 \
	"$(http POST /system/functions -d '{"service":"hello-guest","image":"hello","ember":{"syscalls":"guest"}}')"
expect "hello-guest" 200 "$(http POST /function/hello-guest -d guest)" "Hello, guest!"
expect "hello-guest again (warm)" 200 "$(http POST /function/hello-guest -d again)" "Hello, again!"
expect "hello-guest status" 200 "$(http GET /system/function/hello-guest)"
contains "hello-guest status shows the mode" '"syscalls":"guest"' "$tmp/body"
# without ember.syscalls: the server's default (its --syscalls, here $EMBER_SYSCALLS of the suite)
expect "hello status" 200 "$(http GET /system/function/hello)"
contains "hello runs in the server's default mode, ${EMBER_SYSCALLS:-guest}" \
	"\"syscalls\":\"${EMBER_SYSCALLS:-guest}\"" "$tmp/body"
expect "deploy hello-trap, ember.syscalls trap" 202 \
	"$(http POST /system/functions -d '{"service":"hello-trap","image":"hello","ember":{"syscalls":"trap"}}')"
expect "hello-trap" 200 "$(http POST /function/hello-trap -d trap)" "Hello, trap!"
expect "hello-trap status" 200 "$(http GET /system/function/hello-trap)"
contains "hello-trap status shows the mode" '"syscalls":"trap"' "$tmp/body"
expect "ember.syscalls must be trap or guest: 400" 400 \
	"$(http POST /system/functions -d '{"service":"badmode","image":"hello","ember":{"syscalls":"kernel"}}')"
contains "the 400 names the field" "ember.syscalls" "$tmp/body"
expect "upload meta (C, prints fd 4)" 201 \
	"$(http PUT /system/images/meta --data-binary @"$B/guest/meta.musl")"
expect "deploy meta" 202 "$(http POST /system/functions -d '{"service":"meta","image":"meta"}')"
expect "C meta" 200 "$(http POST '/function/meta/p%20q/r?k=v&w=%41' -H 'X-Test: c' \
	-H 'content-type: text/x-test' -H 'X-Multi-Word-Name: m' -d x)"
for l in Http_Method=POST 'Http_Path=/p q/r' 'Http_Query=k=v&w=%41' Http_X_Test=c \
	Http_Content_Type=text/x-test Http_X_Multi_Word_Name=m Http_Content_Length=1; do
	contains "C meta: $l" "$l" "$tmp/body"
done
expect "deploy meta-guest, ember.syscalls guest" 202 \
	"$(http POST /system/functions -d '{"service":"meta-guest","image":"meta","ember":{"syscalls":"guest"}}')"
expect "C meta, guest mode" 200 "$(http POST '/function/meta-guest/g?k=1' -H 'X-Test: g' -d x)"
for l in Http_Method=POST Http_Path=/g Http_Query=k=1 Http_X_Test=g; do
	contains "C meta, guest mode: $l" "$l" "$tmp/body"
done
expect "C meta, the next request" 200 "$(http GET /function/meta)"
if grep -q X_Test "$tmp/body"; then
	bad "the last request's header leaked: $(head -c 300 "$tmp/body")"
else
	ok "C meta: nothing of the last request"
fi
contains "C meta: no extra path is /" "Http_Path=/" "$tmp/body"
if python3 - "$port" >"$tmp/body" 2>&1 <<'EOF'; then
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
c.putrequest("POST", "/function/meta")
c.putheader("X-Good", "ok")
c.putheader("X-Utf8", "caf\u00e9".encode())
c.putheader("Content-Length", "0")
c.endheaders()
r = c.getresponse()
sys.stdout.write(r.read().decode())
sys.exit(r.status != 200)
EOF
	ok "C meta with a non-ASCII header"
else
	bad "C meta with a non-ASCII header: $(head -c 300 "$tmp/body")"
fi
contains "C meta: the ASCII header is there" "Http_X_Good=ok" "$tmp/body"
if grep -q Http_X_Utf8 "$tmp/body"; then
	bad "a non-ASCII header was passed: $(head -c 300 "$tmp/body")"
else
	ok "C meta: a non-ASCII header is left out"
fi

# --- threaded programs (pthreads, Go) deploy as any static program: an uploaded image, and the
# virtine's vCPUs and an invocation's threads as ember.cpus and ember.threads
for prog in pt_create.musl pt_pool.musl go_hello; do
	[ -x "$B/corpus/$prog" ] || bad "$B/corpus/$prog is not built (make all builds tests/corpus)"
done
pt_native=$(printf pt | "$B/corpus/pt_create.musl")
expect "upload pt_create (16 pthreads)" 201 \
	"$(http PUT /system/images/pt --data-binary @"$B/corpus/pt_create.musl")"
if [ "$EMBER_BACKEND" = ptrace ]; then
	# one vCPU per virtine there: ember_load's config error, the deployment's fault
	expect "ptrace: pt_create with ember.cpus 2: 400" 400 \
		"$(http POST /system/functions -d '{"service":"pt","image":"pt","ember":{"cpus":2}}')"
	contains "ptrace: the 400 says cpus must be 1" "cpus must be 1" "$tmp/body"
	contains "ptrace: ... as a bad deployment" '"kind":"config"' "$tmp/body"
	expect "ptrace: nothing deployed" 404 "$(http GET /system/function/pt)"
	pt_cpus=1
else
	pt_cpus=2
fi
expect "deploy pt_create, ember.cpus $pt_cpus" 202 "$(http POST /system/functions \
	-d "{\"service\":\"pt\",\"image\":\"pt\",\"ember\":{\"cpus\":$pt_cpus}}")"
for i in 1 2; do
	expect "pt_create on $pt_cpus vCPU(s) ($i): the native output" 200 \
		"$(http POST /function/pt -d pt)" "$pt_native"
done
expect "pt status" 200 "$(http GET /system/function/pt)"
contains "pt status shows ember.cpus" "\"cpus\":$pt_cpus" "$tmp/body"
contains "pt status shows the default ember.threads" '"threads":256' "$tmp/body"
contains "pt's stored deployment has the cpus given" "\"cpus\": $pt_cpus" "$tmp/state/functions/pt.json"
if grep -q '"threads"' "$tmp/state/functions/pt.json" "$tmp/state/functions/hello.json" ||
	grep -q '"cpus"' "$tmp/state/functions/hello.json"; then
	bad "a field not given is stored: $(cat "$tmp/state/functions/hello.json")"
else
	ok "cpus and threads are stored only when given"
fi
expect "hello status" 200 "$(http GET /system/function/hello)"
contains "without ember.cpus: 1 vCPU" '"cpus":1,' "$tmp/body"
contains "without ember.threads: 256" '"threads":256' "$tmp/body"
# pt_pool holds 4 workers beside its first thread from before the request: ember.threads 5 is
# just enough, 4 one short (clone's EAGAIN at its initialisation, each invocation's 502), and
# whatever the vCPUs do. 5 first: the snapshot it leaves on disk is not the one for 4.
expect "upload pt_pool" 201 "$(http PUT /system/images/pool --data-binary @"$B/corpus/pt_pool.musl")"
pool_native=$(printf pool | "$B/corpus/pt_pool.musl")
expect "deploy pt_pool, ember.threads 5" 202 "$(http POST /system/functions \
	-d "{\"service\":\"pool\",\"image\":\"pool\",\"ember\":{\"cpus\":$pt_cpus,\"threads\":5}}")"
expect "pt_pool with just enough threads" 200 "$(http POST /function/pool -d pool)" "$pool_native"
expect "pool status" 200 "$(http GET /system/function/pool)"
contains "pool status shows ember.threads" '"threads":5' "$tmp/body"
expect "update pt_pool, ember.threads 4" 202 "$(http PUT /system/functions \
	-d "{\"service\":\"pool\",\"image\":\"pool\",\"ember\":{\"cpus\":$pt_cpus,\"threads\":4}}")"
expect "pt_pool with a thread too few: 502" 502 "$(http POST /function/pool -d pool)"
expect "pool's log" 200 "$(http GET '/system/logs?name=pool&tail=5')"
contains "... pthread_create refused" "pthread_create: Resource temporarily unavailable" "$tmp/body"
expect "update pt_pool, ember.threads 5 again" 202 "$(http PUT /system/functions \
	-d "{\"service\":\"pool\",\"image\":\"pool\",\"ember\":{\"cpus\":$pt_cpus,\"threads\":5}}")"
expect "pt_pool runs again" 200 "$(http POST /function/pool -d pool)" "$pool_native"
# Go: its runtime's threads, and the guest memory of a Go program (2G) with no limits.memory
expect "upload go_hello" 201 "$(http PUT /system/images/gohello --data-binary @"$B/corpus/go_hello")"
expect "deploy go_hello, no limits.memory" 202 "$(http POST /system/functions \
	-d '{"service":"gohello","image":"gohello"}')"
for i in 1 2; do
	expect "go_hello ($i): the native output" 200 "$(http POST /function/gohello -d Ember)" \
		"$(printf Ember | "$B/corpus/go_hello")"
done
expect "status of go_hello" 200 "$(http GET /system/function/gohello)"
contains "go_hello's virtines have a Go program's 2 GiB" '"guestMemoryBytes":2147483648' "$tmp/body"
# out of its 2G before the memory budget's test below
expect "delete go_hello" 202 "$(http DELETE /system/functions -d '{"functionName":"gohello"}')"
for val in '"cpus":0' '"cpus":17' '"cpus":"x"' '"cpus":1.5' '"threads":0' '"threads":4097' \
	'"threads":"8"'; do
	field=${val%%:*}
	field=ember.$(echo "$field" | tr -d '"')
	expect "$val: 400" 400 "$(http POST /system/functions \
		-d "{\"service\":\"badcount\",\"image\":\"pt\",\"ember\":{$val}}")"
	contains "$val: the 400 names $field" "$field must be an integer" "$tmp/body"
done

# --- status codes
expect "unknown function: 404" 404 "$(http POST /function/nope -d x)"
expect "unknown route: 404" 404 "$(http GET /nope)"
expect "wrong method: 405" 405 "$(http PATCH /system/functions)"
# a method that is not UTF-8 is quoted in the error, which stays JSON (it was a 500)
expect "wrong method, not UTF-8: 405" 405 "$(http "$(printf 'G\307T')" /healthz)"
contains "wrong method, not UTF-8: the method quoted" 'method G?T not allowed' "$tmp/body"
head -c 20000 /dev/zero >"$tmp/big"
expect "body over --max-body: 413" 413 "$(http POST /function/hello --data-binary @"$tmp/big")"
expect "413 with Expect: 100-continue" 413 "$(http POST /function/hello -H 'Expect: 100-continue' --data-binary @"$tmp/big")"
# headers: 15 KiB in all are taken (a connection's memory is 16 KiB, the answer's headers
# included), more get 431
expect "a 14 KiB header: 200" 200 "$(http POST /function/hello -H "X-Big: $(head -c 14336 /dev/zero | tr '\0' a)" -d x)"
expect "a 20 KiB header: 431" 431 "$(http POST /function/hello -H "X-Big: $(head -c 20480 /dev/zero | tr '\0' a)" -d x)"
expect "after a 431, the next request: 200" 200 "$(http POST /function/hello -d x)"
expect "upload crash_null" 201 "$(http PUT /system/images/crash --data-binary @"$B/guest/crash_null.musl")"
expect "deploy crash" 202 "$(http POST /system/functions -d '{"service":"crash","image":"crash"}')"
for i in 1 2; do
	expect "crash: 502 ($i)" 502 "$(http POST /function/crash -d x)"
	contains "crash reason ($i)" "page fault" "$tmp/body"
done
printf 'function handler(i) error("boom") end\n' >"$tmp/fail.lua"
deployment fail lua "$tmp/fail.lua"
http POST /system/functions -d @"$tmp/deploy.json" >/dev/null
expect "non-zero exit: 502" 502 "$(http POST /function/fail -d x)"
contains "non-zero exit status" "X-Ember-Exit-Code: 1" "$tmp/headers"
expect "upload loop" 201 "$(http PUT /system/images/loop --data-binary @"$B/guest/loop.musl")"
expect "deploy loop, timeout 1" 202 "$(http POST /system/functions -d '{"service":"loop","image":"loop","ember":{"timeout":1}}')"
expect "timeout: 504" 504 "$(http POST /function/loop -d x)"
expect "timeout again: 504" 504 "$(http POST /function/loop -d x)"
printf 'function handler(i) while true do end end\n' >"$tmp/spin.lua"
# the three must be answered while the first spins: its timeout is that window, wide enough
# for a slow machine to start three curls
deployment spin lua "$tmp/spin.lua" '{"timeout":5,"maxConcurrency":1,"queue":0}'
expect "deploy spin, maxConcurrency 1" 202 "$(http POST /system/functions -d @"$tmp/deploy.json")"
curl -s -o /dev/null -w '%{http_code}' -d x "$U/function/spin" >"$tmp/first" &
first=$!
await "spin's one slot to be taken" status_has spin '"inflight":1'
busy=
for i in 1 2 3; do
	curl -s -o /dev/null -w '%{http_code}\n' -d x "$U/function/spin" >>"$tmp/busy" &
	busy="$busy $!"
done
# shellcheck disable=SC2086 # the pids, one word each
wait $first $busy
expect "in flight at the limit: 429 x3" "429 429 429" "$(sort "$tmp/busy" | tr '\n' ' ' | sed 's/ $//')"
expect "the one in flight: 504" 504 "$(cat "$tmp/first")"

# --- bad input
expect "malformed JSON: 400" 400 "$(http POST /system/functions -d '{"service":')"
contains "malformed JSON: JSON error" '{"error":"malformed JSON' "$tmp/body"
expect "wrong type: 400" 400 "$(http POST /system/functions -d '{"service":5,"image":"hello"}')"
expect "not an object: 400" 400 "$(http POST /system/functions -d '[1,2]')"
expect "envVars of numbers: 400" 400 "$(http POST /system/functions -d '{"service":"e","image":"hello","envVars":{"A":1}}')"
expect "bad memory limit: 400" 400 "$(http POST /system/functions -d '{"service":"e","image":"hello","limits":{"memory":"lots"}}')"
expect "service with ..: 400" 400 "$(http POST /system/functions -d '{"service":"a..b","image":"hello"}')"
expect "service with /: 400" 400 "$(http POST /system/functions -d '{"service":"a/b","image":"hello"}')"
expect "image with ..: 400" 400 "$(http POST /system/functions -d '{"service":"e","image":"../hello"}')"
expect "function name with ..: 400" 400 "$(http POST /function/a..b -d x)"
expect "upload to ../x: rejected" 400 "$(http PUT '/system/images/..%2Fescape' --data-binary @"$B/functions/hello")"
http PUT /system/images/.. --path-as-is --data-binary @"$B/functions/hello" >/dev/null
http PUT /system/images/../../escape2 --path-as-is --data-binary @"$B/functions/hello" >/dev/null
if [ -e "$tmp/escape" ] || [ -e "$tmp/escape2" ] || [ -e "$tmp/state/escape" ] ||
	[ -e "$tmp/state/escape2" ]; then
	bad "an upload escaped the images directory"
else
	ok "nothing written outside the images directory"
fi
expect "delete without functionName: 400" 400 "$(http DELETE /system/functions -d '{}')"
curl -s -o /dev/null -d Ember "$U/function/spin" &
hangup=$!
await "the request to hang up on to be in flight" status_has spin '"inflight":1'
kill "$hangup"
{ wait "$hangup"; } 2>/dev/null # the shell's "Terminated"
expect "after a client hung up" 200 "$(http POST /function/hello -d Ember)" "Hello, Ember!"

# --- 200 concurrent requests over 32 connections
if python3 - "$port" >"$tmp/conc" 2>&1 <<'EOF'; then
import http.client, sys, threading, time
port = int(sys.argv[1])
errors = []
def worker(w):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for i in range(w, 200, 32):
        body = "req-%d" % i
        c.request("POST", "/function/hello", body=body)
        r = c.getresponse()
        got = r.read().decode()
        if r.status != 200 or got != "Hello, %s!\n" % body:
            errors.append("%d: %d %r" % (i, r.status, got))
    c.close()
t0 = time.time()
ts = [threading.Thread(target=worker, args=(w,)) for w in range(32)]
for t in ts: t.start()
for t in ts: t.join()
print("200 requests in %.2f s" % (time.time() - t0))
if errors:
    print("\n".join(errors[:10]))
    sys.exit(1)
EOF
	ok "200 concurrent requests over 32 connections: $(head -n1 "$tmp/conc")"
else
	bad "concurrent requests: $(head -n 5 "$tmp/conc")"
fi

# --- metrics
expect "metrics" 200 "$(http GET /metrics)"
for m in 'gateway_function_invocation_total{function_name="hello",code="200"}' \
	'gateway_function_invocation_total{function_name="spin",code="429"}' \
	'gateway_functions_seconds_bucket{function_name="hello",le="+Inf"}' \
	'gateway_service_count{function_name="hello"}' 'ember_cold_starts_total{' \
	'ember_warm_starts_total{function_name="hello"}' 'ember_init_seconds_count' \
	'ember_exits_per_invocation_bucket{' 'ember_virtines_alive' \
	'process_resident_memory_bytes'; do
	contains "metric $m" "$m" "$tmp/body"
done
expect "system info" 200 "$(http GET /system/info)"
contains "system info names the provider" '"provider":"ember"' "$tmp/body"

# --- keepAlive: an idle function is unloaded, and the next call starts it cold
expect "deploy keepAlive 1" 202 "$(http POST /system/functions -d '{"service":"idle","image":"hello","ember":{"keepAlive":1}}')"
expect "invoke idle" 200 "$(http POST /function/idle -d a)" "Hello, a!"
# the reaper unloads it on its first round (one a second) a keepAlive after its last use
await "idle to be unloaded after its keepAlive" status_has idle '"loaded":false'
expect "idle after keepAlive" 200 "$code"
contains "idle was unloaded" '"loaded":false' "$tmp/body"
expect "invoke unloaded" 200 "$(http POST /function/idle -d b)" "Hello, b!"
contains "unloaded starts cold" "X-Ember-Start: cold" "$tmp/headers"
contains "cold start tells its init time" "X-Ember-Init-Ms: " "$tmp/headers"

# --- a deployment keeps the image version it was deployed with
expect "upload ver (hello)" 201 "$(http PUT /system/images/ver --data-binary @"$B/functions/hello")"
expect "deploy pinned from ver" 202 "$(http POST /system/functions -d '{"service":"pinned","image":"ver"}')"
expect "upload ver again (args)" 201 "$(http PUT /system/images/ver --data-binary @"$B/guest/args.musl")"
expect "list images" 200 "$(http GET /system/images)"
contains "list images has ver" '"name":"ver"' "$tmp/body"
expect "delete image ver" 202 "$(http DELETE /system/images/ver)"
expect "pinned still runs its version" 200 "$(http POST /function/pinned -d p)" "Hello, p!"

# --- persistence: stop, start, everything is back
if stop; then ok "SIGTERM: exit status 0"; else bad "SIGTERM: exit status $rc"; fi
start
expect "after restart: list" 200 "$(http GET /system/functions)"
for f in hello hlua crash loop spin fail; do
	contains "after restart: $f is back" "\"name\":\"$f\"" "$tmp/body"
done
expect "after restart: invoke hello" 200 "$(http POST /function/hello -d again)" "Hello, again!"
expect "after restart: invoke lua" 200 "$(http POST /function/hlua -d lua)" "Hi, lua!"
expect "after restart: pinned runs its version" 200 "$(http POST /function/pinned -d p)" "Hello, p!"
expect "after restart: JS env" 200 "$(http POST '/function/envjs/r?s=t' -H 'X-Test: again' -d x)" \
	"POST /r s=t again"
expect "after restart: C meta" 200 "$(http POST '/function/meta/r?s' -H 'X-Test: again' -d x)"
contains "after restart: C meta has the path" "Http_Path=/r" "$tmp/body"
contains "after restart: C meta has the header" "Http_X_Test=again" "$tmp/body"
expect "after restart: a deleted function stays deleted" 404 "$(http POST /function/hjs -d x)"
expect "after restart: pt on its vCPUs" 200 "$(http POST /function/pt -d pt)" "$pt_native"
expect "after restart: pt status" 200 "$(http GET /system/function/pt)"
contains "after restart: ember.cpus" "\"cpus\":$pt_cpus" "$tmp/body"
expect "after restart: pt_pool with its threads" 200 "$(http POST /function/pool -d pool)" \
	"$pool_native"
expect "after restart: pool status" 200 "$(http GET /system/function/pool)"
contains "after restart: ember.threads" '"threads":5' "$tmp/body"

# --- a slow function: an update lets the request in flight finish on the old version
cat >"$tmp/slow.lua" <<'EOF'
function handler(input)
	local x = 0
	for i = 1, 150000000 do x = x + i end
	return "v1 " .. input
end
EOF
deployment slow lua "$tmp/slow.lua" '{"timeout":120}'
expect "deploy slow" 202 "$(http POST /system/functions -d @"$tmp/deploy.json")"
curl -s -o "$tmp/slow1" -w '%{http_code}' -d a "$U/function/slow" >"$tmp/slow1.code" &
slow=$!
# in flight with the function loaded: the call holds v1 (it takes the loaded version in the same
# step that counts it in flight), so the update cannot change what it runs
await "the first slow request to be in flight" status_has slow '"inflight":1' '"loaded":true'
sed 's/v1 /v2 /' "$tmp/slow.lua" >"$tmp/slow2.lua"
deployment slow lua "$tmp/slow2.lua" '{"timeout":120}'
expect "update slow while in flight" 202 "$(http PUT /system/functions -d @"$tmp/deploy.json")"
wait $slow
expect "the request in flight ran v1" "200 v1 a" "$(cat "$tmp/slow1.code") $(cat "$tmp/slow1")"

# --- a queue: maxConcurrency 1 and queue 2 serve three at once, one after another
deployment slow lua "$tmp/slow2.lua" '{"timeout":120,"maxConcurrency":1,"queue":2}'
expect "update slow: maxConcurrency 1, queue 2" 202 "$(http PUT /system/functions -d @"$tmp/deploy.json")"
queued=
for i in 1 2 3; do
	curl -s --max-time 600 -w ' %{http_code}\n' -d q "$U/function/slow" >>"$tmp/queued" &
	queued="$queued $!"
done
await "one slow request in flight and two queued" status_has slow '"inflight":1' '"queued":2'
expect "three queued: status shows 1 in flight" 200 "$code"
contains "one in flight" '"inflight":1' "$tmp/body"
contains "two queued" '"queued":2' "$tmp/body"
# shellcheck disable=SC2086
wait $queued
expect "queued requests all served" "v2 q 200,v2 q 200,v2 q 200" "$(paste -sd, "$tmp/queued")"

# --- SIGTERM with a request in flight: it finishes, then exit 0
curl -s -o "$tmp/slow2" -w '%{http_code}' -d b "$U/function/slow" >"$tmp/slow2.code" &
slow=$!
await "the slow request to be in flight before the SIGTERM" status_has slow '"inflight":1'
if stop; then ok "SIGTERM in flight: exit status 0"; else bad "SIGTERM in flight: exit status $rc"; fi
wait $slow
expect "the request in flight finished" "200 v2 b" "$(cat "$tmp/slow2.code") $(cat "$tmp/slow2")"

# --- the memory budget: past it, the least recently used idle function is unloaded
start --memory-budget 100M
for f in b1 b2; do
	expect "deploy $f (64M)" 202 "$(http POST /system/functions \
		-d "{\"service\":\"$f\",\"image\":\"hello\",\"limits\":{\"memory\":\"64M\"}}")"
done
# b1's last use is before b2's: each sets last_used (CLOCK_MONOTONIC, in nanoseconds) when it
# returns, before the server replies, and b2 is called after b1's reply. The reaper checks the
# budget once a second.
expect "invoke b1" 200 "$(http POST /function/b1 -d one)" "Hello, one!"
expect "invoke b2" 200 "$(http POST /function/b2 -d two)" "Hello, two!"
await "b1 to be unloaded for the memory budget" status_has b1 '"loaded":false'
contains "over the budget: b1, the least recently used, is unloaded" '"loaded":false' "$tmp/body"
expect "b2, used last, stays" 200 "$(http GET /system/function/b2)"
contains "b2 loaded" '"loaded":true' "$tmp/body"
expect "b1 answers again, started from its snapshot" 200 "$(http POST /function/b1 -d again)" \
	"Hello, again!"
if stop; then ok "stop after the budget test"; else bad "stop after the budget test: $rc"; fi

if [ $fail -gt 0 ]; then
	echo "server log:"
	tail -n 20 "$tmp/server.log"
fi
finish
