#!/bin/sh
# The python runtime: init (start-up and the handler's import, once before the snapshot) and the
# warm invocation of tests/python handlers, per backend and syscall mode (medians of R warm
# invocations of ember run --repeat), with exits; the peers are Debian's python3.11 running the
# same handler, a process per request (tests/python/native.py) and a warm interpreter loop.
set -eu
cd "$(dirname "$0")/.."
B=${B:-build}
R=${R:-200}
REQ=${REQ:-'{"items": [3, 1, 2]}'} # every handler's request
PY=/usr/bin/python3.11
. bench/backends.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

printf '%-8s %-8s %-6s %9s %11s %11s %11s\n' handler backend mode init_ms init_exits warm_p50_us exits
for h in ${HANDLERS:-hello json-py stdlib}; do
	for b in $BACKENDS; do
		for m in trap guest; do
			f=tests/python/$h.py
			[ -f "$f" ] || f=functions/$h/handler.py
			printf '%s' "$REQ" | "$B/ember" run --backend "$b" --syscalls "$m" --runtime python-static \
				--repeat "$R" --stats "$f" >/dev/null 2>"$tmp/stats"
			tail -n 1 "$tmp/stats" | "$PY" -c '
import json, statistics as s, sys
j = json.loads(sys.stdin.read()); iv = j["invocations"][1:]
print("%-8s %-8s %-6s %9.1f %11d %11.0f %11.0f" % (sys.argv[1], sys.argv[2], sys.argv[3],
    j["init"]["us"] / 1000, j["init"]["exits"], s.median(i["run_us"] for i in iv),
    s.median(i["exits"] for i in iv)))' "$h" "$b" "$m"
		done
	done
	# a process per request
	for i in 1 2 3 4 5 6 7 8 9 10 11; do
		a=$(date +%s%N)
		printf '%s' "$REQ" | "$PY" tests/python/native.py "$f" >/dev/null
		z=$(date +%s%N)
		echo $(((z - a) / 1000))
	done | sort -n | sed -n 6p | awk -v h="$h" '{printf "%-8s native   process %23s %11.0f\n", h, "", $1}'
	# a warm interpreter: the handler called again and again in one process
	"$PY" -c '
import sys, timeit
g = {"__name__": "__main__"}
exec(compile(open(sys.argv[1]).read(), sys.argv[1], "exec"), g)
h = g["handler"]
two = h.__code__.co_argcount >= 2
r = sys.argv[3]
f = (lambda: h(r, {})) if two else (lambda: h(r))
n = 2000
print("%-8s native   loop %26s %11.1f" % (sys.argv[2], "", min(timeit.repeat(f, number=n, repeat=5)) / n * 1e6))' \
		"$f" "$h" "$REQ"
done
