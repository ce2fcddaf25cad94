#!/bin/sh
# The function suite inside virtines: every function on its requests, warm (--repeat 2, from the
# snapshot), on a clean shell (--no-snapshot) and, in the sharing modes off and ksm, restored
# from disk into a new virtine in that mode (--state --cold twice), against the native
# run's output and the checked-in .out files (and, for Python handlers, Debian's python3.11 running them), with the
# files the build made for a function (functions/NAME/files.py) as its --files; and the
# load-time errors of bad JavaScript and Lua sources (exit 125).
# Run from the repository root; B is the build directory (default build). One line per check.
set -u
. "$(dirname "$0")/lib.sh"
pick_backend

ms()
{
	echo $(($(date +%s%N) / 1000000))
}

# same N FILE: the last run's stdout is N copies of FILE
same()
{
	copies "$1" "$2"
	cmp -s "$tmp/out" "$tmp/want"
}

# warm: invocations from the snapshot in the same virtine, reset in between; shell: a clean
# machine each. In the sharing modes other than upm, restore: the snapshot written to disk and
# restored into a new virtine in that mode (ksm: private anonymous copies, merged by KSM; off: a
# copy in the machine's memfd), the path a server's new virtines take (snap_restore), then reset.
modes="warm shell"
case "${EMBER_SHARING:-upm}" in off | ksm) modes="$modes restore" ;; esac

for dir in functions/*; do
	name=${dir#functions/}
	native=
	pynative=
	# Node.js's and CPython's functions (functions/NAME/runtime) are test_runtimes' and test_cold's
	if [ -f "$dir/runtime" ]; then
		continue
	elif [ -f "$dir/handler.js" ]; then
		set -- --runtime duktape "$dir/handler.js"
	elif [ -f "$dir/handler.lua" ]; then
		set -- --runtime lua "$dir/handler.lua"
	elif [ -f "$dir/handler.py" ]; then
		set -- --runtime python-static "$dir/handler.py"
		pynative=1
	elif [ -f "$dir/main.c" ]; then
		native=$B/functions/$name
		set -- "$native"
	else
		continue
	fi
	# files the build made for it (functions/NAME/files.py): --files, and natively EMBER_FILES
	files=
	if [ -f "$dir/files.py" ]; then
		files=$B/functions/$name/files
		if [ ! -d "$files" ]; then
			bad "$name: no $files (make functions builds it)"
			continue
		fi
		set -- --files "$files" "$@"
	fi
	for size in small large; do
		[ -f "$dir/$size.req" ] || continue
		cp "$dir/$size.req" "$tmp/in"
		# the expected outputs: the checked-in one, and for C functions the native run's
		wants=
		what=
		if [ -f "$dir/$size.out" ]; then
			wants=$dir/$size.out
			what=$size.out
		fi
		if [ -n "$native" ]; then
			if ! "$native" <"$tmp/in" >"$tmp/native" 2>"$tmp/err"; then
				bad "$name/$size: the native run failed"
				continue
			fi
			wants="$wants $tmp/native"
			what="${what:+$what and }the native run's"
		fi
		# a python handler: Debian's python3.11 running it is the native peer
		if [ -n "$pynative" ]; then
			if ! EMBER_FILES=$files /usr/bin/python3.11 tests/python/native.py \
				"$dir/handler.py" <"$tmp/in" >"$tmp/native" 2>"$tmp/err"; then
				bad "$name/$size: the native python3.11 run failed"
				continue
			fi
			wants="$wants $tmp/native"
			what="${what:+$what and }python3.11's"
		fi
		if [ -z "$wants" ]; then
			bad "$name/$size: no expected output"
			continue
		fi
		for mode in $modes; do
			t0=$(ms)
			if [ "$mode" = warm ]; then
				n=2
				er --repeat 2 "$@"
			elif [ "$mode" = restore ]; then
				# the first cold start records the working set (its pages served on
				# demand); the second reads the snapshot whole and restores it in
				# the sharing mode (snap_restore), then resets it for the third run
				n=3
				rm -rf "$tmp/state"
				er --state "$tmp/state" --cold "$@"
				mv "$tmp/out" "$tmp/out1"
				[ "$rc" = 0 ] && er --state "$tmp/state" --cold --repeat 2 --stats "$@"
				cat "$tmp/out1" "$tmp/out" >"$tmp/out2" && mv "$tmp/out2" "$tmp/out"
			else
				n=1
				er --no-snapshot "$@"
			fi
			t=$(($(ms) - t0))
			if [ "$rc" != 0 ]; then
				bad "$name/$size $mode: exit $rc"
				continue
			fi
			differ=
			for w in $wants; do
				same "$n" "$w" || differ="${differ:+$differ and }${w#"$tmp"/}"
			done
			if [ -n "$differ" ]; then
				bad "$name/$size $mode: output differs from $differ"
			elif [ "$mode" = restore ] && ! tail -n 1 "$tmp/err" | python3 -c '
import json, sys
j = json.loads(sys.stdin.read())
i = j["invocations"][0]
sys.exit(not (j["memory"]["sharing"] == sys.argv[1] and i["start"] == "cold" and
              i.get("cold_parts", {}).get("faults", 1) == 0))' "$EMBER_SHARING" 2>/dev/null; then
				bad "$name/$size $mode: not a restore read whole in sharing mode $EMBER_SHARING"
			else
				ok "$name/$size $mode: $n output(s) equal to $what (${t} ms)"
			fi
		done
	done
done

# expect NAME RUNTIME FILE PATTERN SOURCE: `ember run --runtime RUNTIME FILE` with FILE holding
# SOURCE fails at load: exit 125 and a message matching PATTERN (the file name and a line)
expect()
{
	printf '%b' "$5" >"$tmp/$3"
	req request
	er --runtime "$2" "$tmp/$3"
	if [ "$rc" = 125 ] && grep -Eq "$4" "$tmp/err"; then
		ok "$1: exit 125, $(head -n 1 "$tmp/err")"
	else
		bad "$1: exit $rc (want 125 and a message matching '$4')"
	fi
}

expect "lua without handler" lua nohandler.lua 'nohandler\.lua:[0-9]+:' \
	'local x = 1\nfunction handle(req)\n  return req\nend\n'
expect "js syntax error" js syntax.js 'syntax\.js:2:' \
	'function handler(req) {\n  return "a" +;\n}\n'

finish
