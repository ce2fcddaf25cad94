#!/bin/sh
# Warm invocations interleaved over many functions against one function alone, over HTTP.
#
# For each backend it starts build/ember serve on a free port with a temporary state folder,
# uploads build/functions/hello once and deploys it as FUNCS functions (hello-0 ... hello-N-1),
# calls each until it answers, then times ROUNDS rounds of two runs of DURATION seconds each,
# one connection, back to back (bench/loadgen's closed loop):
#   alone: every request to hello-0;
#   rr:    the requests round-robin over all FUNCS functions (loadgen -n): each function's
#          virtine runs once every FUNCS requests, after the others ran, as on a host that
#          serves many functions at once.
# Per run it reads loadgen's p50 and p99 and, from /metrics, the exits per invocation and the
# share of warm starts (a start that had to restore is not a warm one). Prints one line per run
# and a summary per backend: the medians over the rounds and rr / alone. The goal (issue 36):
# rr's p50 at most 2x alone's.
#
# Environment: B (build folder, default build), EMBER_BACKEND (kvm, ptrace, or both: the
# default where /dev/kvm works, else ptrace), FUNCS (100), DURATION (seconds per run, 5),
# ROUNDS (3), KEEP=1 keeps the temporary folder. Needs a build (make all) and curl.
set -eu
cd "$(dirname "$0")/.."
B=${B:-build}
FUNCS=${FUNCS:-100}
DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-3}
command -v curl >/dev/null 2>&1 || {
	echo "interleave.sh: curl is missing (make setup installs it)" >&2
	exit 2
}
for f in "$B/ember" "$B/functions/hello" "$B/bench/loadgen"; do
	[ -x "$f" ] || {
		echo "interleave.sh: $f is missing (make all builds it)" >&2
		exit 2
	}
done
# shellcheck source=bench/backends.sh
. bench/backends.sh

NAME=interleave.sh
# shellcheck source=bench/serve_lib.sh
. bench/serve_lib.sh

api() { # EXPECTED_STATUS CURL_ARGS...: a call to the API, which must answer EXPECTED_STATUS
	want=$1
	shift
	st=$(curl -s -u "$AUTH" -o "$tmp/resp" -w '%{http_code}' "$@")
	[ "$st" = "$want" ] || die "$*: HTTP $st: $(cat "$tmp/resp")"
}

# counters NAME: the sums /metrics has now: "EXITS_SUM INVOCATIONS WARM_STARTS ALL_STARTS"
counters() {
	curl -s -u "$AUTH" "$E/metrics" | awk '
		/^ember_exits_per_invocation_sum/ { s += $NF }
		/^ember_exits_per_invocation_count/ { n += $NF }
		/^ember_starts_total\{/ { all += $NF; if ($0 ~ /start="warm"/) w += $NF }
		END { printf "%d %d %d %d\n", s, n, w, all }'
}

# run MODE: one timed run; prints "MODE p50_us p99_us exits_per_invocation warm_share"
run() {
	before=$(counters)
	if [ "$1" = rr ]; then
		"$B/bench/loadgen" -r 0 -c 1 -d "$DURATION" -n "$FUNCS" -w 'Hello, Ember!\n' \
			"$E/function/hello" >"$tmp/load"
	else
		"$B/bench/loadgen" -r 0 -c 1 -d "$DURATION" -w 'Hello, Ember!\n' \
			"$E/function/hello-0" >"$tmp/load"
	fi
	after=$(counters)
	grep -q ' ok=' "$tmp/load" || die "loadgen printed no result"
	echo "$1 $before $after $(cat "$tmp/load")" | awk '{
		for (i = 10; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		inv = $7 - $3
		bad = v["due"] - v["ok"]
		printf "%s %d %d %.2f %.3f %d\n", $1, v["p50_us"], v["p99_us"],
			inv ? ($6 - $2) / inv : 0, ($9 - $5) ? ($8 - $4) / ($9 - $5) : 0, bad }'
}

median() { sort -n | awk '{ a[NR] = $1 } END { print NR ? a[int((NR + 1) / 2)] : 0 }'; }

for be in $BACKENDS; do
	st=$tmp/$be
	mkdir -p "$st"
	serve_start "$be" "$st/state" "$st/ember.log"
	echo "$be: ember serve on $E; deploying hello as $FUNCS functions" >&2
	api 201 -X PUT --data-binary @"$B/functions/hello" "$E/system/images/hello"
	i=0
	while [ $i -lt "$FUNCS" ]; do
		api 202 "$E/system/functions" -d "{\"service\": \"hello-$i\", \"image\": \"hello\"}"
		i=$((i + 1))
	done
	k=0 # not i: await counts with it
	while [ $k -lt "$FUNCS" ]; do
		await "hello-$k to answer" curl -sf -u "$AUTH" -o /dev/null -d Ember "$E/function/hello-$k"
		k=$((k + 1))
	done
	# a first pass of each, untimed: every function's pool refilled
	DURATION=2 run rr >/dev/null
	DURATION=2 run alone >/dev/null
	: >"$tmp/runs"
	r=0
	while [ $r -lt "$ROUNDS" ]; do
		for m in alone rr; do
			line=$(run $m)
			echo "$line" >>"$tmp/runs"
			echo "$be $line" | awk '{ printf "%-7s %-6s p50 %6d us  p99 %6d us  exits/inv %5.2f  warm %5.1f %%  errors %d\n", $1, $2, $3, $4, $5, 100 * $6, $7 }'
		done
		r=$((r + 1))
	done
	a50=$(awk '$1 == "alone" { print $2 }' "$tmp/runs" | median)
	r50=$(awk '$1 == "rr" { print $2 }' "$tmp/runs" | median)
	a99=$(awk '$1 == "alone" { print $3 }' "$tmp/runs" | median)
	r99=$(awk '$1 == "rr" { print $3 }' "$tmp/runs" | median)
	awk -v be="$be" -v n="$FUNCS" -v a50="$a50" -v r50="$r50" -v a99="$a99" -v r99="$r99" 'BEGIN {
		printf "%s: %d functions round-robin against one alone, medians of the rounds: p50 %d us vs %d us (%.2fx), p99 %d us vs %d us (%.2fx); goal p50 <= 2x: %s\n",
			be, n, r50, a50, a50 ? r50 / a50 : 0, r99, a99, a99 ? r99 / a99 : 0,
			(a50 && r50 <= 2 * a50) ? "met" : "missed" }'
	serve_stop
done
