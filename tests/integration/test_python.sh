#!/bin/sh
# The static python runtime (--runtime python-static): handlers of tests/python against Debian's python3.11
# running the same handler (tests/python/native.py), warm, from a snapshot on disk and in both
# syscall modes; a syntax error and a raise at top level refused at load with file and line; a
# handler's exception exits 1 with its traceback on stderr; threads started and joined.
set -u
. "$(dirname "$0")/lib.sh"
pick_backend
PY=/usr/bin/python3.11
S=tests/python

# against NAME REQUEST MSG N ARGS...: ember run --runtime python-static of NAME (tests/python/NAME.py,
# or functions/NAME/handler.py) equals the native run, N times over (ARGS with --repeat N)
against()
{
	printf '%s' "$2" >"$tmp/in"
	f=$S/$1.py
	[ -f "$f" ] || f=functions/$1/handler.py
	"$PY" "$S/native.py" "$f" <"$tmp/in" >"$tmp/native" 2>/dev/null
	m=$3
	copies "$4" "$tmp/native"
	shift 4
	er --runtime python-static "$@" "$f"
	expect_rc 0 "$m"
	if cmp -s "$tmp/out" "$tmp/want"; then
		ok "$m: as python3.11 natively"
	else
		bad "$m: '$(head -c 200 "$tmp/out")', natively '$(head -c 200 "$tmp/native")'"
	fi
}

for mode in trap guest; do
	against hello "" "$mode: hello" 1 --syscalls "$mode"
	against hello "Ember" "$mode: hello Ember, 3 warm" 3 --syscalls "$mode" --repeat 3 --stats
	stats "j['init']['snapshot'] and all(i['warm'] for i in j['invocations'][1:])" \
		"$mode: init once, then warm"
	against json-py '{"items": [3, 1, "x", 2.5]}' "$mode: json round trip" 1 --syscalls "$mode"
	against stdlib "the cat and the hat" "$mode: the standard library" 1 --syscalls "$mode"
	against template-py "<i>a</i> b & c" "$mode: an HTML template" 1 --syscalls "$mode"
	against matmul-py "30" "$mode: a matrix multiply" 1 --syscalls "$mode"
	# a snapshot on disk, then a cold start from it
	against stdlib "cold" "$mode: snapshot on disk" 1 --syscalls "$mode" --state "$tmp/st-$mode"
	against stdlib "cold" "$mode: cold start" 1 --syscalls "$mode" --state "$tmp/st-$mode" \
		--cold --stats
	stats "j['invocations'][0]['cold'] is True" "$mode: it was a cold start"
done

req ""
er --runtime python-static "$S/syntax.py"
expect_rc 125 "a syntax error is refused at load"
has "$tmp/err" 'syntax\.py:3: SyntaxError' "the syntax error's file and line"
printf 'import os\n\nraise KeyError("no config")\ndef handler(i):\n    return i\n' >"$tmp/top.py"
er --runtime python-static "$tmp/top.py"
expect_rc 125 "a raise at top level is refused at load"
has "$tmp/err" "top\\.py:3: KeyError: 'no config'" "the raise's file, line and exception"
printf 'x = 1\n' >"$tmp/nohandler.py"
er --runtime python-static "$tmp/nohandler.py"
expect_rc 125 "no handler is refused at load"
has "$tmp/err" "must define a function 'handler'" "no handler: the reason"
er --runtime python-static "$S/raises.py"
expect_rc 1 "a handler's exception"
has "$tmp/err" 'ZeroDivisionError: division by zero' "its traceback on stderr"
has "$tmp/err" 'raises\.py", line 3, in handler' "the traceback names the handler's line"
# threads: started, working under a lock and joined, as natively
for mode in trap guest; do
	against thread "" "threads ($mode)" 2 --syscalls "$mode" --repeat 2 --timeout 20
done
# files of its own beside the standard library: a table read before the snapshot
mkdir -p "$tmp/pyfiles/data"
"$PY" -c 'import csv, sys
w = csv.writer(open(sys.argv[1], "w", newline="")); w.writerow(["key", "value", "n"])
for i in range(20000): w.writerow(["k%d" % i, "v" * (i % 7), i])' "$tmp/pyfiles/data/table.csv"
EMBER_DATA=$tmp/pyfiles/data/table.csv
export EMBER_DATA # the native run's path to it; in the virtine it is /data/table.csv
for mode in trap guest; do
	against datafile "k123" "$mode: a data file of its own" 1 --syscalls "$mode" \
		--files "$tmp/pyfiles"
	against mmaps "abc" "$mode: the runtime's mmap, 2 warm" 2 --syscalls "$mode" --repeat 2 \
		--files "$tmp/pyfiles"
done
unset EMBER_DATA
mkdir -p "$tmp/clash/usr/lib/python3.11/json"
printf 'raise SystemExit\n' >"$tmp/clash/usr/lib/python3.11/json/__init__.py"
er --runtime python-static --files "$tmp/clash" "$S/hello.py"
expect_rc 125 "files that clash with the standard library are refused"
has "$tmp/err" 'json/__init__.py: given twice' "the clash is named"

# over HTTP: "runtime": "python-static" with the handler's source as code
. "$(dirname "$0")/srv_lib.sh"
# deployment SERVICE FILE: a python deployment of FILE's source
deployment()
{
	"$PY" -c 'import json, sys
print(json.dumps({"service": sys.argv[1], "runtime": "python-static", "code": open(sys.argv[2]).read()}))' \
		"$@" >"$tmp/deploy.json"
}
start
deployment py "$S/hello.py"
expect "deploy a python function" 202 "$(http POST /system/functions --data-binary @"$tmp/deploy.json")"
code=$(NOAUTH=1 http POST /function/py --data-binary Ember)
expect "invoke it" 200 "$code" "Hello, Ember!"
deployment pyjson functions/json-py/handler.py
expect "deploy one that takes env" 202 "$(http POST /system/functions --data-binary @"$tmp/deploy.json")"
code=$(NOAUTH=1 http POST /function/pyjson --data-binary '{"items": [1, 2]}')
expect "invoke it: env is a dict" 200 "$code" '{"count": 2, "env_is_dict": true, "sorted": [1, 2], "sum": 3}'
deployment pybad "$S/syntax.py"
expect "a syntax error: 400" 400 "$(http POST /system/functions --data-binary @"$tmp/deploy.json")"
contains "a syntax error: its line" "handler.py:3: SyntaxError" "$tmp/body"
deployment pyraise "$S/raises.py"
expect "deploy one that raises" 202 "$(http POST /system/functions --data-binary @"$tmp/deploy.json")"
code=$(NOAUTH=1 http POST /function/pyraise --data-binary '')
check "its exception is a 5xx ($code)" test "${code#5}" != "$code"
await "the traceback in the logs" sh -c 'curl -s -u "$1" "$2/system/logs?name=pyraise" | grep -q ZeroDivisionError' \
	sh "$AUTH" "$U" && ok "the traceback is in the logs"
tar -C "$tmp/pyfiles" -czf "$tmp/pyfiles.tgz" .
"$PY" -c 'import base64, json, sys
print(json.dumps({"service": "pydata", "runtime": "python-static", "code": open(sys.argv[1]).read(),
                  "files": base64.b64encode(open(sys.argv[2], "rb").read()).decode()}))' \
	"$S/datafile.py" "$tmp/pyfiles.tgz" >"$tmp/deploy.json"
expect "deploy python with files" 202 "$(http POST /system/functions --data-binary @"$tmp/deploy.json")"
code=$(NOAUTH=1 http POST /function/pydata --data-binary k8)
expect "it reads its data file" 200 "$code" '{"rows": 20000, "found": {"key": "k8", "value": "v", "n": "8"}}'
stop
finish
