#!/bin/sh
# The main job of `make run`: the bundled example functions, answered by Ember.
#
# When the build has `ember serve`, starts the server on 127.0.0.1:8080 with its state in ./var,
# deploys hello (C, uploaded as an image) and hello-js (JavaScript) over HTTP, invokes each once,
# prints the answers and the console's address (/ui/) and keeps serving in the foreground until
# Ctrl-C.
# Otherwise runs every function in functions/ once with `ember run --backend auto` and its
# small request, and prints what each answered. Exits non-zero when an example fails.
set -eu
cd "$(dirname "$0")/.."
B=${B:-build}
E=$B/ember
ADDR=127.0.0.1:8080
URL=http://$ADDR
STATE=./var

[ -x "$E" ] || {
	echo "run-examples: $E is missing: run 'make all' first" >&2
	exit 1
}
tmp=$(mktemp -d)
pid=""
AUTH="" # the management API's credentials, once the server has made them

stop_server()
{
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	pid=""
}
trap 'stop_server; rm -rf "$tmp"' EXIT
serving=0 # 1 once the server runs in the foreground: Ctrl-C is then the normal way out
trap 'echo; stop_server; [ "$serving" = 1 ] && exit 0; exit 130' INT TERM

# show FILE: a response as text (UTF-8 without control characters), else its size
show()
{
	if [ ! -s "$1" ]; then
		echo "  (empty)"
	elif [ -n "$(LC_ALL=C tr -d '\t\n\r -~\200-\377' <"$1" | head -c 1)" ] ||
		! iconv -f UTF-8 -t UTF-8 "$1" >/dev/null 2>&1; then
		echo "  ($(wc -c <"$1") bytes of binary output)"
	else
		sed 's/^/  /' "$1"
		[ -z "$(tail -c 1 "$1")" ] || echo
	fi
}

# --- without a server: every example through `ember run` ---------------------------------------
run_each()
{
	failed=""
	backend=""
	for dir in functions/*/; do
		name=$(basename "$dir")
		req=$dir/small.req
		[ -f "$req" ] || continue
		if [ -f "$dir/main.c" ]; then
			set -- "$B/functions/$name"
		elif [ -f "$dir/handler.js" ]; then
			set -- --runtime js "$dir/handler.js"
		elif [ -f "$dir/handler.lua" ]; then
			set -- --runtime lua "$dir/handler.lua"
		else
			continue
		fi
		rc=0
		"$E" run --backend auto --stats "$@" <"$req" >"$tmp/out" 2>"$tmp/err" || rc=$?
		# the last line of stderr is the --stats JSON; the rest is the function's log
		stats=$(tail -n 1 "$tmp/err")
		sed '$d' "$tmp/err" >"$tmp/log"
		[ -n "$backend" ] ||
			backend=$(echo "$stats" | sed -n 's/.*"backend":"\([a-z]*\)".*/\1/p')
		verdict="matches small.out"
		if [ "$rc" != 0 ]; then
			verdict="FAILED (exit status $rc)"
			failed="$failed $name"
		elif ! cmp -s "$tmp/out" "$dir/small.out"; then
			verdict="DIFFERS from small.out"
			failed="$failed $name"
		fi
		echo "== $name ($verdict)"
		show "$tmp/out"
		[ -s "$tmp/log" ] && sed 's/^/  log: /' "$tmp/log"
	done
	echo
	echo "backend: ${backend:-unknown}$([ "$backend" = ptrace ] && echo ' (no usable /dev/kvm here)')"
	if [ -n "$failed" ]; then
		echo "failed:$failed"
		return 1
	fi
	echo "every example answered as expected"
}

# --- with a server ------------------------------------------------------------------------------
# http METHOD PATH [curl args...]: the status code on stdout, the body in $tmp/body
http()
{
	m=$1
	p=$2
	shift 2
	curl -sS ${AUTH:+-u "$AUTH"} -X "$m" -o "$tmp/body" -w '%{http_code}' "$@" "$URL$p" \
		2>"$tmp/curl" || echo 000
}

# deploy JSONFILE NAME: POST, or PUT when the state folder already holds NAME
deploy()
{
	code=$(http POST /system/functions -H 'Content-Type: application/json' --data-binary "@$1")
	if [ "$code" = 409 ]; then
		code=$(http PUT /system/functions -H 'Content-Type: application/json' \
			--data-binary "@$1")
	fi
	case $code in
	2??) echo "deployed $2" ;;
	*)
		echo "run-examples: deploying $2 failed (HTTP $code): $(cat "$tmp/body" "$tmp/curl")" >&2
		return 1
		;;
	esac
}

# invoke NAME REQUESTFILE
invoke()
{
	code=$(http POST "/function/$1" --data-binary "@$2")
	echo "== POST /function/$1 < $2: HTTP $code"
	show "$tmp/body"
	[ "$code" = 200 ]
}

# a JSON string's inside: backslashes, quotes, tabs, carriage returns escaped; lines joined by \n
json_escape()
{
	sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/\t/\\t/g' -e 's/\r/\\r/g' "$1" |
		sed -e ':a' -e 'N' -e '$!ba' -e 's/\n/\\n/g'
}

serve()
{
	if curl -s -o /dev/null "$URL/healthz" 2>/dev/null; then
		echo "run-examples: something already answers on $ADDR; stop it first" >&2
		return 1
	fi
	help=$("$E" serve --help 2>&1 || true)
	set --
	case $help in *--listen*) set -- "$@" --listen "$ADDR" ;; esac
	case $help in *--state*) set -- "$@" --state "$STATE" ;; esac
	case $help in *--backend*) set -- "$@" --backend auto ;; esac
	EMBER_BACKEND=auto "$E" serve "$@" &
	pid=$!
	echo "started: $E serve $* (pid $pid)"
	i=0
	until curl -sf -o /dev/null "$URL/healthz" 2>/dev/null; do
		if ! kill -0 "$pid" 2>/dev/null; then
			wait "$pid" 2>/dev/null || true
			pid=""
			echo "run-examples: the server exited before it answered /healthz" >&2
			return 1
		fi
		i=$((i + 1))
		if [ "$i" -gt 300 ]; then
			echo "run-examples: no answer on $URL/healthz after 30 s" >&2
			return 1
		fi
		sleep 0.1
	done

	# the management API's credentials, generated in the state folder at the first start
	sec=$STATE/secrets
	[ -r "$sec/basic-auth-password" ] && AUTH="$(cat "$sec/basic-auth-user"):$(cat "$sec/basic-auth-password")"
	code=$(http PUT /system/images/hello --data-binary "@$B/functions/hello")
	case $code in
	2??) echo "uploaded image hello ($(wc -c <"$B/functions/hello") bytes)" ;;
	*)
		echo "run-examples: uploading hello failed (HTTP $code): $(cat "$tmp/body" "$tmp/curl")" >&2
		return 1
		;;
	esac
	printf '{"service": "hello", "image": "hello"}' >"$tmp/hello.json"
	deploy "$tmp/hello.json" hello
	printf '{"service": "hello-js", "runtime": "duktape", "code": "%s"}' \
		"$(json_escape functions/hello-js/handler.js)" >"$tmp/hello-js.json"
	deploy "$tmp/hello-js.json" hello-js

	ok=1
	invoke hello functions/hello/small.req || ok=0
	invoke hello-js functions/hello-js/small.req || ok=0
	[ "$ok" = 1 ] || return 1
	echo
	echo "Ember serves on $URL (state in $STATE)."
	echo "The console: $URL/ui/ (user $(cat "$sec/basic-auth-user" 2>/dev/null || echo admin)," \
		"password in $sec/basic-auth-password)"
	echo "Try:"
	echo "  curl -d 'you' $URL/function/hello-js"
	echo "  curl -u \"\$(cat $sec/basic-auth-user):\$(cat $sec/basic-auth-password)\" $URL/system/functions"
	echo "Ctrl-C stops it."
	serving=1
	wait "$pid" || true
	pid=""
}

if "$E" serve --help >/dev/null 2>&1; then
	serve
else
	run_each
fi
