#!/bin/sh
# ember serve's authentication: every /system/ route needs the credentials from the secrets
# folder (HTTP basic auth), 401 with WWW-Authenticate without them and nothing changes; health
# and metrics stay open; a function whose deployment says ember.auth needs them too; credentials
# generated at the first start (mode 0600, the password never logged); --no-auth refused on an
# address other than loopback without --insecure. Run from the repository root.
set -u
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
pick_backend
# shellcheck source=tests/integration/srv_lib.sh
. "$(dirname "$0")/srv_lib.sh"

start
# --- the management routes, without and with credentials
for route in "GET /system/functions" "GET /system/info" "GET /system/images" \
	"GET /system/function/hello" "DELETE /system/functions"; do
	# shellcheck disable=SC2086
	expect "$route without credentials: 401" 401 "$(NOAUTH=1 http $route)"
done
contains "401 names the scheme" 'WWW-Authenticate: Basic realm="Ember"' "$tmp/headers"
expect "upload without credentials: 401" 401 \
	"$(NOAUTH=1 http PUT /system/images/hello --data-binary @"$B/functions/hello")"
expect "deploy without credentials: 401" 401 \
	"$(NOAUTH=1 http POST /system/functions -d '{"service":"hello","image":"hello"}')"
expect "a wrong password: 401" 401 \
	"$(NOAUTH=1 http GET /system/functions -u "tester:wrong")"
expect "a wrong user: 401" 401 "$(NOAUTH=1 http GET /system/functions -u "admin:${AUTH#*:}")"
expect "the password as the user: 401" 401 \
	"$(NOAUTH=1 http GET /system/functions -u "${AUTH#*:}:${AUTH#*:}")"
# the decoded credentials hold a NUL: libmicrohttpd hands back C strings, which end there
nul=$(printf '%s\000x' "$AUTH" | base64 | tr -d '\n')
expect "the password with a NUL and more after it: 401" 401 \
	"$(NOAUTH=1 http GET /system/functions -H "Authorization: Basic $nul")"
nul=$(printf '%s\000x:%s' "${AUTH%%:*}" "${AUTH#*:}" | base64 | tr -d '\n')
expect "the user with a NUL and more after it: 401" 401 \
	"$(NOAUTH=1 http GET /system/functions -H "Authorization: Basic $nul")"
expect "the right credentials by hand: 200" 200 "$(NOAUTH=1 http GET /system/functions \
	-H "Authorization: Basic $(printf '%s' "$AUTH" | base64 | tr -d '\n')")"
expect "nothing was uploaded or deployed" 200 "$(http GET /system/functions)" "[]"
expect "no image was stored" 200 "$(http GET /system/images)" "[]"
expect "healthz stays open" 200 "$(NOAUTH=1 http GET /healthz)" "OK"
expect "metrics stay open" 200 "$(NOAUTH=1 http GET /metrics)"

# --- functions: open by default, closed when the deployment says ember.auth
expect "upload with credentials" 201 \
	"$(http PUT /system/images/hello --data-binary @"$B/functions/hello")"
expect "deploy open" 202 "$(http POST /system/functions -d '{"service":"open","image":"hello"}')"
expect "deploy closed" 202 "$(http POST /system/functions \
	-d '{"service":"closed","image":"hello","ember":{"auth":true}}')"
contains "the status says auth" '"auth":true' "$tmp/body"
expect "an open function needs nothing" 200 "$(NOAUTH=1 http POST /function/open -d a)" \
	"Hello, a!"
expect "a closed function without credentials: 401" 401 \
	"$(NOAUTH=1 http POST /function/closed -d b)"
contains "401 for a function names the scheme" 'WWW-Authenticate: Basic' "$tmp/headers"
expect "a closed function with a wrong password: 401" 401 \
	"$(NOAUTH=1 http POST /function/closed -d b -u tester:nope)"
expect "a closed function with credentials" 200 "$(http POST /function/closed -d c)" "Hello, c!"
# the credentials are Ember's: a private function never sees them in its metadata
expect "upload meta" 201 "$(http PUT /system/images/meta --data-binary @"$B/guest/meta.musl")"
expect "deploy meta, private" 202 "$(http POST /system/functions \
	-d '{"service":"meta","image":"meta","ember":{"auth":true}}')"
expect "a private function's metadata" 200 "$(http POST /function/meta -d m -H 'X-Kept: yes')"
contains "... has the other headers" "Http_X_Kept=yes" "$tmp/body"
if grep -qi 'authorization' "$tmp/body"; then
	bad "... has the Authorization header with Ember's credentials"
else
	ok "... has no Authorization header"
fi
expect "deploy meta-open" 202 "$(http POST /system/functions \
	-d '{"service":"meta-open","image":"meta"}')"
expect "an open function's metadata" 200 \
	"$(NOAUTH=1 http POST /function/meta-open -d m -H 'Authorization: Bearer its-own')"
contains "... keeps an Authorization header meant for it" \
	"Http_Authorization=Bearer its-own" "$tmp/body"
expect "ember.auth must be a boolean" 400 "$(http POST /system/functions \
	-d '{"service":"x","image":"hello","ember":{"auth":"yes"}}')"
if stop; then ok "stop"; else bad "stop: $rc"; fi
if grep -qF -- "${AUTH#*:}" "$tmp/server.log"; then
	bad "the password appears in the server's log"
else
	ok "the password is not in the server's log"
fi

# --- generated credentials: a state folder without secrets
gen=$tmp/gen
"$E" serve --listen "127.0.0.1:$port" --state "$gen" --backend "$EMBER_BACKEND" \
	2>"$tmp/gen.log" &
pid=$!
await "the server with generated credentials" curl -sf "$U/healthz" -o /dev/null
check "generated: the user file is mode 0600" \
	test "$(stat -c %a "$gen/secrets/basic-auth-user")" = 600
check "generated: the password file is mode 0600" \
	test "$(stat -c %a "$gen/secrets/basic-auth-password")" = 600
check "generated: the folder is mode 0700" test "$(stat -c %a "$gen/secrets")" = 700
genpw=$(cat "$gen/secrets/basic-auth-password")
check "generated: a long password" test "${#genpw}" -ge 24
contains "generated: the folder is named on stderr" "$gen/secrets" "$tmp/gen.log"
if grep -qF -- "$genpw" "$tmp/gen.log"; then
	bad "generated: the password is on stderr"
else
	ok "generated: the password is not on stderr"
fi
expect "generated: they work" 200 \
	"$(NOAUTH=1 http GET /system/functions -u "$(cat "$gen/secrets/basic-auth-user"):$genpw")"
expect "generated: nothing else does" 401 "$(NOAUTH=1 http GET /system/functions)"
if stop; then ok "stop (generated)"; else bad "stop (generated): $rc"; fi
"$E" serve --listen "127.0.0.1:$port" --state "$gen" --backend "$EMBER_BACKEND" \
	2>"$tmp/gen2.log" &
pid=$!
await "the server restarted" curl -sf "$U/healthz" -o /dev/null
check "a restart keeps the generated password" \
	test "$(cat "$gen/secrets/basic-auth-password")" = "$genpw"
stop

# --- bad secrets folders are refused at start
mkdir -p "$tmp/half"
printf 'someone\n' >"$tmp/half/basic-auth-user"
"$E" serve --listen "127.0.0.1:$port" --state "$tmp/s2" --secrets "$tmp/half" \
	--backend "$EMBER_BACKEND" 2>"$tmp/err"
rc=$?
check "a user without a password: exit 125" test "$rc" = 125
check "... says what is missing" grep -q 'basic-auth-password' "$tmp/err"
check "... and generates nothing" test ! -e "$tmp/half/basic-auth-password"
printf '\n' >"$tmp/half/basic-auth-password"
"$E" serve --listen "127.0.0.1:$port" --state "$tmp/s2" --secrets "$tmp/half" \
	--backend "$EMBER_BACKEND" 2>"$tmp/err"
rc=$?
check "an empty password: exit 125" test "$rc" = 125
check "... says so" grep -q 'empty' "$tmp/err"

# --- without authentication
"$E" serve --listen "0.0.0.0:$port" --state "$tmp/s3" --no-auth --backend "$EMBER_BACKEND" \
	2>"$tmp/err"
rc=$?
check "--no-auth on 0.0.0.0: refused (125)" test "$rc" = 125
check "... and says why" grep -q 'without authentication' "$tmp/err"
"$E" serve --listen "127.0.0.1:$port" --state "$tmp/s3" --no-auth --backend "$EMBER_BACKEND" \
	2>>"$tmp/server.log" &
pid=$!
await "the server without authentication" curl -sf "$U/healthz" -o /dev/null
expect "--no-auth on loopback: open" 200 "$(NOAUTH=1 http GET /system/functions)" "[]"
check "--no-auth writes no secrets" test ! -e "$tmp/s3/secrets"
stop
"$E" serve --listen "0.0.0.0:$port" --state "$tmp/s3" --no-auth --insecure \
	--backend "$EMBER_BACKEND" 2>>"$tmp/server.log" &
pid=$!
await "the server with --insecure" curl -sf "$U/healthz" -o /dev/null
expect "--no-auth --insecure on 0.0.0.0: serves" 200 "$(NOAUTH=1 http GET /system/functions)"
stop
finish
