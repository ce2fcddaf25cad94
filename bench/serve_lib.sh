# What bench/hostile.sh and bench/soak.sh share (sourced, not run): a temporary folder removed
# at exit (KEEP=1 keeps it), a server on a free port with its generated credentials, waits.
# Before sourcing: NAME (the script's, for messages) and B. After: tmp, and die, await,
# serve_start, serve_stop. Processes added to stop_pids are killed at exit.
tmp=$(mktemp -d)
epid=
stop_pids=
bench_cleanup() {
	rc=$?
	# shellcheck disable=SC2086
	[ -n "$stop_pids" ] && kill $stop_pids 2>/dev/null
	if [ -n "$epid" ]; then
		kill -TERM "$epid" 2>/dev/null || true
		wait "$epid" 2>/dev/null || true
	fi
	if [ "${KEEP:-0}" = 1 ]; then echo "kept $tmp" >&2; else rm -rf "$tmp"; fi
	exit $rc
}
trap bench_cleanup EXIT
trap 'exit 1' INT TERM HUP PIPE

die() {
	echo "$NAME: $*" >&2
	exit 1
}

# await WHAT CMD...: polls CMD every 0.1 s, up to 30 s
await() {
	what=$1
	shift
	i=0
	until "$@"; do
		i=$((i + 1))
		[ $i -lt 300 ] || die "gave up waiting for $what"
		sleep 0.1
	done
}

# serve_start BACKEND STATE LOG: ember serve on a free port of 127.0.0.1 with state folder STATE
# (its credentials generated in STATE/secrets) and SERVE_ARGS; sets epid, E (its URL) and AUTH
# (curl's -u)
serve_start() {
	# shellcheck disable=SC2086 # SERVE_ARGS is a list of arguments
	"$B/ember" serve --listen 127.0.0.1:0 --state "$2" --backend "$1" ${SERVE_ARGS:-} 2>"$3" &
	epid=$!
	await "the server to listen" grep -qs 'listening on' "$3"
	E=http://$(grep -m1 'listening on' "$3" | grep -oE '127\.0\.0\.1:[0-9]+' | tail -n1)
	await "the credentials" test -r "$2/secrets/basic-auth-password"
	AUTH="$(cat "$2/secrets/basic-auth-user"):$(cat "$2/secrets/basic-auth-password")"
}

# serve_stop: SIGTERM, and the server must exit 0
serve_stop() {
	kill -TERM "$epid"
	wait "$epid" || die "ember serve exited $?"
	epid=
}
