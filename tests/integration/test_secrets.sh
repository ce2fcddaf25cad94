#!/bin/sh
# OpenFaaS's secrets and namespaces against a real `ember serve`: /system/secrets (create, list
# with names only, update, delete; bad names, values and states refused with nothing lost; the
# management credentials), the values in STATE/function-secrets (0600 files in a 0700 folder,
# kept across a restart); a deployment's secrets read by the function at
# /var/openfaas/secrets/NAME (read-only; a C program, a Python handler, with files, a dynamic
# program's closure), one it was not given ENOENT; an update that loads the functions given it
# again before its answer (the value read at init too: no snapshot of the old one is reused),
# one their init refuses, and a redeploy; the values never in the logs, the REPORT lines, the status, /metrics or the state's
# other files; /system/namespaces; a stack file's secrets: with `ember deploy`; faas-cli's
# recorded requests replayed, and the real faas-cli when there is one ($FAAS_CLI, else faas-cli
# on PATH). EMBER_BACKEND: kvm, ptrace or auto. Waits poll, never sleep.
set -u
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
pick_backend
# shellcheck source=tests/integration/srv_lib.sh
. "$(dirname "$0")/srv_lib.sh"
# shellcheck source=tests/integration/fc_lib.sh
. "$(dirname "$0")/fc_lib.sh"
S=$tmp/state/function-secrets
VAL_A="alpha-$$-$(od -An -N6 -tx1 /dev/urandom | tr -d ' ')"
VAL_B="bravo-$$-$(od -An -N6 -tx1 /dev/urandom | tr -d ' ')"
VAL_A2="alpha2-$$-$(od -An -N6 -tx1 /dev/urandom | tr -d ' ')"

# secret METHOD JSON: /system/secrets with that body; the status
secret() {
	http "$1" /system/secrets -H 'Content-Type: application/json' --data-binary "$2"
}
# call FN REQUEST: invokes FN; its answer in $tmp/body, the status printed
call() {
	NOAUTH=1 http POST "/function/$1" --data-binary "$2"
}
# absent WHAT TEXT FILE...: TEXT is in none of the files
absent() {
	ab_what=$1
	ab_text=$2
	shift 2
	if grep -rqF -- "$ab_text" "$@" 2>/dev/null; then
		bad "$ab_what: found in $(grep -rlF -- "$ab_text" "$@" | head -n 3 | tr '\n' ' ')"
	else
		ok "$ab_what"
	fi
}
# mode FILE: its permission bits in octal
mode() { stat -c %a "$1"; }
# sumof FILE: the "bytes N sum S" line secretread prints of a secret with FILE's bytes
sumof() {
	python3 -c 'import sys
b = open(sys.argv[1], "rb").read()
print("bytes %d sum %d" % (len(b), sum(c * ((i + 1) % 251 + 1) for i, c in enumerate(b))))' "$1"
}
# want_a VALUE: sra's whole answer for a request "a" when a holds VALUE (read at init too)
want_a() {
	printf '%s' "$1" >"$tmp/val"
	printf 'init %s\na %s\nwrite EROFS\n%s\nmode 444\nlist a\n' "$1" "$1" "$(sumof "$tmp/val")" \
		>"$tmp/want"
}

start
expect "upload secretread" 201 \
	"$(http PUT /system/images/sr --data-binary @"$G/secretread.musl")"

# --- CRUD over HTTP
expect "list at first: empty" 200 "$(http GET /system/secrets)" "[]"
expect "create a with value" 201 "$(secret POST '{"name":"a","value":"'"$VAL_A"'"}')"
# rawValue (faas-cli's --from-file): base64 bytes, a trailing newline and all
printf '%s\n' "$VAL_B" >"$tmp/b.raw"
expect "create b with rawValue" 201 \
	"$(secret POST '{"name":"b","value":"ignored","rawValue":"'"$(base64 -w0 "$tmp/b.raw")"'"}')"
check "b holds rawValue's bytes, not value" cmp -s "$tmp/b.raw" "$S/b"
same "a holds value" "$VAL_A" "$(cat "$S/a")"
expect "create n with a NUL in its value" 201 "$(secret POST '{"name":"n","value":"x\u0000y"}')"
printf 'x\000y' >"$tmp/n.want"
check "n holds the three bytes" cmp -s "$tmp/n.want" "$S/n"
expect "delete n" 200 "$(secret DELETE '{"name":"n"}')"
expect "list: names only, sorted" 200 "$(http GET /system/secrets)" '[{"name":"a"},{"name":"b"}]'
expect "list with ?namespace=" 200 "$(http GET '/system/secrets?namespace=openfaas-fn')" \
	'[{"name":"a"},{"name":"b"}]'
same "the folder: 0700" 700 "$(mode "$S")"
same "a: 0600" 600 "$(mode "$S/a")"
same "b: 0600" 600 "$(mode "$S/b")"

expect "create a again: 409" 409 "$(secret POST '{"name":"a","value":"clobber"}')"
contains "... saying it exists" "secret 'a' exists" "$tmp/body"
same "a is unchanged" "$VAL_A" "$(cat "$S/a")"
for n in '../x' '..' 'A' '' 'a/b' '.hidden' '-a' 'x..y/../z' "$(printf 'n%.0s' $(seq 70))"; do
	expect "name '$n': 400" 400 "$(secret POST '{"name":"'"$n"'","value":"v"}')"
done
expect "a name with a NUL: 400" 400 "$(secret POST '{"name":"a\u0000x","value":"v"}')"
expect "a name that is no string: 400" 400 "$(secret POST '{"name":5,"value":"v"}')"
expect "no value: 400" 400 "$(secret POST '{"name":"c"}')"
expect "a value that is no string: 400" 400 "$(secret POST '{"name":"c","value":5}')"
expect "rawValue not base64: 400" 400 "$(secret POST '{"name":"c","rawValue":"no!"}')"
expect "not JSON: 400" 400 "$(secret POST 'name=c')"
expect "a JSON array: 400" 400 "$(secret POST '["c"]')"
head -c $((1024 * 1024 + 1)) /dev/zero | tr '\0' x >"$tmp/big"
printf '{"name":"c","value":"%s"}' "$(cat "$tmp/big")" >"$tmp/big.json"
expect "a value past 1 MiB: 413" 413 "$(http POST /system/secrets --data-binary @"$tmp/big.json")"
expect "update of an unknown one: 404" 404 "$(secret PUT '{"name":"c","value":"v"}')"
expect "delete of an unknown one: 404" 404 "$(secret DELETE '{"name":"c"}')"
expect "delete with a bad name: 400" 400 "$(secret DELETE '{"name":"../a"}')"
expect "after the mistakes: a and b only" 200 "$(http GET /system/secrets)" \
	'[{"name":"a"},{"name":"b"}]'
same "nothing else in the folder" "a b" "$(ls -A "$S" | tr '\n' ' ' | sed 's/ $//')"
check "nothing made beside it" test ! -e "$tmp/state/x" -a ! -e "$tmp/state/z"
for m in GET POST PUT DELETE; do
	expect "$m without credentials: 401" 401 "$(NOAUTH=1 http $m /system/secrets \
		--data-binary '{"name":"a","value":"x"}')"
done
same "a survived them" "$VAL_A" "$(cat "$S/a")"
expect "POST /system/secrets/a: no such route" 404 "$(http POST /system/secrets/a)"

# --- functions given secrets: a reads a (at init and per request), never b
body='{"service":"sra","image":"sr","secrets":["a"],"envVars":{"INIT_SECRET":"a"}}'
expect "deploy sra given a" 202 "$(http POST /system/functions --data-binary "$body")"
expect "sra reads a" 200 "$(call sra a)"
want_a "$VAL_A"
check "sra: a at init and at the request, read-only, the folder lists a alone" \
	cmp -s "$tmp/want" "$tmp/body"
expect "sra reads b" 200 "$(call sra b)"
has "$tmp/body" "^b ENOENT$" "sra: b, not given, is ENOENT"
absent "sra never sees b's value" "$VAL_B" "$tmp/body"
body='{"service":"srb","image":"sr","secrets":["b"]}'
expect "deploy srb given b" 202 "$(http POST /system/functions --data-binary "$body")"
expect "srb reads b" 200 "$(call srb b)"
has "$tmp/body" "^b $VAL_B$" "srb: b's bytes (rawValue's, its newline too)"
expect "srb reads a" 200 "$(call srb a)"
has "$tmp/body" "^a ENOENT$" "srb: a, not given, is ENOENT"
has "$tmp/body" "^list b$" "srb: its folder lists b alone"
absent "srb never sees a's value" "$VAL_A" "$tmp/body"
# a secret of more than a page, whole
head -c 10000 /dev/urandom >"$tmp/big.bin"
expect "create big (10000 bytes)" 201 \
	"$(secret POST '{"name":"big","rawValue":"'"$(base64 -w0 "$tmp/big.bin")"'"}')"
expect "deploy srbig given big" 202 \
	"$(http POST /system/functions --data-binary '{"service":"srbig","image":"sr","secrets":["big"]}')"
expect "srbig reads big" 200 "$(call srbig big)"
has "$tmp/body" "^$(sumof "$tmp/big.bin")$" "srbig: all of big's bytes"
expect "deploy none, given nothing" 202 \
	"$(http POST /system/functions --data-binary '{"service":"none","image":"sr"}')"
expect "none reads a" 200 "$(call none a)"
has "$tmp/body" "^a E" "none: a is refused"
has "$tmp/body" "^list E" "none: no secrets folder"
absent "none never sees a's value" "$VAL_A" "$tmp/body"

# with files: both trees in one
mkdir -p "$tmp/tree/data"
printf 'file\n' >"$tmp/tree/data/f"
tar -C "$tmp/tree" -czf "$tmp/tree.tgz" .
printf '{"service":"srf","image":"sr","secrets":["a"],"files":"%s"}' \
	"$(base64 -w0 "$tmp/tree.tgz")" >"$tmp/deploy.json"
expect "deploy srf: files and a" 202 "$(http POST /system/functions --data-binary @"$tmp/deploy.json")"
expect "srf reads a" 200 "$(call srf a)"
has "$tmp/body" "^a $VAL_A$" "srf: a beside its files"
# the same files given b: the tree of one never serves the other (no cache keyed by files only)
printf '{"service":"srf2","image":"sr","secrets":["b"],"files":"%s"}' \
	"$(base64 -w0 "$tmp/tree.tgz")" >"$tmp/deploy.json"
expect "deploy srf2: the same files, and b" 202 \
	"$(http POST /system/functions --data-binary @"$tmp/deploy.json")"
expect "srf2 reads a" 200 "$(call srf2 a)"
has "$tmp/body" "^a ENOENT$" "srf2: a, given to srf with the same files, is ENOENT"
has "$tmp/body" "^list b$" "srf2: its folder lists b alone"
# a dynamic program without files: its closure and the secret
body='{"service":"dyn","image":"hellodyn","secrets":["a"]}'
expect "upload hello.dyn" 201 "$(http PUT /system/images/hellodyn --data-binary @"$G/hello.dyn")"
expect "deploy hello.dyn given a (its closure made too)" 202 \
	"$(http POST /system/functions --data-binary "$body")"
expect "hello.dyn answers" 200 "$(call dyn Ember)"
contains "hello.dyn: as without secrets" "Hello, Ember" "$tmp/body"

# a Python handler, as OpenFaaS's python3 template reads its secrets
cat >"$tmp/handler.py" <<'EOF'
try:
    with open("/var/openfaas/secrets/a") as f:
        INIT = f.read()
except OSError:
    INIT = ""
if INIT == "break-init":
    raise RuntimeError("init refused")

def handler(req, env):
    try:
        with open("/var/openfaas/secrets/" + req) as f:
            return req + "=" + f.read()
    except OSError as e:
        return req + ":" + type(e).__name__
EOF
python3 -c 'import json, sys
print(json.dumps({"service": "py", "runtime": "python", "secrets": ["a"],
                  "code": open(sys.argv[1]).read()}))' "$tmp/handler.py" >"$tmp/deploy.json"
expect "deploy a Python handler given a" 202 "$(http POST /system/functions --data-binary @"$tmp/deploy.json")"
expect "py reads a" 200 "$(call py a)" "a=$VAL_A"
expect "py reads b" 200 "$(call py b)" "b:FileNotFoundError"

# deployments that name secrets wrongly: refused, nothing deployed
expect "deploy with an unknown secret: 400" 400 "$(http POST /system/functions \
	--data-binary '{"service":"bad","image":"sr","secrets":["a","nope"]}')"
contains "... naming it" "secret 'nope' does not exist" "$tmp/body"
expect "... and bad is not deployed" 404 "$(http GET /system/function/bad)"
for s in '"a"' '["../a"]' '["a","a"]' '[5]'; do
	expect "secrets $s: 400" 400 "$(http POST /system/functions \
		--data-binary '{"service":"bad","image":"sr","secrets":'"$s"'}')"
done
expect "an update to an unknown secret: 400" 400 "$(http PUT /system/functions \
	--data-binary '{"service":"sra","image":"sr","secrets":["nope"]}')"
expect "... sra still reads a" 200 "$(call sra a)"
has "$tmp/body" "^a $VAL_A$" "... its value"

# --- the status names the secrets, never their values
expect "sra's status" 200 "$(http GET /system/function/sra)"
json 'j["secrets"] == ["a"]' "sra's status names a"
decodes FunctionStatus "sra's status: a FunctionStatus"

# --- delete one in use: refused
expect "delete a, given to functions: 409" 409 "$(secret DELETE '{"name":"a"}')"
contains "... naming them" "(sra, srf, dyn, py)" "$tmp/body"
same "a is still there" "$VAL_A" "$(cat "$S/a")"

# --- update: the next call loads again (init reads the new value: no old snapshot reused)
snaps_before=$(ls "$tmp/state/snapshots" | wc -l)
expect "update a" 200 "$(secret PUT '{"name":"a","value":"'"$VAL_A2"'"}')"
same "a holds the new value, 0600" "$VAL_A2 600" "$(cat "$S/a") $(mode "$S/a")"
expect "sra's status after the update" 200 "$(http GET /system/function/sra)"
json 'j["ember"]["loaded"]' "sra is loaded again before the update's answer"
has "$tmp/server.log" "secret a updated: 4 functions given it loaded again" \
	"the log: the four functions given a (sra, srf, dyn, py) loaded again"
expect "sra after the update" 200 "$(call sra a)"
want_a "$VAL_A2"
check "sra: the new value, at init and at the request" cmp -s "$tmp/want" "$tmp/body"
absent "... never the old one" "$VAL_A" "$tmp/body"
expect "py after the update" 200 "$(call py a)" "a=$VAL_A2"
expect "srf after the update" 200 "$(call srf a)"
has "$tmp/body" "^a $VAL_A2$" "srf: the new value"
expect "srb, not given a, unchanged" 200 "$(call srb b)"
has "$tmp/body" "^b $VAL_B$" "srb: b as before"
await "the old versions' snapshots removed" \
	test "$(ls "$tmp/state/snapshots" | wc -l)" -le "$snaps_before"
absent "no snapshot folder holds the old value" "$VAL_A" "$tmp/state/snapshots"
# a redeploy sees it too
body='{"service":"sra","image":"sr","secrets":["a"],"envVars":{"INIT_SECRET":"a"}}'
expect "redeploy sra" 202 "$(http PUT /system/functions --data-binary "$body")"
expect "sra after the redeploy" 200 "$(call sra a)"
check "sra after the redeploy: the new value" cmp -s "$tmp/want" "$tmp/body"

# an update whose value the function's initialisation refuses: the others load again, it is
# dropped (its next calls fail, saying why), and the next good value brings it back
expect "update a to what py's init refuses" 200 "$(secret PUT '{"name":"a","value":"break-init"}')"
has "$tmp/server.log" "cannot load py with secret a's new value" "the log: py cannot load"
code=$(call py a)
check "py's call fails ($code): its initialisation" test "$code" -ge 400
contains "... saying why" "init refused" "$tmp/body"
expect "sra with that value" 200 "$(call sra a)"
has "$tmp/body" "^a break-init$" "sra sees it"
expect "update a back" 200 "$(secret PUT '{"name":"a","value":"'"$VAL_A2"'"}')"
expect "py is back" 200 "$(call py a)" "a=$VAL_A2"

# --- namespaces
expect "namespaces: OpenFaaS's default" 200 "$(http GET /system/namespaces)" '["openfaas-fn"]'
expect "deploy ns1 in namespace team-a" 202 "$(http POST /system/functions \
	--data-binary '{"service":"ns1","image":"sr","namespace":"team-a"}')"
expect "namespaces: the default and team-a" 200 "$(http GET /system/namespaces)" \
	'["openfaas-fn","team-a"]'
decodes "[]string" "namespaces: a []string"
expect "ns1's status names its namespace" 200 "$(http GET /system/function/ns1)"
json 'j["namespace"] == "team-a"' "ns1: namespace team-a"
expect "list with ?namespace=" 200 "$(http GET '/system/functions?namespace=team-a')"
expect "namespaces without credentials: 401" 401 "$(NOAUTH=1 http GET /system/namespaces)"

# --- a restart keeps them
stop
start
same "after a restart: the folder 0700, a 0600" "700 600" "$(mode "$S") $(mode "$S/a")"
expect "after a restart: the list" 200 "$(http GET /system/secrets)" \
	'[{"name":"a"},{"name":"b"},{"name":"big"}]'
expect "after a restart: sra reads a" 200 "$(call sra a)"
check "after a restart: the new value" cmp -s "$tmp/want" "$tmp/body"
expect "after a restart: srb reads b" 200 "$(call srb b)"
has "$tmp/body" "^b $VAL_B$" "after a restart: b"

# --- ember deploy with a stack file's secrets:
cp "$G/secretread.musl" "$tmp/secretread"
cat >"$tmp/stack.yml" <<EOF
version: 1.0
provider:
  name: openfaas
  gateway: $U
functions:
  stk:
    image: ./secretread
    secrets:
      - b
EOF
"$E" deploy -f "$tmp/stack.yml" --secrets "$tmp/secrets" >"$tmp/out" 2>"$tmp/err"
expect "ember deploy of secrets: exit 0" 0 $?
absent "ember deploy: no warning about secrets" "secrets is ignored" "$tmp/err"
expect "stk reads b" 200 "$(call stk b)"
has "$tmp/body" "^b $VAL_B$" "stk: b's value"
expect "stk reads a" 200 "$(call stk a)"
has "$tmp/body" "^a ENOENT$" "stk: a, not given, is ENOENT"
sed 's/      - b/      - nope/' "$tmp/stack.yml" >"$tmp/stack2.yml"
"$E" deploy -f "$tmp/stack2.yml" --secrets "$tmp/secrets" >"$tmp/out" 2>"$tmp/err"
expect "ember deploy of an unknown secret: exit 1" 1 $?
contains "... the server's reason" "secret 'nope' does not exist" "$tmp/err"
sed 's/      - b/      - ..\/b/' "$tmp/stack.yml" >"$tmp/stack3.yml"
"$E" deploy -f "$tmp/stack3.yml" --secrets "$tmp/secrets" >"$tmp/out" 2>"$tmp/err"
expect "ember deploy of a bad secret name: exit 1" 1 $?
contains "... with its line" "stack3.yml:9:" "$tmp/err"

# --- faas-cli's requests, replayed (tests/integration/faas-cli/README.md)
expect "faas-cli secret create: 201" 201 "$(replay secret-create.http)"
same "api-key holds the literal" "s3cr3t" "$(cat "$S/api-key")"
expect "faas-cli secret create again: 409" 409 "$(replay secret-create.http)"
expect "faas-cli secret create --from-file: 201" 201 "$(replay secret-create-file.http)"
printf 'bin\001\n' >"$tmp/blob"
check "blob holds the file's bytes (rawValue)" cmp -s "$tmp/blob" "$S/blob"
expect "faas-cli secret list: 200" 200 "$(replay secret-list.http)"
decodes "[]Secret" "faas-cli secret list: a []Secret"
json '[s["name"] for s in j] == ["a", "api-key", "b", "big", "blob"] and all(list(s) == ["name"] for s in j)' \
	"faas-cli secret list: names only"
expect "faas-cli secret list -n: 200" 200 "$(replay secret-list-namespace.http)"
decodes "[]Secret" "faas-cli secret list -n: a []Secret"
expect "faas-cli secret update: 200" 200 "$(replay secret-update.http)"
same "api-key updated" "n3w" "$(cat "$S/api-key")"
expect "faas-cli secret remove: 200" 200 "$(replay secret-remove.http)"
expect "faas-cli secret remove again: 404" 404 "$(replay secret-remove.http)"
expect "faas-cli secret update of a removed one: 404" 404 "$(replay secret-update.http)"
expect "faas-cli namespaces: 200" 200 "$(replay namespaces.http)"
decodes "[]string" "faas-cli namespaces: a []string"
expect "faas-cli secret list without login: 401" 401 "$(NOAUTH=1 replay secret-list.http)"

# --- the real faas-cli, when there is one
fc=${FAAS_CLI:-$(command -v faas-cli || true)}
if [ -n "$fc" ] && [ -x "$fc" ]; then
	export HOME="$tmp/home" OPENFAAS_URL="$U"
	mkdir -p "$HOME"
	run_fc() { "$fc" "$@" >"$tmp/out" 2>&1; }
	run_fc login -u tester --password "${AUTH#tester:}"
	expect "faas-cli login: exit 0" 0 $?
	run_fc secret create fc-one --from-literal "$VAL_B-fc"
	contains "faas-cli secret create: created" "Created: 201" "$tmp/out"
	same "fc-one holds it" "$VAL_B-fc" "$(cat "$S/fc-one")"
	run_fc secret list
	contains "faas-cli secret list: fc-one" "fc-one" "$tmp/out"
	absent "faas-cli secret list: no value" "$VAL_B-fc" "$tmp/out"
	run_fc secret update fc-one --from-literal two
	contains "faas-cli secret update: updated" "Updated: 200" "$tmp/out"
	run_fc secret remove fc-one
	expect "faas-cli secret remove: exit 0" 0 $?
	check "faas-cli secret remove: gone" test ! -e "$S/fc-one"
	# -g: its namespace list looks the credentials up by the flag only, not $OPENFAAS_URL
	run_fc namespace list -g "$U"
	contains "faas-cli namespace list" " - openfaas-fn" "$tmp/out"
else
	echo "##### the real faas-cli was NOT run: set FAAS_CLI (tests/integration/faas-cli/README.md) #####"
fi

# --- never a value in the logs, the REPORT lines, the status, /metrics, other state files
for f in sra srb srf srf2 none stk dyn py srbig; do
	http GET "/system/logs?name=$f" >/dev/null
	cp "$tmp/body" "$tmp/logs-$f"
done
http GET /system/functions >/dev/null && cp "$tmp/body" "$tmp/list.json"
http GET /system/info >/dev/null && cp "$tmp/body" "$tmp/info.json"
NOAUTH=1 http GET /metrics >/dev/null && cp "$tmp/body" "$tmp/metrics.txt"
has "$tmp/server.log" "REPORT .*Function: sra" "the server's log has REPORT lines of sra"
has "$tmp/server.log" "secret a updated" "the server's log names the secret it updated"
for v in "$VAL_A" "$VAL_A2" "$VAL_B"; do
	absent "${v%%-*}'s value: not in the server's log nor the function logs" "$v" \
		"$tmp/server.log" "$tmp"/logs-*
	absent "${v%%-*}'s value: not in the status, info or /metrics" "$v" "$tmp/list.json" \
		"$tmp/info.json" "$tmp/metrics.txt"
	absent "${v%%-*}'s value: not in the deployments, images or bundles" "$v" \
		"$tmp/state/functions" "$tmp/state/images" "$tmp/state/async" "$tmp/state/bundles"
	# a snapshot holds what init read: one given secrets is never written to disk, where an
	# old value would outlive its update
	absent "${v%%-*}'s value: not in the snapshots on disk" "$v" "$tmp/state/snapshots"
done

# --- delete: once no function is given it
for f in sra srf dyn py; do
	expect "delete $f" 202 "$(http DELETE /system/functions --data-binary '{"functionName":"'"$f"'"}')"
done
expect "delete a, given to none now" 200 "$(secret DELETE '{"name":"a"}')"
check "a's file is gone" test ! -e "$S/a"
expect "the list without a" 200 "$(http GET /system/secrets)" \
	'[{"name":"b"},{"name":"big"},{"name":"blob"}]'
stop
expect "the server exits 0" 0 "$rc"
finish
