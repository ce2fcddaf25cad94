#!/bin/sh
# faas-cli's world: `ember deploy -f stack.yml` with a C, a JS, a Lua and Python functions (one
# with a folder of files: files: in the stack file, packed into the deployment), invoked with
# `ember invoke` and listed with `ember list`; --filter; a redeploy that updates; stack files
# with mistakes refused with their line and nothing deployed; threaded programs (pthreads with
# ember.cpus and ember.threads, Go); the client's credentials; and faas-cli's own requests
# (tests/integration/faas-cli/*.http) replayed with curl, the answers checked as faas-cli
# decodes them.
# Run from the repository root; B is the build directory (default build); EMBER_BACKEND is
# kvm, ptrace or auto. Waits poll (AWAIT_POLLS polls 0.1 s apart, default 600), never sleep.
set -u
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
pick_backend
# shellcheck source=tests/integration/srv_lib.sh
. "$(dirname "$0")/srv_lib.sh"
# shellcheck source=tests/integration/fc_lib.sh
. "$(dirname "$0")/fc_lib.sh"
EAUTH="--secrets $tmp/secrets" # the ember commands' credentials (curl's are srv_lib's AUTH)
fake=
# shellcheck disable=SC2317 # run by the trap
cleanup() {
	[ -n "$fake" ] && kill -KILL "$fake" 2>/dev/null
	srv_cleanup
}
trap cleanup EXIT

# lacks WHAT TEXT FILE: FILE does not contain TEXT
lacks() {
	if grep -qF -- "$2" "$3"; then
		bad "$1: '$2' in: $(head -c 400 "$3" | tr '\n' '|')"
	else
		ok "$1"
	fi
}

# em COMMAND ARGS...: an ember command with the credentials, run in the project folder; stdout
# in $tmp/out, stderr in $tmp/err, the status in rc
case $B in
/*) BA=$B ;;
*) BA=$PWD/$B ;;
esac
EA=$BA/ember
em() {
	cmd=$1
	shift
	# shellcheck disable=SC2086 # EAUTH is arguments
	(cd "$proj" && "$EA" "$cmd" $EAUTH "$@") >"$tmp/out" 2>"$tmp/err"
	rc=$?
}

# inv NAME REQUEST [ARGS...]: ember invoke with REQUEST on stdin
inv() {
	n=$1
	printf '%s' "$2" >"$tmp/in"
	shift 2
	"$E" invoke "$n" --gateway "$U" "$@" <"$tmp/in" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}

# names: the deployed functions, one line, sorted
names() {
	http GET /system/functions >/dev/null
	python3 -c 'import json, sys; print(" ".join(sorted(f["name"] for f in json.load(open(sys.argv[1])))))' "$tmp/body"
}

# --- the project: a C, a JS and a Lua function, from the repository's own examples
proj=$tmp/proj
mkdir -p "$proj/hello-c" "$proj/hello-js" "$proj/hello-lua" "$proj/broken" "$proj/bad-c" \
	"$proj/fails"
cp tests/guest/hello.c "$proj/hello-c/"
cp functions/hello-js/handler.js "$proj/hello-js/"
cp functions/hello-lua/handler.lua "$proj/hello-lua/"
printf 'function handler(input) {\n  return "x" +;\n}\n' >"$proj/broken/handler.js"
printf 'int main(void) { return syntax error; }\n' >"$proj/bad-c/main.c"
printf 'function handler(i) error("boom") end\n' >"$proj/fails/handler.lua"
cat >"$proj/lua.env.yml" <<'EOF'
environment:
  FROM_FILE: "yes"
  SHARED: file
EOF
cat >"$proj/stack.yml" <<EOF
version: 1.0
provider:
  name: openfaas
  gateway: $U
functions:
  hello-c:
    lang: c
    handler: ./hello-c
    image: ghcr.io/example/hello-c:0.1.0
    environment:
      GREETING: \${STACK_GREETING:-unset}
      COUNT: 5
      PRICE: \$\$5 \${STACK_UNSET-fallback}
    labels:
      com.openfaas.scale.min: "1"
    annotations:
      topic: greetings
    limits:
      memory: 32Mi
      cpu: 100m
    secrets:
      - api-key
  hello-js:
    lang: node18
    handler: ./hello-js
    image: hello-js:latest
    ember:
      timeout: 5s
      syscalls: guest
  hello-lua:
    lang: lua
    handler: hello-lua
    image: registry.example.com:5000/team/hello-lua:2
    environment:
      SHARED: stack
    environment_file:
      - lua.env.yml
EOF

start
# hello-c is given a secret (test_secrets.sh tests them): it must exist on the server
expect "the secret hello-c is given, made first" 201 \
	"$(http POST /system/secrets -d '{"name":"api-key","value":"k-stack"}')"

# --- help and bad options
for c in deploy invoke list; do
	"$E" "$c" --help >"$tmp/out" 2>&1
	expect "ember $c --help: exit 0" 0 $?
	contains "ember $c --help: usage" "usage: ember $c" "$tmp/out"
	"$E" "$c" --bogus >"$tmp/out" 2>&1
	expect "ember $c --bogus: exit 125" 125 $?
done
"$E" --help >"$tmp/out"
for c in deploy invoke list; do contains "ember --help lists $c" "  $c " "$tmp/out"; done

# --- deploy the three
export STACK_GREETING=hola
em deploy -f stack.yml
expect "deploy -f stack.yml: exit 0" 0 "$rc"
contains "C: built with musl-gcc" "hello-c: built with musl-gcc -static from" "$tmp/out"
contains "C: uploaded as image hello-c" "hello-c: uploaded image hello-c (" "$tmp/out"
for f in hello-c hello-js hello-lua; do
	contains "$f: deployed" "$f: deployed, $U/function/$f" "$tmp/out"
done
contains "JS: the handler file, relative to the stack file" "hello-js: js handler ./hello-js/handler.js" "$tmp/out"
contains "Lua: the handler file" "hello-lua: lua handler hello-lua/handler.lua" "$tmp/out"
contains "the summary" "deployed 3 functions to $U" "$tmp/out"
if grep -q "secrets is ignored" "$tmp/err"; then bad "secrets: a warning"; else ok "secrets: no warning"; fi
contains "limits.cpu: a warning" "functions.hello-c.limits.cpu is ignored" "$tmp/err"
expect "deployed: the three" "hello-c hello-js hello-lua" "$(names)"
expect "hello-c's status" 200 "$(http GET /system/function/hello-c)"
json 'j["secrets"] == ["api-key"] and "k-stack" not in json.dumps(j)' "hello-c is given its secret, by name only"

for f in hello-c hello-js hello-lua; do
	inv "$f" Ember
	expect "invoke $f: exit 0" 0 "$rc"
	expect "invoke $f: the answer" "Hello, Ember!" "$(cat "$tmp/out")"
done
inv hello-js ""
expect "invoke with an empty request" "Hello, world!" "$(cat "$tmp/out")"

expect "status of hello-c" 200 "$(http GET /system/function/hello-c)"
# shellcheck disable=SC2016 # a literal $ in the expected value
json 'j["envVars"] == {"GREETING": "hola", "COUNT": "5", "PRICE": "$5 fallback"}' \
	"C: environment, \${VAR:-default}, \${VAR-default} and \$\$ substituted"
json 'j["labels"] == {"com.openfaas.scale.min": "1"} and j["annotations"] == {"topic": "greetings"}' \
	"C: labels and annotations"
json 'j["limits"] == {"memory": "32Mi"} and j["image"] == "hello-c"' "C: limits.memory; the image uploaded"
expect "status of hello-lua" 200 "$(http GET /system/function/hello-lua)"
json 'j["envVars"] == {"SHARED": "file", "FROM_FILE": "yes"} and j["runtime"] == "lua"' \
	"Lua: environment_file over environment"
expect "status of hello-js" 200 "$(http GET /system/function/hello-js)"
json 'j["ember"]["timeout"] == 5 and j["ember"]["syscalls"] == "guest" and j["runtime"] == "js"' \
	"JS: the ember settings"

# --- ember list
em list --gateway "$U"
expect "list: exit 0" 0 "$rc"
contains "list: a header" "Function" "$tmp/out"
for f in hello-c hello-js hello-lua; do contains "list: $f" "$f " "$tmp/out"; done
if grep -Eq '^hello-c +1 +[0-9]+/[0-9]+ +hello-c$' "$tmp/out" &&
	grep -Eq '^hello-js +2 +[0-9]+/[0-9]+ +js runtime$' "$tmp/out" &&
	grep -Eq '^hello-lua +1 +[0-9]+/[0-9]+ +lua runtime$' "$tmp/out"; then
	ok "list: invocations, ready/replicas, image or runtime"
else
	bad "list: $(tr '\n' '|' <"$tmp/out")"
fi
export OPENFAAS_URL="$U"
em list -q
unset OPENFAAS_URL
expect "list -q, gateway from \$OPENFAAS_URL" "hello-c hello-js hello-lua" "$(tr '\n' ' ' <"$tmp/out" | sed 's/ $//')"
em list --gateway "$U" --json
cp "$tmp/out" "$tmp/body"
json 'len(j) == 3' "list --json: the server's array"
em list --gateway http://127.0.0.1:1
expect "list, nothing listening: exit 125" 125 "$rc"
em list --gateway "http://tester:leaked-secret@${U#http://}"
expect "credentials in the gateway URL: refused, exit 125" 125 "$rc"
contains "... saying where they go instead" "give them with --secrets DIR" "$tmp/err"
if grep -q leaked-secret "$tmp/out" "$tmp/err"; then
	bad "the password in the gateway URL is printed"
else
	ok "the password in the gateway URL is not printed"
fi
"$E" list --gateway "$U" >"$tmp/out" 2>"$tmp/err"
expect "list without credentials: exit 1" 1 $?
contains "list without credentials: 401 and what to give" "answered 401: authentication required (the server wants credentials: --secrets DIR" "$tmp/err"
# shellcheck disable=SC2153 # AUTH is srv_lib's
(cd "$proj" && EMBER_GATEWAY_USER=tester EMBER_GATEWAY_PASSWORD=${AUTH#*:} "$EA" deploy \
	--filter hello-lua) >"$tmp/out" 2>"$tmp/err"
expect "deploy with \$EMBER_GATEWAY_USER and \$EMBER_GATEWAY_PASSWORD: exit 0" 0 $?
contains "deploy with the environment's credentials: updated" "hello-lua: updated" "$tmp/out"
(cd "$proj" && "$EA" deploy --filter hello-lua) >"$tmp/out" 2>"$tmp/err"
expect "deploy without credentials: exit 1" 1 $?
contains "deploy without credentials: the server's 401" "the server refused the deployment (401)" "$tmp/err"

# --- --filter, and a redeploy that updates
sed 's/Hello, /Hi, /' functions/hello-js/handler.js >"$proj/hello-js/handler.js"
em deploy -f stack.yml --filter 'hello-j*'
expect "--filter: exit 0" 0 "$rc"
contains "--filter: hello-js updated" "hello-js: updated, $U/function/hello-js" "$tmp/out"
lacks "--filter: hello-c left alone" "hello-c:" "$tmp/out"
lacks "--filter: hello-lua left alone" "hello-lua:" "$tmp/out"
inv hello-js Ember
expect "the update answers" "Hi, Ember!" "$(cat "$tmp/out")"
em deploy -f stack.yml --filter nothing-matches
expect "--filter matching nothing: exit 1" 1 "$rc"
contains "--filter matching nothing: said" "no function in stack.yml matches --filter 'nothing-matches'" "$tmp/err"
STACK_GREETING=again
em deploy
expect "redeploy (stack.yml by default): exit 0" 0 "$rc"
for f in hello-c hello-js hello-lua; do contains "redeploy: $f updated" "$f: updated" "$tmp/out"; done
expect "status after the redeploy" 200 "$(http GET /system/function/hello-c)"
json 'j["envVars"]["GREETING"] == "again"' "redeploy: the new environment"
inv hello-c Ember
expect "redeployed C still answers" "Hello, Ember!" "$(cat "$tmp/out")"

# --- images: a file, and one uploaded before by its faas-cli reference; the gateway flag
cat >"$proj/images.yml" <<EOF
provider:
  name: openfaas
  gateway: http://127.0.0.1:1
functions:
  prebuilt:
    image: $BA/functions/hello
    handler: ./ignored
  by-ref:
    image: ghcr.io/example/hello-c:0.2.0
EOF
em deploy -f images.yml --gateway "$U"
expect "image file and image reference, --gateway over provider.gateway: exit 0" 0 "$rc"
contains "the file is uploaded" "prebuilt: uploaded image prebuilt" "$tmp/out"
contains "the reference names an uploaded image" "by-ref: image hello-c, uploaded before" "$tmp/out"
contains "handler without lang: a warning" "functions.prebuilt.handler is ignored without lang" "$tmp/err"
inv prebuilt Ember
expect "invoke prebuilt" "Hello, Ember!" "$(cat "$tmp/out")"
inv by-ref Ember
expect "invoke by-ref" "Hello, Ember!" "$(cat "$tmp/out")"

# --- a python handler: lang python3 (faas-cli's template name), deployed as runtime python
mkdir -p "$proj/hello-py"
cp tests/python/hello.py "$proj/hello-py/handler.py"
# and one with files: a folder beside the stack file, packed by ember deploy into files
mkdir -p "$proj/table-py" "$proj/tabledata/data"
cp tests/python/datafile.py "$proj/table-py/handler.py"
python3 -c 'import csv, sys
w = csv.writer(open(sys.argv[1], "w", newline="")); w.writerow(["key", "value", "n"])
for i in range(50): w.writerow(["k%d" % i, "v" * (i % 7), i])' "$proj/tabledata/data/table.csv"
ln -s data/table.csv "$proj/tabledata/table-link"
cat >"$proj/py.yml" <<'EOF'
provider:
  name: openfaas
functions:
  hello-py:
    lang: python3
    handler: ./hello-py
  table-py:
    lang: python
    handler: ./table-py
    files: ./tabledata
EOF
em deploy -f py.yml --gateway "$U"
expect "python functions: exit 0" 0 "$rc"
contains "the step line names the files" "files ./tabledata (3 entries" "$tmp/out"
inv hello-py Ember
expect "invoke hello-py" "Hello, Ember!" "$(cat "$tmp/out")"
inv table-py k8
expect "invoke table-py: it reads its files" \
	'{"rows": 50, "found": {"key": "k8", "value": "v", "n": "8"}}' "$(cat "$tmp/out")"
code=$(http GET /system/function/table-py)
contains "table-py's status has its files" '"files":{"bytes":' "$tmp/body"
# from another folder: the folder is relative to the stack file's
mkdir -p "$tmp/elsewhere"
# shellcheck disable=SC2086 # EAUTH is arguments
(cd "$tmp/elsewhere" && "$EA" deploy $EAUTH -f "$proj/py.yml" --gateway "$U") >"$tmp/out" 2>"$tmp/err"
expect "deployed from another folder: exit 0" 0 "$?"
contains "from another folder: the files found" "files $proj/tabledata (3 entries" "$tmp/out"

# --- Debian's dynamic jq as it is (image: its path) with a root filesystem of its ld.so and
# libraries (files: a folder beside the stack file)
mkdir -p "$proj/jqroot"
for f in $(ldd /usr/bin/jq | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i }'); do
	mkdir -p "$proj/jqroot$(dirname "$f")"
	cp -L "$f" "$proj/jqroot$f"
done
cp /usr/bin/jq "$proj/jq"
cat >"$proj/jq.yml" <<'EOF'
provider:
  name: openfaas
functions:
  jq-root:
    image: ./jq
    files: ./jqroot
EOF
em deploy -f jq.yml --gateway "$U"
expect "jq with its root filesystem: exit 0" 0 "$rc"
inv jq-root '{"a":[1,2]}'
printf '{"a":[1,2]}' | /usr/bin/jq >"$tmp/jqnative"
check "invoke jq-root: as natively" cmp -s "$tmp/out" "$tmp/jqnative"

# --- mistakes: refused with the file and line, nothing deployed
# mistake FILE WHAT TEXT: ember deploy -f FILE fails with TEXT on stderr, deploying nothing
mistake() {
	em deploy -f "$1"
	expect "$2: exit 1" 1 "$rc"
	contains "$2: said" "$3" "$tmp/err"
	expect "$2: nothing deployed" "by-ref hello-c hello-js hello-lua hello-py jq-root prebuilt table-py" "$(names)"
}
head_ok='provider:
  name: openfaas
functions:
  new-one:
    lang: js
    handler: ./hello-js'
printf '%s\n  bad: [\n    lang: js\n' "$head_ok" >"$proj/yaml.yml"
mistake yaml.yml "bad YAML" "yaml.yml:9:1: malformed YAML: did not find expected ',' or ']' (while parsing a flow sequence that starts on line 7)"
printf '%s\n   nope: x\n' "$head_ok" >"$proj/indent.yml"
mistake indent.yml "bad indentation" "indent.yml:7:"
printf '%s\n  gofn:\n    lang: go\n    handler: ./gofn\n' "$head_ok" >"$proj/lang.yml"
mistake lang.yml "unknown lang" "lang.yml:8: functions.gofn.lang: 'go' is not a language Ember runs"
printf '%s\n  df:\n    lang: dockerfile\n    handler: ./df\n' "$head_ok" >"$proj/df.yml"
mistake df.yml "lang dockerfile" "dockerfile is not supported"
printf '%s\n  nohandler:\n    lang: lua\n' "$head_ok" >"$proj/nohandler.yml"
mistake nohandler.yml "missing handler" "nohandler.yml:7: functions.nohandler: handler is missing"
printf '%s\n  empty:\n    lang: lua\n    handler: ./hello-c\n' "$head_ok" >"$proj/nofile.yml"
mistake nofile.yml "handler folder without handler.lua" "empty: no handler.lua in the handler folder"
printf '%s\n  gone:\n    lang: js\n    handler: ./not-there\n' "$head_ok" >"$proj/gone.yml"
mistake gone.yml "handler folder missing" "gone: handler ./not-there: No such file"
printf '%s\n  cbad:\n    lang: c\n    handler: ./bad-c\n' "$head_ok" >"$proj/cbad.yml"
mistake cbad.yml "C that does not compile" "cbad: building the handler: musl-gcc exited with status 1"
printf '%s\n  noimg:\n    image: "no such/Image"\n' "$head_ok" >"$proj/img.yml"
mistake img.yml "image neither a file nor a name" "image 'no such/Image' is neither a file"
printf '%s\n    environment: [a, b]\n' "$head_ok" >"$proj/type.yml"
mistake type.yml "environment of the wrong type" "type.yml:7: functions.new-one.environment must be a mapping"
printf '%s\n  new-one:\n    lang: lua\n' "$head_ok" >"$proj/twice.yml"
mistake twice.yml "a function given twice" "'new-one' is given twice (first on line 4)"
# shellcheck disable=SC2016 # the file's own ${...}
printf '%s\n    environment:\n      A: ${X:?no}\n' "$head_ok" >"$proj/subst.yml"
mistake subst.yml "an unsupported substitution" "subst.yml:8: functions.new-one.environment.A: '\${X:?no}': only"
printf 'provider:\n  name: faas\nfunctions:\n  a:\n    image: hello\n' >"$proj/prov.yml"
mistake prov.yml "provider.name" "prov.yml:2: provider.name must be openfaas"
printf 'functions:\n  Bad_Name:\n    image: hello\n' >"$proj/name.yml"
mistake name.yml "a bad function name" "function name 'Bad_Name' must match"
: >"$proj/empty.yml"
mistake empty.yml "an empty file" "empty.yml: empty"
mistake missing.yml "no such file" "missing.yml: No such file"
printf '%s\n    files: ./no-data\n' "$head_ok" >"$proj/nofiles.yml"
mistake nofiles.yml "files folder missing" "new-one: files ./no-data: No such file"
mkdir -p "$proj/pipedata" && mkfifo "$proj/pipedata/pipe"
printf '%s\n    files: ./pipedata\n' "$head_ok" >"$proj/pipefiles.yml"
mistake pipefiles.yml "a pipe in the files" "new-one: files ./pipedata: /pipe: not a file, folder or link"
printf '%s\n    files: [a]\n' "$head_ok" >"$proj/filestype.yml"
mistake filestype.yml "files of the wrong type" "filestype.yml:7: functions.new-one.files"

# the server refuses the second of three: the first stays deployed, the third is not tried
cat >"$proj/refused.yml" <<'EOF'
functions:
  first:
    lang: js
    handler: ./hello-js
  broken:
    lang: js
    handler: ./broken
  third:
    lang: lua
    handler: ./hello-lua
EOF
em deploy -f refused.yml --gateway "$U"
expect "refused by the server: exit 1" 1 "$rc"
contains "refused: the server's reason" "broken: the server refused the deployment (400): the function's initialisation failed: handler.js:2:" "$tmp/err"
contains "refused: where it stopped" "stopped at broken: 1 deployed before it, 1 not tried" "$tmp/err"
contains "refused: the first was deployed" "first: deployed" "$tmp/out"
expect "refused: first deployed, third not" "by-ref first hello-c hello-js hello-lua hello-py jq-root prebuilt table-py" "$(names)"

# --- invoke: failures, headers and query
inv nope x
expect "invoke an unknown function: exit 1" 1 "$rc"
contains "invoke an unknown function: the status" "nope: status 404" "$tmp/err"
printf 'functions:\n  fails:\n    lang: lua\n    handler: ./fails\n  meta:\n    image: %s\n  private:\n    image: %s\n    ember:\n      auth: true\n' \
	"$BA/guest/meta.musl" "$BA/guest/meta.musl" >"$proj/more.yml"
em deploy -f more.yml --gateway "$U"
expect "deploy fails, meta and a private one: exit 0" 0 "$rc"
inv private x
expect "invoke a private function without --auth: exit 1" 1 "$rc"
contains "invoke a private function without --auth: 401" "private: status 401" "$tmp/err"
inv private x --auth --secrets "$tmp/secrets"
expect "invoke a private function with --auth: exit 0" 0 "$rc"
contains "invoke a private function with --auth: its answer" "Http_Method=POST" "$tmp/out"
inv fails x
expect "invoke a failing function: exit 1" 1 "$rc"
contains "invoke a failing function: the status on stderr (502: the function's failure)" "fails: status 502" "$tmp/err"
expect "invoke a failing function: nothing on stdout" "" "$(cat "$tmp/out")"
inv meta x -H 'X-Trace: abc' --query k=1 --query name=two --method PUT --content-type application/json
expect "invoke with headers and query: exit 0" 0 "$rc"
for l in Http_Method=PUT Http_Query=k=1\&name=two Http_X_Trace=abc Http_Content_Type=application/json; do
	contains "invoke: $l reaches the function" "$l" "$tmp/out"
done
lacks "invoke: no credentials sent to a function" "Authorization" "$tmp/out"
inv hello-c x --gateway http://127.0.0.1:1
expect "invoke, nothing listening: exit 125" 125 "$rc"

# --- threaded programs: executables of build/corpus as images, with ember.cpus, ember.threads
# and limits.memory (Go 1.19's runtime fits in 1G); one vCPU per virtine on ptrace
if [ "$EMBER_BACKEND" = ptrace ]; then tcpus=1; else tcpus=2; fi
cat >"$proj/threads.yml" <<EOF
functions:
  pt:
    image: $BA/corpus/pt_create.musl
    ember:
      cpus: $tcpus
      threads: 17
  gohello:
    image: $BA/corpus/go_hello
    limits:
      memory: 1G
EOF
em deploy -f threads.yml --gateway "$U"
expect "pt_create and go_hello: exit 0" 0 "$rc"
contains "pt_create uploaded" "pt: uploaded image pt (" "$tmp/out"
inv pt pt
expect "invoke pt_create ($tcpus vCPUs): the native output" \
	"$(printf pt | "$B/corpus/pt_create.musl")" "$(cat "$tmp/out")"
inv gohello Ember
expect "invoke go_hello: the native output" "$(printf Ember | "$B/corpus/go_hello")" \
	"$(cat "$tmp/out")"
expect "status of pt" 200 "$(http GET /system/function/pt)"
json "j['ember']['cpus'] == $tcpus and j['ember']['threads'] == 17" \
	"pt: ember.cpus and ember.threads"
expect "status of gohello" 200 "$(http GET /system/function/gohello)"
json 'j["ember"]["cpus"] == 1 and j["ember"]["threads"] == 256 and j["limits"] == {"memory": "1G"}' \
	"gohello: the defaults, limits.memory"
# refused by the server, naming the field: the stack file passes ember: through as it is
for val in 'cpus: 0' 'cpus: 17' 'cpus: x' 'threads: 0'; do
	printf 'functions:\n  badcount:\n    image: %s\n    ember:\n      %s\n' \
		"$BA/corpus/pt_create.musl" "$val" >"$proj/badcount.yml"
	em deploy -f badcount.yml --gateway "$U"
	expect "ember: {$val}: exit 1" 1 "$rc"
	contains "ember: {$val}: the server's 400 names the field" \
		"badcount: the server refused the deployment (400): ember.${val%%:*} must be an integer" \
		"$tmp/err"
done
if [ "$EMBER_BACKEND" = ptrace ]; then
	printf 'functions:\n  ptwo:\n    image: %s\n    ember:\n      cpus: 2\n' \
		"$BA/corpus/pt_create.musl" >"$proj/ptwo.yml"
	em deploy -f ptwo.yml --gateway "$U"
	expect "ptrace: ember.cpus 2: exit 1" 1 "$rc"
	contains "ptrace: ember.cpus 2: the server's 400 says why" \
		"ptwo: the server refused the deployment (400): bad deployment: the ptrace backend runs one vCPU per virtine: cpus must be 1" \
		"$tmp/err"
fi

# --- the client's credentials, seen by a fake gateway that records Authorization
cat >"$tmp/fake.py" <<'EOF'
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.record()
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.record()
    def record(self):
        with open(sys.argv[2], "a") as f:
            f.write("%s %s %s\n" % (self.command, self.path, self.headers.get("Authorization", "-")))
        body = b"[]" if self.path == "/system/functions" else b"ok"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(sys.argv[1] + ".tmp", "w").write(str(s.server_address[1]))
__import__("os").rename(sys.argv[1] + ".tmp", sys.argv[1])
s.serve_forever()
EOF
python3 "$tmp/fake.py" "$tmp/fake.port" "$tmp/fake.log" &
fake=$!
await "the fake gateway" test -s "$tmp/fake.port"
F=http://127.0.0.1:$(cat "$tmp/fake.port")
mkdir -p "$tmp/secrets"
printf 'admin\n' >"$tmp/secrets/basic-auth-user"
printf 's3cret' >"$tmp/secrets/basic-auth-password"
{
	"$E" list --gateway "$F" --secrets "$tmp/secrets"
	EMBER_GATEWAY_USER=env EMBER_GATEWAY_PASSWORD=pw "$E" list --gateway "$F"
	env -u EMBER_GATEWAY_USER "$E" list --gateway "$F"
	echo x | EMBER_GATEWAY_USER=env EMBER_GATEWAY_PASSWORD=pw "$E" invoke f --gateway "$F"
	echo x | EMBER_GATEWAY_USER=env EMBER_GATEWAY_PASSWORD=pw "$E" invoke f --auth --gateway "$F"
} >/dev/null 2>"$tmp/err"
printf '%s\n' "GET /system/functions Basic $(printf admin:s3cret | base64)" \
	"GET /system/functions Basic $(printf env:pw | base64)" \
	"GET /system/functions -" "POST /function/f -" \
	"POST /function/f Basic $(printf env:pw | base64)" >"$tmp/want"
if cmp -s "$tmp/want" "$tmp/fake.log"; then
	ok "credentials: --secrets, then the environment; invoke only with --auth"
else
	bad "credentials: $(tr '\n' '|' <"$tmp/fake.log") wanted $(tr '\n' '|' <"$tmp/want")"
fi
"$E" list --gateway "$F" --secrets "$tmp/nope" >/dev/null 2>"$tmp/err"
expect "--secrets without the files: exit 125" 125 $?
contains "--secrets without the files: said" "cannot read $tmp/nope/basic-auth-user" "$tmp/err"
kill "$fake"
wait "$fake" 2>/dev/null
fake=

# --- faas-cli's requests, replayed (tests/integration/faas-cli/README.md)
expect "upload hello (faas-cli's image is built elsewhere)" 201 \
	"$(http PUT /system/images/hello --data-binary @"$B/functions/hello")"
expect "faas-cli version: 200" 200 "$(replay version.http)"
decodes GatewayInfo "faas-cli version: a GatewayInfo"
json 'j["provider"]["provider"] == "ember" and j["version"]["release"]' "faas-cli version: provider and release"
expect "faas-cli login: 200" 200 "$(replay login.http)"
expect "faas-cli login without credentials: 401" 401 "$(NOAUTH=1 replay login.http)"
expect "faas-cli deploy without login: 401" 401 "$(NOAUTH=1 replay deploy-create.http)"
expect "faas-cli describe before the deploy: 404" 404 "$(replay describe.http)"
expect "faas-cli deploy, PUT first: 404" 404 "$(replay deploy-update.http)"
expect "faas-cli deploy, then POST: 202" 202 "$(replay deploy-create.http)"
decodes FunctionStatus "faas-cli deploy: the answer is a FunctionStatus"
expect "faas-cli deploy again: PUT updates, 202" 202 "$(replay deploy-update.http)"
expect "faas-cli deploy, POST of an existing one: 409" 409 "$(replay deploy-create.http)"
expect "faas-cli invoke: 200" 200 "$(replay invoke.http)"
expect "faas-cli invoke: the answer" "Hello, faas-cli!" "$(cat "$tmp/body")"
expect "faas-cli invoke --query -H: 200" 200 "$(replay invoke-query.http)"
expect "faas-cli invoke --query -H: the answer" "Hello, faas-cli!" "$(cat "$tmp/body")"
expect "faas-cli list: 200" 200 "$(replay list.http)"
decodes "[]FunctionStatus" "faas-cli list: a []FunctionStatus"
json '[f for f in j if f["name"] == "hello" and f["image"] == "hello" and f["invocationCount"] == 2 and f["replicas"] >= 1 and f["availableReplicas"] >= 0]' \
	"faas-cli list: hello, its image named by the last component, 2 invocations, replicas"
expect "faas-cli describe: 200" 200 "$(replay describe.http)"
decodes FunctionStatus "faas-cli describe: a FunctionStatus"
json 'j["name"] == "hello" and j["envVars"] == {"write_debug": "true"} and j["labels"] == {"com.openfaas.scale.min": "1"} and j["annotations"] == {"topic": "greetings"} and j["limits"]["memory"] == "64Mi" and j["usage"]["totalMemoryBytes"] > 0' \
	"faas-cli describe: the deployment's fields"
expect "faas-cli remove: 202" 202 "$(replay remove.http)"
expect "faas-cli remove again: 404" 404 "$(replay remove.http)"
expect "faas-cli describe after the remove: 404" 404 "$(replay describe.http)"
expect "faas-cli invoke after the remove: 404" 404 "$(replay invoke.http)"

kill -TERM "$pid"
wait "$pid"
expect "the server stops cleanly" 0 $?
pid=
finish
