#!/bin/sh
# `ember bench all`'s HTTP part: ember serve (hello, per backend) against bench/forkserver (a
# process per request by posix_spawn, and by fork: the OpenFaaS classic watchdog's model), each
# driven closed-loop by bench/loadgen at every concurrency level, with every request's latency.
#
# Environment: B (build folder, default build), OUT (results folder, required), BACKENDS
# (default "kvm ptrace"), CONCS (default "1 2 4 8 16"), SECS (seconds per point, default 3).
# Writes OUT/results.txt, one line per point: "TARGET CONNS LOAD due=... p99_us=..." (loadgen's
# line), and OUT/samples/TARGET-CONNS.txt (loadgen -s: "SECONDS LATENCY_US OK"). Progress on
# stderr. Installs nothing; needs a build (make all) and curl.
set -eu
cd "$(dirname "$0")/.."
NAME=http_sweep.sh
B=${B:-build}
: "${OUT:?OUT must name the results folder}"
BACKENDS=${BACKENDS:-kvm ptrace}
CONCS=${CONCS:-1 2 4 8 16}
SECS=${SECS:-3}
. bench/serve_lib.sh
for f in "$B/ember" "$B/functions/hello" "$B/bench/forkserver" "$B/bench/loadgen"; do
	[ -x "$f" ] || die "$f is missing (make all builds it)"
done
mkdir -p "$OUT/samples"
: >"$OUT/results.txt"

# sweep TARGET URL: one closed-loop loadgen run per concurrency level
sweep() {
	for c in $CONCS; do
		echo "$NAME: $1: $c connections, ${SECS}s" >&2
		line=$("$B/bench/loadgen" -r 0 -c "$c" -d "$SECS" -w 'Hello, Ember!\n' \
			-s "$OUT/samples/$1-$c.txt" "$2") || die "loadgen failed on $2"
		echo "$1 $c $line" >>"$OUT/results.txt"
	done
}

for be in $BACKENDS; do
	serve_start "$be" "$tmp/state-$be" "$tmp/ember-$be.log"
	st=$(curl -s -u "$AUTH" -o "$tmp/resp" -w '%{http_code}' -X PUT \
		--data-binary @"$B/functions/hello" "$E/system/images/hello")
	[ "$st" = 201 ] || die "upload hello: HTTP $st: $(cat "$tmp/resp")"
	st=$(curl -s -u "$AUTH" -o "$tmp/resp" -w '%{http_code}' "$E/system/functions" \
		-d '{"service": "hello", "image": "hello"}')
	[ "$st" = 202 ] || die "deploy hello: HTTP $st: $(cat "$tmp/resp")"
	await "hello to answer" sh -c "curl -sf -d Ember '$E/function/hello' | grep -q 'Hello, Ember!'"
	sweep "ember_$be" "$E/function/hello"
	serve_stop
done

for mode in spawn fork; do
	opt=
	[ "$mode" = fork ] && opt=--fork
	# shellcheck disable=SC2086
	"$B/bench/forkserver" $opt 0 "$B/functions/hello" >"$tmp/fork-$mode.log" 2>&1 &
	fpid=$!
	stop_pids=$fpid # killed at exit if the sweep dies
	await "forkserver to listen" grep -qs 'listening on' "$tmp/fork-$mode.log"
	F=http://$(grep -m1 -oE '127\.0\.0\.1:[0-9]+' "$tmp/fork-$mode.log")
	sweep "forkserver_$mode" "$F/"
	kill "$fpid"
	wait "$fpid" 2>/dev/null || true
	stop_pids=
done
