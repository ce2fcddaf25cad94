#!/bin/sh
# The runtimes node and python3 (Debian's Node.js and CPython, unmodified) and functions whose
# files are a root filesystem: modern JavaScript (ES2022, async, require of the function's
# node_modules, an ES module), Python's standard library (decimal, threading, concurrent.futures,
# sqlite3, json) and numpy, Ember's handler form and OpenFaaS's (node18, python3-http) with the
# status and headers of their response head over HTTP; load errors with file and line, a handler
# that throws, a fresh state per invocation; a root filesystem from a tar and a folder, through
# `ember run --files` and a deployment's envProcess, an OCI image layout (unpacked by umoci), a
# stack file's fprocess, and what they are refused with. On the QEMU
# route (SUITE_SIZES=small) only the first part: an ES2022 handler and the standard library.
set -u
. "$(dirname "$0")/lib.sh"
pick_backend
. "$(dirname "$0")/srv_lib.sh"
F=$tmp/fn
mkdir -p "$F/node_modules/greet" "$F/lib"

# the function's files: an npm-style package, a module of its own, an ES module beside it
cat >"$F/node_modules/greet/package.json" <<'EOF'
{"name": "greet", "version": "1.0.0", "main": "index.js"}
EOF
cat >"$F/node_modules/greet/index.js" <<'EOF'
module.exports = (who) => `hello, ${who}`;
EOF
cat >"$F/lib/shout.js" <<'EOF'
exports.shout = (s) => s.toUpperCase() + '!';
EOF
cat >"$F/lib/words.mjs" <<'EOF'
export const words = (s) => s.split(/\s+/).filter(Boolean);
export default 42;
EOF

# ES2022: a class with a private field and a static block, optional chaining, ??, a template
# literal, async/await, Array.prototype.at, Object.hasOwn; Ember's form, top-level declared
cat >"$tmp/es2022.js" <<'EOF'
class Counter {
	#n = 0;
	static made;
	static { Counter.made = 'static block'; }
	add(k) { this.#n += k; return this; }
	get n() { return this.#n; }
}
const greet = require('greet');
const { shout } = require('./lib/shout');
let calls = 0; // state: every invocation must start from the snapshot's 0
async function handler(input, env) {
	calls++;
	const c = new Counter().add(2).add(3);
	const wait = await new Promise((r) => setTimeout(() => r('awaited'), 1));
	return { greet: greet(input), shout: shout(input), n: c.n, made: Counter.made,
		 opt: env?.missing?.deep ?? 'nullish', last: [1, 2, 3].at(-1),
		 own: Object.hasOwn({ a: 1 }, 'a'), wait, calls };
}
EOF
req "Ember"
er --runtime node --files "$F" --repeat 2 "$tmp/es2022.js"
expect_rc 0 "node: an ES2022 handler with require of its files, twice"
W='{"greet":"hello, Ember","shout":"EMBER!","n":5,"made":"static block","opt":"nullish","last":3,"own":true,"wait":"awaited","calls":1}'
printf '%s%s' "$W" "$W" >"$tmp/want"
check "node: its result, and calls 1 both times (each invocation from the snapshot)" \
	cmp -s "$tmp/out" "$tmp/want"
[ "$rc" = 0 ] || sed 's/^/     | /' "$tmp/err" | tail -n 5

# an ES module: export default, an import of the function's files, a dynamic import of a built-in
cat >"$tmp/esm.mjs" <<'EOF'
import n, { words } from './lib/words.mjs';
import greet from 'greet';
const { createHash } = await import('node:crypto');
export default async function (event, context) {
	const w = words(event.body);
	return context.status(200).succeed({ n, count: w.length, greet: greet(w[0]),
		sha: createHash('sha256').update(event.body).digest('hex').slice(0, 8) });
}
EOF
req "virtines are small"
er --runtime node --files "$F" "$tmp/esm.mjs"
expect_rc 0 "node: an ES module (.mjs) importing its files and a package"
out_exact '{"n":42,"count":3,"greet":"hello, virtines","sha":"6e617492"}' "node: the ES module's result"
# the same source as handler.js: ESM syntax is told from CommonJS by Node's own SyntaxError
cp "$tmp/esm.mjs" "$tmp/esm-as.js"
er --runtime node --files "$F" "$tmp/esm-as.js"
out_exact '{"n":42,"count":3,"greet":"hello, virtines","sha":"6e617492"}' "node: ESM syntax in a .js file"

# errors: a syntax error at load (125, file and line), a throw at the top level, a handler that
# throws (Ember's form: exit 1, the stack on stderr)
printf 'const a = 1;\nconst b = ;\n' >"$tmp/syntax.js"
er --runtime node "$tmp/syntax.js"
expect_rc 125 "node: a syntax error at load"
has "$tmp/err" "syntax.js:2: SyntaxError" "node: the syntax error names file and line 2"
printf '\n\nthrow new RangeError("at the top");\n' >"$tmp/top.js"
er --runtime node "$tmp/top.js"
expect_rc 125 "node: a throw at the top level"
has "$tmp/err" "top.js:3: RangeError: at the top" "node: the throw names file, line and message"
printf 'function handler(x) { throw new TypeError("bad " + x); }\n' >"$tmp/throws.js"
req "input"
er --runtime node "$tmp/throws.js"
expect_rc 1 "node: a handler that throws"
has "$tmp/err" "handler failed: TypeError: bad input" "node: the throw on stderr"
printf 'module.exports = { nothing: 1 };\n' >"$tmp/none.js"
er --runtime node "$tmp/none.js"
expect_rc 125 "node: no handler"
has "$tmp/err" "none.js:1: TypeError: no handler" "node: no handler, said so"

# the loader runs its own per-request code once before the snapshot (prime(), ember.js): never
# the handler's code, nor a built-in its top level replaced; a request sees its own calls alone
cat >"$tmp/counts.js" <<'EOF'
'use strict'
const seen = { parse: 0, entries: 0, from: 0 };
const wrap = (o, k) => {
	const f = o[k];
	o[k] = function (...a) { seen[k]++; return f.apply(this, a); };
};
wrap(JSON, 'parse'), wrap(Object, 'entries'), wrap(Buffer, 'from');
module.exports = async (event, context) => context.succeed(JSON.stringify(seen));
EOF
req "x"
er --runtime node --repeat 2 "$tmp/counts.js"
expect_rc 0 "node: a handler that wraps built-ins the loader uses"
out_exact '{"parse":0,"entries":0,"from":0}{"parse":0,"entries":0,"from":0}' \
	"node: no call of them before the request's (the loader's priming calls none of the handler's)"

# Python: the standard library Debian ships, threads included; Ember's handler(input) form
cat >"$tmp/std.py" <<'EOF'
import concurrent.futures, decimal, hashlib, json, sqlite3, threading
db = sqlite3.connect(":memory:")
db.execute("create table t(x)")
seen = []  # state: every invocation must start from the snapshot's empty list
def handler(text):
    seen.append(text)
    d = decimal.Decimal(text) / decimal.Decimal(7)
    out = []
    t = threading.Thread(target=lambda: out.append(threading.current_thread().name != "MainThread"))
    t.start()
    t.join()
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as ex:
        squares = list(ex.map(lambda k: k * k, range(5)))
    db.execute("insert into t values (?)", (text,))
    n = db.execute("select count(*) from t").fetchone()[0]
    return {"d": str(d.quantize(decimal.Decimal("0.0001"))), "thread": out[0], "squares": squares,
            "rows": n, "seen": len(seen), "sha": hashlib.sha256(text.encode()).hexdigest()[:8]}
EOF
req "22"
er --runtime python3 --repeat 2 "$tmp/std.py"
expect_rc 0 "python3: decimal, threading, concurrent.futures, sqlite3, twice"
W='{"d": "3.1429", "thread": true, "squares": [0, 1, 4, 9, 16], "rows": 1, "seen": 1, "sha": "785f3ec7"}'
printf '%s%s' "$W" "$W" >"$tmp/want"
check "python3: its result, the same both times (each invocation from the snapshot)" \
	cmp -s "$tmp/out" "$tmp/want"
[ "$rc" = 0 ] || sed 's/^/     | /' "$tmp/err" | tail -n 5

# the QEMU route (SUITE_SIZES=small, under emulation) runs the part above: Node.js and CPython
# each loaded, snapshotted and run twice from the snapshot, with threads
if [ "${SUITE_SIZES:-}" = small ]; then
	echo "##### SUITE_SIZES=small: the rest runs natively #####"
	finish
fi

# numpy, as Debian's python3-numpy has it (scripts/setup.sh installs it), against python3
cat >"$tmp/np.py" <<'EOF'
import numpy as np
a = np.arange(256 * 256, dtype=np.float64).reshape(256, 256) % 7
def handler(text):
    b = a @ a.T
    return "%s %.1f" % (b.shape, float(b.trace()) + float(text))
EOF
req "0.5"
if [ -d /usr/lib/python3/dist-packages/numpy ]; then
	/usr/bin/python3.11 -c 'import sys; exec(open(sys.argv[1]).read()); print(handler("0.5"), end="")' \
		"$tmp/np.py" >"$tmp/native"
	er --runtime python3 "$tmp/np.py"
	expect_rc 0 "python3: numpy, a 256x256 matrix product"
	check "python3: numpy's result as natively ($(cat "$tmp/native"))" cmp -s "$tmp/out" "$tmp/native"
else
	bad "python3: numpy is not installed (scripts/setup.sh installs python3-numpy)"
fi
# the initialisation's exits (docs/benchmarks.md): the bundle's files stat'd, read and closed
# in the virtine after their open, ld.so's libraries found through the runtime's ld.so.cache,
# no inspect for the python3-http form; 812 before, 491 with them (guest mode on KVM)
req ""
er --runtime python3 --stats functions/hello-python/handler.py
expect_rc 0 "python3: hello-python"
stats "j['backend'] != 'kvm' or j['syscalls_mode'] != 'guest' or j['init']['exits'] <= 510" \
	"python3: hello-python's initialisation in at most 510 exits on KVM in guest mode"
printf 'x = 1\ndef handler(t)\n    return t\n' >"$tmp/syntax.py"
er --runtime python3 "$tmp/syntax.py"
expect_rc 125 "python3: a syntax error at load"
has "$tmp/err" "syntax.py:2: SyntaxError" "python3: the syntax error names file and line 2"
printf 'import json\nimport no_such_module\n' >"$tmp/noimp.py"
er --runtime python3 "$tmp/noimp.py"
expect_rc 125 "python3: an import that fails at load"
has "$tmp/err" "noimp.py:2: ModuleNotFoundError" "python3: the failed import names file and line"
printf 'def handler(t):\n    raise ValueError("bad " + t)\n' >"$tmp/raises.py"
req "input"
er --runtime python3 "$tmp/raises.py"
expect_rc 1 "python3: a handler that raises"
has "$tmp/err" "ValueError: bad input" "python3: the traceback on stderr"
# a pure-Python package among the function's files is importable
mkdir -p "$F/mypkg"
printf 'def twice(s):\n    return s + s\n' >"$F/mypkg/__init__.py"
printf 'import mypkg\ndef handler(t):\n    return mypkg.twice(t)\n' >"$tmp/pkg.py"
req "ab"
er --runtime python3 --files "$F" "$tmp/pkg.py"
printf 'abab' >"$tmp/want"
check "python3: a package of the function's files imported" cmp -s "$tmp/out" "$tmp/want"

# a root filesystem: busybox and a script, as a folder and as a tar (as docker export writes)
R=$tmp/rootfs
mkdir -p "$R/bin" "$R/app"
cp /bin/busybox "$R/bin/busybox"
printf 'echo "rootfs: $(cat | busybox tr a-z A-Z)"\n' >"$R/app/run.sh"
tar -C "$R" -cf "$tmp/rootfs.tar" .
req "from the tar"
er --files "$tmp/rootfs.tar" /bin/busybox sh /app/run.sh
expect_rc 0 "a root filesystem (tar): its own /bin/busybox"
out_is "rootfs: FROM THE TAR" "a root filesystem (tar)"
req "from the folder"
er --files "$R" /bin/busybox sh /app/run.sh
out_is "rootfs: FROM THE FOLDER" "a root filesystem (folder)"
er --files "$R" /bin/no-such-program
expect_rc 125 "a root filesystem: a program in neither it nor the host"
has "$tmp/err" "no-such-program" "a root filesystem: the missing program named"
# a tar whose path escapes its root is refused at load, and nothing runs
python3 - "$tmp/escape.tar" <<'EOF'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    data = b"escaped"
    i = tarfile.TarInfo("../outside.txt")
    i.size = len(data)
    t.addfile(i, io.BytesIO(data))
EOF
er --files "$tmp/escape.tar" /bin/busybox true
expect_rc 125 "a tar with a path escaping its root: refused"
has "$tmp/err" "outside.txt|\\.\\." "a tar with a path escaping its root: the path named"

# an OCI image layout (as umoci and skopeo write one), unpacked by Debian's umoci: the same tree
O=$tmp/oci
if command -v umoci >/dev/null 2>&1; then
	umoci init --layout "$O" && umoci new --image "$O:v1" &&
		umoci insert --image "$O:v1" "$R" / >/dev/null 2>&1
	check "an OCI image layout made by umoci" test -f "$O/oci-layout"
	req "from the image"
	er --files "$O:v1" /bin/busybox sh /app/run.sh
	out_is "rootfs: FROM THE IMAGE" "a root filesystem (an OCI image layout, tag v1)"
	er --files "$O:nope" /bin/busybox true
	expect_rc 125 "an OCI image layout without that tag"
	has "$tmp/err" "tag is not found: nope" "the missing tag, in umoci's words"
	check "nothing of the unpacked images left in \$TMPDIR" \
		sh -c "! ls -d '${TMPDIR:-/tmp}'/ember-oci-* 2>/dev/null"
else
	bad "umoci is missing (scripts/setup.sh installs it): OCI image layouts not tested"
fi

# over HTTP: OpenFaaS's node18 and python3-http forms with their status and headers, a root
# filesystem deployed with envProcess, and what a deployment is refused with
start
deploy() {
	python3 -c 'import json, sys
d = {"service": sys.argv[1]}
if sys.argv[2] == "files":
    import base64
    d["files"] = base64.b64encode(open(sys.argv[3], "rb").read()).decode()
    d["envProcess"] = sys.argv[4]
else:
    d["runtime"] = sys.argv[2]
    d["code"] = open(sys.argv[3]).read()
print(json.dumps(d))' "$@" >"$tmp/spec"
	http POST /system/functions -H 'Content-Type: application/json' --data-binary @"$tmp/spec"
}
cat >"$tmp/of.js" <<'EOF'
'use strict'
module.exports = async (event, context) => {
	console.log('a log line, never the body');
	if (event.query.fail)
		return context.fail('it failed');
	if (event.query.bad)
		return context.status(400).fail(new Error('bad input'));
	return context.status(201).headers({ 'X-Kind': 'node18', 'Content-Type': 'application/json' })
		.succeed({ got: event.body, method: event.method, q: event.query.q, path: event.path,
			   agent: event.headers['x-test'] });
}
EOF
code=$(deploy ofnode node "$tmp/of.js")
expect "deploy an OpenFaaS node18 handler (runtime node)" 202 "$code"
code=$(http POST '/function/ofnode/sub/path?q=7' -H 'Content-Type: application/json' \
	-H 'X-Test: yes' --data-binary '{"a":[1,2]}')
expect "node18 form: the status the handler set" 201 "$code" \
	'{"got":{"a":[1,2]},"method":"POST","q":"7","path":"/sub/path","agent":"yes"}'
contains "node18 form: its header" "X-Kind: node18" "$tmp/headers"
contains "node18 form: its content type" "Content-Type: application/json" "$tmp/headers"
code=$(http POST '/function/ofnode?fail=1' --data-binary 'x')
expect "node18 form: context.fail is a 500 with its text" 500 "$code" "it failed"
code=$(http POST '/function/ofnode?bad=1' --data-binary 'x')
expect "node18 form: fail after status(400) keeps the 400" 400 "$code" "Error: bad input"
printf 'module.exports = (event, context, callback) => callback(undefined, { via: "callback" });\n' \
	>"$tmp/cb.js"
code=$(deploy ofcb node "$tmp/cb.js")
expect "deploy a node18 handler using the callback argument" 202 "$code"
code=$(http POST /function/ofcb --data-binary 'x')
expect "node18 form: callback(err, result)" 200 "$code" '{"via":"callback"}'
cat >"$tmp/of.py" <<'EOF'
import json
from decimal import Decimal
def handle(event, context):
    if event.query.get("bad"):
        raise KeyError("no such thing")
    total = sum(Decimal(x) for x in json.loads(event.body)["n"])
    return {"statusCode": 202, "body": {"total": str(total), "method": event.method,
                                        "ctype": event.headers.get("content-type")},
            "headers": {"X-Kind": "python3-http"}}
EOF
code=$(deploy ofpy python3 "$tmp/of.py")
expect "deploy an OpenFaaS python3-http handler (runtime python3)" 202 "$code"
code=$(http PUT /function/ofpy -H 'Content-Type: application/json' --data-binary '{"n":["1.10","2.20"]}')
expect "python3-http form: its statusCode and body, headers in any case" 202 "$code" \
	'{"total": "3.30", "method": "PUT", "ctype": "application/json"}'
contains "python3-http form: its header" "X-Kind: python3-http" "$tmp/headers"
contains "python3-http form: a dict body is JSON" "Content-Type: application/json" "$tmp/headers"
code=$(http POST '/function/ofpy?bad=1' --data-binary '{}')
expect "python3-http form: an exception is a 500 that tells nothing of it" 500 "$code" \
	"Internal Server Error"
# what the server holds for the two runtimes besides their virtines: each one's files are the
# packed file kept in its state folder (page cache), not a memfd packed at the load; Node.js's
# program is mapped from its file, not read into the heap; on KVM a snapshot's pages are held
# once, in its image or the page store, with no copy of its own
check "the runtimes' packed files are the state folder's, not memory" \
	sh -c "! grep -q 'memfd:ember-bundle' /proc/$pid/maps"
check "Node.js's program mapped from its file, not held in the heap" \
	grep -q ' /usr/bin/node$' "/proc/$pid/maps"
[ "$EMBER_BACKEND" = kvm ] && check "no snapshot holds a copy of its own beside its image" \
	sh -c "! grep -q 'memfd:ember-snapshot' /proc/$pid/maps"
code=$(deploy rfs files "$tmp/rootfs.tar" "/bin/busybox sh /app/run.sh")
expect "deploy a root filesystem (tar) with envProcess" 202 "$code"
code=$(http POST /function/rfs --data-binary 'over http')
expect "the root filesystem's program answers" 200 "$code" "rootfs: OVER HTTP"
# a stack file's root filesystem: fprocess, and files an OCI image layout (ember deploy unpacks it)
cat >"$tmp/stack.yml" <<EOF
version: 1.0
provider:
  name: openfaas
  gateway: $U
functions:
  rfsoci:
    files: $O:v1
    fprocess: /bin/busybox sh /app/run.sh
EOF
"$E" deploy -f "$tmp/stack.yml" --secrets "$tmp/secrets" >"$tmp/out" 2>"$tmp/err"
rc=$?
expect_rc 0 "ember deploy of a stack file's root filesystem (fprocess, an OCI layout)"
code=$(http POST /function/rfsoci --data-binary 'from the stack')
expect "the stack file's root filesystem answers" 200 "$code" "rootfs: FROM THE STACK"
code=$(deploy rfsbad files "$tmp/rootfs.tar" "/bin/nope x")
expect "envProcess naming no program of the files: 400" 400 "$code"
contains "the missing program named" "/bin/nope" "$tmp/body"
printf 'module.exports = async () => {\n  return [1, 2;\n};\n' >"$tmp/bad.js"
code=$(deploy badjs node "$tmp/bad.js")
expect "a node handler with a syntax error: 400" 400 "$code"
contains "the runtime's message, with file and line" "handler.js:2: SyntaxError" "$tmp/body"
# a response head the server will not send: the function's fault, a 502 that says why
cat >"$tmp/head.py" <<'EOF'
import os
def handler(t):
    os.write(4, b"Content-Length: 3\n")
    return "x"
EOF
code=$(deploy badhead python3 "$tmp/head.py")
expect "deploy a handler writing a head the server owns" 202 "$code"
code=$(http POST /function/badhead --data-binary 'x')
expect "a head naming Content-Length: 502" 502 "$code"
contains "the 502 says why" "Content-Length is the server's to send" "$tmp/body"
# a challenge in the server's realm would have a browser send it the management credentials: a
# function may not give one; and the credentials a client sends never reach a function
cat >"$tmp/chal.py" <<'EOF'
import os
def handler(t, env):
    if t == "challenge":
        os.write(4, b'Status: 401\nWWW-Authenticate: Basic realm="Ember"\n')
    return env.get("Http_Authorization", "none")
EOF
code=$(deploy chal python3 "$tmp/chal.py")
expect "deploy a handler that answers with a challenge" 202 "$code"
code=$(NOAUTH=1 http POST /function/chal --data-binary 'challenge')
expect "a function's WWW-Authenticate: 502" 502 "$code"
contains "the 502 says why" "WWW-Authenticate is the server's to send" "$tmp/body"
code=$(http POST /function/chal --data-binary 'x')
expect "the server's credentials, sent to a public function, do not reach it" 200 "$code" "none"
stop
finish
