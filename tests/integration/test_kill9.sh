#!/bin/sh
# The state folder survives kill -9 at any point: rounds (KILL9_ROUNDS, default 20) of deploys,
# updates, deletes, image uploads and async calls fired at a running `ember serve`, killed with SIGKILL at a
# point drawn from a seed (KILL9_SEED, printed; the same seed draws the same points), then
# restarted on the same state folder. After each restart: no temporary file is left, every
# file is whole (each JSON parses, each image is the uploaded bytes), every acknowledged
# deployment is served in its acknowledged version (or the one in flight at the kill), nothing
# else is, every function answers as its version must, and every acknowledged async call calls
# back (STATE/async). tests/integration/kill9.py is the
# client and the checker. Run from the repository root.
set -u
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
pick_backend
# shellcheck source=tests/integration/srv_lib.sh
. "$(dirname "$0")/srv_lib.sh"

ROUNDS=${KILL9_ROUNDS:-20}
SEED=${KILL9_SEED:-$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')}
echo "seed $SEED (KILL9_SEED=$SEED reproduces the kill points), $ROUNDS rounds"
K="python3 $(dirname "$0")/kill9.py"
HELLO=$B/functions/hello
ARGS=$G/args.musl
ledger=$tmp/ledger.json

# the async calls' callbacks, logged by a server of their own that lives through the rounds
$K callbacks "$tmp/cbport" "$tmp/callbacks" &
cbpid=$!
trap 'kill "$cbpid" 2>/dev/null; srv_cleanup' EXIT
await "the callbacks server" test -s "$tmp/cbport"
CB=http://127.0.0.1:$(cat "$tmp/cbport")/done

start
expect "upload pic-hello" 201 "$(http PUT /system/images/pic-hello --data-binary @"$HELLO")"
expect "upload pic-args" 201 "$(http PUT /system/images/pic-args --data-binary @"$ARGS")"
expect "deploy async" 202 "$(http POST /system/functions -d '{"service": "async", "runtime": "duktape",
	"code": "function handler(input) { return \"async \" + input + \"\\n\"; }"}')"
r=1
while [ "$r" -le "$ROUNDS" ]; do
	$K fire "$U" "$AUTH" "$pid" "$SEED" "$r" "$ledger" "$HELLO" "$ARGS" "$CB" >"$tmp/fire" \
		2>"$tmp/err"
	frc=$?
	wait "$pid" 2>/dev/null
	wrc=$?
	pid=
	if [ "$wrc" = 137 ] && [ "$frc" = 0 ]; then
		ok "round $r: $(cat "$tmp/fire")"
	else
		bad "round $r: the client exited $frc, the server $wrc (137 is the kill)"
	fi
	start
	check "round $r: ready after the restart" await "readyz" curl -sf "$U/readyz" -o /dev/null
	if $K check "$U" "$AUTH" "$tmp/state" "$ledger" "$HELLO" "$ARGS" "$tmp/callbacks" \
		2>"$tmp/err"; then
		ok "round $r: every acknowledged deployment is whole, nothing half-written"
	else
		bad "round $r: after the restart"
	fi
	r=$((r + 1))
done
grep -E 'removed [0-9]+ (temporary files|images)' "$tmp/server.log" | sort | uniq -c |
	sed 's/^/     | /'
if stop; then ok "stop"; else bad "stop: $rc"; fi
finish
