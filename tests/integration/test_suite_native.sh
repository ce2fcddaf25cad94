#!/bin/sh
# The function suite run natively: every function on its requests against the checked-in .out
# files, the musl build of each C function against its glibc twin, and the runtimes' contract for
# bad sources (exit 65, "<file>:<line>:") and failing handlers (exit 1).
# Run from the repository root; B is the build directory (default build). One line per check.
set -u
B=${B:-build}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
pass=0
fail=0

ok() {
	pass=$((pass + 1))
	echo "ok   $1"
}

bad() {
	fail=$((fail + 1))
	echo "FAIL $1"
	[ -s "$tmp/err" ] && sed 's/^/     | /' "$tmp/err" | head -n 8
}

# run DIR PROG REQ OUT: runs the function in DIR (PROG: C binary, or runtime for handler.*)
run() {
	if [ -f "$1/handler.js" ]; then
		"$2" handler.js 3<"$1/handler.js" <"$3" >"$4" 2>"$tmp/err"
	elif [ -f "$1/handler.lua" ]; then
		"$2" handler.lua 3<"$1/handler.lua" <"$3" >"$4" 2>"$tmp/err"
	else
		"$2" <"$3" >"$4" 2>"$tmp/err"
	fi
}

for dir in functions/*; do
	name=${dir#functions/}
	if [ -f "$dir/runtime" ]; then
		continue # Node.js's and CPython's (functions/NAME/runtime): test_runtimes'
	elif [ -f "$dir/handler.js" ]; then
		prog=$B/runtimes/js
	elif [ -f "$dir/handler.lua" ]; then
		prog=$B/runtimes/lua
	elif [ -f "$dir/main.c" ]; then
		prog=$B/functions/$name
	else
		continue
	fi
	for size in small large; do
		req=$dir/$size.req
		out=$tmp/$name.$size
		[ -f "$req" ] || continue
		: >"$tmp/err"
		if ! run "$dir" "$prog" "$req" "$out"; then
			bad "$name/$size: exit status $?"
			continue
		fi
		if [ -f "$dir/$size.out" ]; then
			if cmp -s "$out" "$dir/$size.out"; then
				ok "$name/$size: matches $size.out"
			else
				bad "$name/$size: differs from $size.out"
			fi
		else
			ok "$name/$size: runs (no $size.out)"
		fi
		[ -f "$dir/main.c" ] || continue
		: >"$tmp/err"
		if run "$dir" "$prog.glibc" "$req" "$out.glibc" && cmp -s "$out" "$out.glibc"; then
			ok "$name/$size: musl and glibc builds agree"
		else
			bad "$name/$size: musl and glibc builds disagree"
		fi
	done
done

# properties of outputs too large to check in
: >"$tmp/err"
for size in small large; do
	if gzip -dc <"$tmp/compress.$size" | cmp -s - functions/compress/$size.req; then
		ok "compress/$size: gunzip gives the request back"
	else
		bad "compress/$size: gunzip does not give the request back"
	fi
	r=$B/functions/image_rotate
	if "$r" <"$tmp/image_rotate.$size" | "$r" | "$r" | "$r" | cmp -s - "$tmp/image_rotate.$size"; then
		ok "image_rotate/$size: four more rotations give the same image"
	else
		bad "image_rotate/$size: four more rotations change the image"
	fi
done

# the C, JavaScript and Lua versions of a function answer the same
for pair in hello:hello-js hello:hello-lua aes:aes-js; do
	for size in small large; do
		if cmp -s "functions/${pair%:*}/$size.out" "functions/${pair#*:}/$size.out"; then
			ok "${pair%:*}/$size: same answer as ${pair#*:}"
		else
			bad "${pair%:*}/$size: not the same answer as ${pair#*:}"
		fi
	done
done

# expect NAME RUNTIME FILE STATUS PATTERN SOURCE: runs SOURCE as FILE, wants STATUS and PATTERN
expect() {
	printf '%b' "$6" >"$tmp/$3"
	echo request | "$2" "$3" 3<"$tmp/$3" >"$tmp/out" 2>"$tmp/err"
	st=$?
	if [ "$st" = "$4" ] && grep -q "$5" "$tmp/err"; then
		ok "$1: exit $st, $(head -n 1 "$tmp/err")"
	else
		bad "$1: exit $st (want $4 and a message matching '$5')"
	fi
}

js=$B/runtimes/js
lua=$B/runtimes/lua
expect "js syntax error" "$js" syntax.js 65 'syntax\.js:2: SyntaxError' \
	'function handler(req) {\n  return "a" +;\n}\n'
expect "js without handler" "$js" nohandler.js 65 'nohandler\.js:[0-9][0-9]*:.*handler' \
	'var x = 1;\nfunction handle(req) {\n  return req;\n}\n'
expect "js top-level throw" "$js" toplevel.js 65 'toplevel\.js:3: ReferenceError' \
	'var x = 1;\n\nmissing();\nfunction handler(req) {}\n'
expect "js handler throws" "$js" throws.js 1 'at handler (throws\.js:3)' \
	'function handler(req) {\n  var x = 1;\n  throw new Error("no " + req);\n}\n'
expect "lua syntax error" "$lua" syntax.lua 65 'syntax\.lua:3:' \
	'function handler(req)\n  return "a" ..\nend\n'
expect "lua without handler" "$lua" nohandler.lua 65 'nohandler\.lua:[0-9][0-9]*:.*handler' \
	'local x = 1\nfunction handle(req)\n  return req\nend\n'
expect "lua handler error" "$lua" throws.lua 1 'throws\.lua:3: no request' \
	'function handler(req)\n  local x = 1\n  error("no " .. req)\nend\n'

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
