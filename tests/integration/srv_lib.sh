# Shared helpers for the suites that drive a real `ember serve` on loopback (sourced after
# lib.sh, not run): a free port, polling waits, start/stop, requests with the test's
# credentials. POSIX sh. After sourcing: port, U (the server's URL), AUTH (curl's -u value for
# the credentials in $tmp/secrets), pid (the running server), and $tmp/server.log.
pid=
# shellcheck disable=SC2317 # run by the trap
srv_cleanup() {
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	[ -n "${SERVER_LOG:-}" ] && cp "$tmp/server.log" "$SERVER_LOG"
	rm -rf "$tmp"
}
trap srv_cleanup EXIT

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
port=$(free_port)
U=http://127.0.0.1:$port
make_secrets "$tmp/secrets"

# await WHAT CMD...: runs CMD until it succeeds, polling every 0.1 s; after AWAIT_POLLS polls a
# FAIL saying what never happened (the checks that follow then fail on the last state seen)
await() {
	aw_what=$1
	shift
	aw_n=0
	until "$@"; do
		aw_n=$((aw_n + 1))
		if [ $aw_n -ge "${AWAIT_POLLS:-600}" ]; then
			bad "gave up after $aw_n polls ($((aw_n / 10)) s) waiting for $aw_what"
			return 1
		fi
		sleep 0.1
	done
}

# start [SERVE ARGS...]: `ember serve` on $port with state in $tmp/state and the test's
# credentials, in the background; returns when /healthz answers. SERVE_ARGS (a variable) adds
# arguments to every start of a suite.
start() {
	# shellcheck disable=SC2086
	"$E" serve --listen "127.0.0.1:$port" --state "$tmp/state" --backend "$EMBER_BACKEND" \
		--secrets "$tmp/secrets" ${SERVE_ARGS:-} "$@" 2>>"$tmp/server.log" &
	pid=$!
	n=0
	until curl -sf "$U/healthz" >/dev/null 2>&1; do
		n=$((n + 1))
		if ! kill -0 "$pid" 2>/dev/null || [ $n -ge "${AWAIT_POLLS:-600}" ]; then
			echo "the server did not start ($n polls):"
			cat "$tmp/server.log"
			exit 1
		fi
		sleep 0.1
	done
}

# stop: SIGTERM, then the server's exit status (in rc too)
stop() {
	kill -TERM "$pid"
	wait "$pid"
	rc=$?
	pid=
	return $rc
}

# http METHOD PATH [CURL ARGS...]: the status code, with the test's credentials; the body lands
# in $tmp/body and the headers in $tmp/headers. NOAUTH=1 sends none.
http() {
	m=$1
	p=$2
	shift 2
	if [ -n "${NOAUTH:-}" ]; then
		curl -s -o "$tmp/body" -D "$tmp/headers" -w '%{http_code}' -X "$m" "$@" "$U$p"
	else
		curl -s -u "$AUTH" -o "$tmp/body" -D "$tmp/headers" -w '%{http_code}' -X "$m" "$@" \
			"$U$p"
	fi
}

# expect WHAT WANT GOT [BODY]: the status, and the body when given
expect() {
	if [ "$2" != "$3" ]; then
		bad "$1: status $3, wanted $2: $(head -c 300 "$tmp/body")"
	elif [ $# -ge 4 ] && [ "$(cat "$tmp/body")" != "$4" ]; then
		bad "$1: body '$(head -c 300 "$tmp/body")', wanted '$4'"
	else
		ok "$1"
	fi
}

# same WHAT WANT GOT: two values are equal
same() {
	if [ "$2" = "$3" ]; then
		ok "$1"
	else
		bad "$1: '$3', wanted '$2'"
	fi
}

# contains WHAT TEXT FILE: FILE contains TEXT (lib.sh's has matches an ERE, FILE first)
contains() {
	if grep -qF -- "$2" "$3"; then
		ok "$1"
	else
		bad "$1: no '$2' in $(head -c 300 "$3")"
	fi
}

# status_has NAME TEXT...: GET /system/function/NAME, its status code in $code and its body in
# $tmp/body; true when it is 200 and the body has every TEXT (all from the same snapshot)
# shellcheck disable=SC2317 # run by await
status_has() {
	sh_name=$1
	shift
	code=$(http GET "/system/function/$sh_name")
	[ "$code" = 200 ] || return 1
	for sh_t; do
		grep -qF -- "$sh_t" "$tmp/body" || return 1
	done
}
