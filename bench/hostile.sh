#!/bin/sh
# Crash storms under load: well-behaved functions at a fixed rate while other tenants attack.
#
# For each backend it starts build/ember serve on a free port with a temporary state folder and
# deploys two well-behaved functions, hello (C) and hello-js, and the attackers: every fault kind
# of tests/guest (crash_null, crash_div, crash_ud2, crash_int3, crash_fpe, crash_hlt,
# crash_stack, crash_abort, run from scratch at every request since they crash before reading
# it, and crashy, which crashes after its snapshot), two functions spinning to their timeout
# (loop; crashy with "loop"), membomb, outbomb and forbidden, plus uploads of two malformed
# images made by tests/mkbadelf, machine_arm and seg_overlap (refused at every try).
# bench/loadgen drives the well-behaved functions at a fixed rate (open loop: a slow answer does
# not slow the load, and latency counts from when a request fell due) and checks every answer's
# status and body. The runs:
#   quiet:  the load alone, DURATION seconds;
#   stormN: the same load while every attacker runs (bench/loadgen at ATTACK_RATE a second per
#           crashing function, SPIN_RATE per spinning one) and hostile clients (bench/attack)
#           send garbage, hold slowloris connections and push oversized bodies; each kind from
#           an address of its own (127.0.0.2 slowloris, .3 garbage, .4 oversize, .5 the calls
#           of the attacking functions), as distinct clients would, the tenants from 127.0.0.1;
#   afterN: the load alone again, once the server's descriptors and threads have settled;
# STORMS times stormN and afterN. The server's resident memory (VmRSS, plus its stub processes
# on ptrace), descriptors and threads are read after every function was called once and a
# warm-up, and after each afterN. Prints a table on stdout, progress on stderr; exits 1 when a
# goal is missed. Needs a build (make all) and curl. About (1 + 2 * STORMS) * DURATION seconds
# per backend, plus a minute.
#
# Goals: no errors and no lost requests for the well-behaved functions, their p99 within 2x of
# the quiet run's, no growth of memory or descriptors after a storm.
#
# Environment: B (build folder, default build), EMBER_BACKEND (kvm, ptrace, or both: the
# default where /dev/kvm works, else ptrace), DURATION (seconds per run, 30), STORMS (2), RATE
# (requests/s per well-behaved function, 200), CONNS (its connections, 8), MIN_WARM (the
# well-behaved deployments' ember.minWarm, default CONNS: a virtine ready for every connection;
# 0: the server's default pool), ATTACK_RATE (requests/s per crashing function, 5), SPIN_RATE
# (per spinning function, 1), SPIN_TIMEOUT (their ember.timeout, 250ms), GARBAGE_RATE (garbage
# connections/s, 50), SLOW_CONNS (slowloris connections, 1200: more than the server's 1000 and
# than the 250 it lets one address hold), OVERSIZE_RATE (oversized uploads/s, 5), UPLOAD_RATE
# (refused image uploads/s, 2), ATTACKS (which attacks the storms run, any of crash spin memory
# output forbidden upload garbage slowloris oversize; default all), KEEP=1 keeps the temporary
# folder.
set -eu
cd "$(dirname "$0")/.."
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true # the slowloris attacker's connections
B=${B:-build}
DURATION=${DURATION:-30}
RATE=${RATE:-200}
CONNS=${CONNS:-8}
MIN_WARM=${MIN_WARM:-$CONNS}
ATTACK_RATE=${ATTACK_RATE:-5}
SPIN_RATE=${SPIN_RATE:-1}
SPIN_TIMEOUT=${SPIN_TIMEOUT:-250ms}
GARBAGE_RATE=${GARBAGE_RATE:-50}
SLOW_CONNS=${SLOW_CONNS:-1200}
OVERSIZE_RATE=${OVERSIZE_RATE:-5}
UPLOAD_RATE=${UPLOAD_RATE:-2}
STORMS=${STORMS:-2}
ATTACKS=${ATTACKS:-crash spin memory output forbidden upload garbage slowloris oversize}
G=$B/guest
CRASHERS="crash_null crash_div crash_ud2 crash_int3 crash_fpe crash_hlt crash_stack crash_abort"
OTHERS="membomb outbomb forbidden"

command -v curl >/dev/null 2>&1 || {
	echo "hostile.sh: curl is missing (make setup installs it)" >&2
	exit 2
}
for f in "$B/ember" "$B/tests/mkbadelf" "$B/functions/hello" "$B/runtimes/js" "$B/bench/loadgen" "$B/bench/attack" \
	"$G/crashy.musl" "$G/loop.musl"; do
	[ -x "$f" ] || {
		echo "hostile.sh: $f is missing (make all builds it)" >&2
		exit 2
	}
done
case ${EMBER_BACKEND:-both} in
both | auto)
	if [ -c /dev/kvm ] && (exec 3<>/dev/kvm) 2>/dev/null; then
		BACKENDS="kvm ptrace"
	else
		echo "hostile.sh: /dev/kvm does not work here: ptrace only" >&2
		BACKENDS=ptrace
	fi
	;;
*) BACKENDS=$EMBER_BACKEND ;;
esac

NAME=hostile.sh
# shellcheck source=bench/serve_lib.sh
. bench/serve_lib.sh
# the refused uploads: an ARM executable and one with overlapping segments, from hello
mkdir "$tmp/badelf"
"$B/tests/mkbadelf" "$G/hello.musl" "$tmp/badelf" >/dev/null || die "mkbadelf failed"

# --- the server and its deployments
start_server() { # BACKEND
	st=$tmp/$1
	mkdir -p "$st"
	serve_start "$1" "$st/state" "$st/ember.log"
	AUTH_HDR="Authorization: Basic $(printf %s "$AUTH" | base64 | tr -d '\n')"
}

put_image() { # NAME FILE
	st=$(curl -s -u "$AUTH" -o "$tmp/resp" -w '%{http_code}' -X PUT --data-binary @"$2" \
		"$E/system/images/$1")
	[ "$st" = 201 ] || die "upload $1: HTTP $st: $(cat "$tmp/resp")"
}

deploy() { # JSON
	st=$(curl -s -u "$AUTH" -o "$tmp/resp" -w '%{http_code}' "$E/system/functions" -d "$1")
	[ "$st" = 202 ] || die "deploy $1: HTTP $st: $(cat "$tmp/resp")"
}

# the JS source as a JSON string (ASCII sources: backslashes, quotes, tabs, newlines escaped)
tab=$(printf '\t')
js=$(sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e "s/$tab/\\\\t/g" functions/hello-js/handler.js |
	awk '{printf "%s\\n", $0}')

deploy_all() {
	put_image hello "$B/functions/hello"
	warm=
	[ "$MIN_WARM" -gt 0 ] && warm=", \"ember\": {\"minWarm\": $MIN_WARM}"
	deploy "{\"service\": \"hello\", \"image\": \"hello\"$warm}"
	deploy "{\"service\": \"hello-js\", \"runtime\": \"duktape\", \"code\": \"$js\"$warm}"
	for f in $CRASHERS $OTHERS crashy; do
		n=$(echo "$f" | tr _ -)
		put_image "$n" "$G/$f.musl"
		deploy "{\"service\": \"$n\", \"image\": \"$n\", \"ember\": {\"timeout\": \"2s\"}}"
	done
	put_image loop "$G/loop.musl"
	deploy "{\"service\": \"loop\", \"image\": \"loop\", \"ember\": {\"timeout\": \"$SPIN_TIMEOUT\"}}"
	deploy "{\"service\": \"crashy-loop\", \"image\": \"crashy\", \"ember\": {\"timeout\": \"$SPIN_TIMEOUT\"}}"
}

# --- what is measured
good() { # RUN: both well-behaved functions at RATE for DURATION s, their LOAD lines in RUN.*
	"$B/bench/loadgen" -r "$RATE" -c "$CONNS" -d "$1" -w 'Hello, Ember!\n' \
		"$E/function/hello" >"$tmp/$2.hello" 2>"$tmp/$2.hello.err" &
	g1=$!
	"$B/bench/loadgen" -r "$RATE" -c "$CONNS" -d "$1" -w 'Hello, Ember!\n' \
		"$E/function/hello-js" >"$tmp/$2.hello-js" 2>"$tmp/$2.hello-js.err" &
	g2=$!
}

# on: the attack kind $1 is in ATTACKS
on() { case " $ATTACKS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

attackers() { # SECONDS: every attacker of ATTACKS in the background, its line in storm.attack.*
	a=$tmp/storm.attack
	apids=
	L="$B/bench/loadgen -S 127.0.0.5 -e any -T 5 -d $1"
	X="$B/bench/attack"
	h=$E/function/hello
	for f in $CRASHERS membomb outbomb forbidden; do
		n=$(echo "$f" | tr _ -)
		case $f in
		crash_*) on crash || continue ;;
		membomb) on memory || continue ;;
		outbomb) on output || continue ;;
		forbidden) on forbidden || continue ;;
		esac
		$L -r "$ATTACK_RATE" -c 2 "$E/function/$n" >"$a.$n" 2>/dev/null &
		apids="$apids $!"
	done
	if on crash; then
		$L -r "$ATTACK_RATE" -c 2 -b crash "$E/function/crashy" >"$a.crashy" 2>/dev/null &
		apids="$apids $!"
	fi
	if on spin; then
		$L -r "$SPIN_RATE" -c 2 "$E/function/loop" >"$a.loop" 2>/dev/null &
		apids="$apids $!"
		$L -r "$SPIN_RATE" -c 2 -b loop "$E/function/crashy-loop" >"$a.crashy-loop" 2>/dev/null &
		apids="$apids $!"
	fi
	for f in machine_arm seg_overlap; do
		on upload || continue
		$L -r "$UPLOAD_RATE" -c 1 -m PUT -f "$tmp/badelf/$f" -H "$AUTH_HDR" \
			"$E/system/images/$(echo "$f" | tr _ -)" >"$a.$f" 2>/dev/null &
		apids="$apids $!"
	done
	if on garbage; then
		$X garbage -S 127.0.0.3 -r "$GARBAGE_RATE" -n 64 -d "$1" "$h" >"$a.garbage" 2>&1 &
		apids="$apids $!"
	fi
	if on slowloris; then
		$X slowloris -S 127.0.0.2 -n "$SLOW_CONNS" -d "$1" "$h" >"$a.slowloris" 2>&1 &
		apids="$apids $!"
	fi
	if on oversize; then
		$X oversize -S 127.0.0.4 -r "$OVERSIZE_RATE" -n 16 -d "$1" "$h" >"$a.oversize" 2>&1 &
		apids="$apids $!"
	fi
}

# resident KiB of the server and its children (ptrace stubs), its descriptors and threads
kib() { awk '$1 == "VmRSS:" {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
snapshot_host() { # FILE
	n=$(kib "$epid")
	c=0
	for k in $(cat /proc/"$epid"/task/*/children 2>/dev/null); do
		n=$((n + $(kib "$k")))
		c=$((c + 1))
	done
	fds=$(ls /proc/"$epid"/fd | wc -l)
	thr=$(own_threads)
	echo "$n $fds $thr $c $(kib "$epid")" >"$1"
	# what the descriptors are, by kind (sockets, KVM, memfds, ...), for a difference
	for l in /proc/"$epid"/fd/*; do readlink "$l"; done 2>/dev/null | sed 's/[0-9][0-9]*/N/g' |
		sort | uniq -c >"$1.fds"
}
fds_now() { ls /proc/"$epid"/fd | wc -l; }
# the server's threads, without the kernel's tasks that KVM adds per VM (kvm-nx-lpage-recovery)
own_threads() { cat /proc/"$epid"/task/*/comm 2>/dev/null | grep -vc '^kvm-'; }

# CPU: clock ticks of the server (its threads, and on ptrace its stubs) and of the whole
# machine (busy, idle), to tell the server's share of a run from everything else's
ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
server_ticks() {
	n=$(ticks "$epid")
	for k in $(cat /proc/"$epid"/task/*/children 2>/dev/null); do n=$((n + $(ticks "$k"))); done
	echo "$n"
}
machine_ticks() { awk '$1 == "cpu" {print $2 + $3 + $4 + $7 + $8, $5 + $6}' /proc/stat; }
cold_of() { # the server's ember_cold_starts_total for function $1
	curl -sf "$E/metrics" | awk -v f="ember_cold_starts_total{function_name=\"$1\"}" \
		'$1 == f {print $2; found = 1} END {if (!found) print 0}'
}
# run_begin / run_end RUN: the CPU and cold starts of one run, in RUN.cpu
run_begin() {
	c0="$(server_ticks) $(machine_ticks) $(cold_of hello) $(cold_of hello-js)"
	t0=$(date +%s.%N)
}
run_end() {
	echo "$c0 $(server_ticks) $(machine_ticks) $(cold_of hello) $(cold_of hello-js) $t0 $(date +%s.%N)" |
		awk -v hz="$(getconf CLK_TCK)" '{secs = $12 - $11; printf "%.2f %.2f %d %d\n",
		($6 - $1) / hz / secs, ($7 - $2) / hz / secs, $9 - $4, $10 - $5}' >"$tmp/$1.cpu"
}

field() { # LINE-FILE NAME
	tr ' ' '\n' <"$1" | awk -F= -v k="$2" '$1 == k {print $2}'
}

# one run of the well-behaved load, with the attackers when STORM=1: its lines in BACKEND.RUN.*
measure() { # BACKEND RUN STORM
	echo "$1: $2, ${DURATION}s" >&2
	run_begin
	apids=
	[ "$3" = 1 ] && attackers "$DURATION"
	good "$DURATION" "$1.$2"
	stop_pids="$g1 $g2 $apids"
	# shellcheck disable=SC2086
	wait $g1 $g2 $apids || die "a load generator or an attacker failed"
	stop_pids=
	run_end "$1.$2"
	if [ "$3" = 1 ]; then
		for f in "$tmp"/storm.attack.*; do mv "$f" "$tmp/$1.$2.${f#"$tmp"/storm.}"; done
	fi
}

# after a storm: what the attackers left running (calls queued behind membomb, connections
# closing) drains; the descriptors and threads come back to before's, or 60 s pass
settle() { # BEFORE-FILE
	read -r _ f0 t0 _ _ <"$1"
	i=0
	while { [ "$(fds_now)" -gt "$f0" ] || [ "$(own_threads)" -gt "$t0" ]; } && [ $i -lt 600 ]; do
		sleep 0.1
		i=$((i + 1))
	done
}

run_backend() { # BACKEND
	start_server "$1"
	echo "$1: ember serve on $E; deploying" >&2
	deploy_all
	be=$(curl -sf -u "$AUTH" "$E/system/function/hello" | grep -oE '"backend": *"[a-z]+"' |
		grep -oE '[a-z]+"$' | tr -d '"')
	[ "$be" = "$1" ] || die "hello runs on '$be', not $1"
	# every attacker once, so that what a first call makes (a pool filled from a snapshot
	# found on disk) is there before the first measure of the host
	for f in $CRASHERS $OTHERS crashy loop crashy-loop; do
		curl -s -o /dev/null "$E/function/$(echo "$f" | tr _ -)" -d crash
	done
	echo "$1: warm-up, 3 s" >&2
	good 3 warmup
	wait $g1 $g2 || die "a load generator failed: $(cat "$tmp"/warmup.*.err)"
	snapshot_host "$tmp/$1.host0"
	measure "$1" quiet 0
	si=1
	while [ $si -le "$STORMS" ]; do
		measure "$1" "storm$si" 1
		settle "$tmp/$1.host0"
		measure "$1" "after$si" 0
		snapshot_host "$tmp/$1.host$si"
		si=$((si + 1))
	done
	serve_stop
}

uptime >&2
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for be in $BACKENDS; do run_backend "$be"; done
load1=$(cut -d' ' -f1-3 /proc/loadavg)

# --- the report
RUNS=quiet
n=1
while [ $n -le "$STORMS" ]; do
	RUNS="$RUNS storm$n after$n"
	n=$((n + 1))
done
errors_of() { # LOAD-LINE-FILE: the answers that were wrong and the requests without one
	echo $(($(field "$1" status) + $(field "$1" mismatch) + $(field "$1" connect) +
		$(field "$1" read) + $(field "$1" timeout)))
}
echo
echo "bench/hostile.sh: $(nproc) CPUs; load average $load0 before, $load1 after"
echo "well-behaved: hello and hello-js at $RATE req/s each over $CONNS connections, ${DURATION}s a run," \
	"minWarm $MIN_WARM"
echo "storm ($ATTACKS): $ATTACK_RATE req/s to each crashing function, $SPIN_RATE to each spinning one" \
	"(timeout $SPIN_TIMEOUT), garbage $GARBAGE_RATE conn/s, $SLOW_CONNS slowloris," \
	"$OVERSIZE_RATE oversized uploads/s, $UPLOAD_RATE refused image uploads/s of each kind;" \
	"$STORMS storms, each followed by a quiet run (after)"
echo
printf '%-7s %-9s %-7s %7s %7s %7s %5s %9s %9s %9s %9s %5s %7s %7s\n' backend function run due \
	ok errors lost 'p50 ms' 'p99 ms' 'p99.9 ms' 'max ms' cold server machine
for be in $BACKENDS; do
	for fn in hello hello-js; do
		for run in $RUNS; do
			f=$tmp/$be.$run.$fn
			[ -s "$f" ] || die "no result in $f: $(cat "$f.err" 2>/dev/null)"
			read -r sc mc ch cj <"$tmp/$be.$run.cpu"
			cold=$ch
			[ "$fn" = hello ] || cold=$cj
			awk -v be="$be" -v fn="$fn" -v run="$run" -v due="$(field "$f" due)" \
				-v ok="$(field "$f" ok)" -v e="$(errors_of "$f")" -v lost="$(field "$f" lost)" \
				-v p50="$(field "$f" p50_us)" -v p99="$(field "$f" p99_us)" \
				-v p999="$(field "$f" p999_us)" -v mx="$(field "$f" max_us)" -v cold="$cold" \
				-v sc="$sc" -v mc="$mc" 'BEGIN {printf "%-7s %-9s %-7s %7d %7d %7d %5d %9.2f %9.2f %9.2f %9.2f %5d %7.2f %7.2f\n",
				be, fn, run, due, ok, e, lost, p50 / 1e3, p99 / 1e3, p999 / 1e3, mx / 1e3,
				cold, sc, mc}'
		done
	done
done
echo "cold: the function's cold starts in the run (the server's ember_cold_starts_total); server and"
echo "machine: CPU cores busy during the run, the server's (its threads, and on ptrace its stubs)"
echo "and the whole machine's (the server, the load generators, the attackers, other users)"
echo
echo "goals per backend and function (each storm against the quiet run):"
verdict=0
for be in $BACKENDS; do
	for fn in hello hello-js; do
		q=$tmp/$be.quiet.$fn
		n=1
		while [ $n -le "$STORMS" ]; do
			s=$tmp/$be.storm$n.$fn
			errs=$(errors_of "$s")
			lost=$(field "$s" lost)
			ratio=$(awk -v a="$(field "$s" p99_us)" -v b="$(field "$q" p99_us)" \
				'BEGIN {printf "%.2f", b ? a / b : 0}')
			met=$(awk -v r="$ratio" -v e="$errs" -v l="$lost" \
				'BEGIN {print (r <= 2 && !e && !l) ? "met" : "MISSED"}')
			[ "$met" = met ] || verdict=1
			echo "  $be $fn storm$n: $errs errors, $lost lost, p99 ${ratio}x the quiet run's: $met"
			n=$((n + 1))
		done
	done
done
echo
echo "host: the ember serve process (on ptrace with its stub processes), after the warm-up (0) and"
echo "after each storm and the quiet run that follows it; threads without KVM's kernel tasks"
printf '  %-7s %-5s %9s %13s %5s %8s %6s\n' backend after 'RSS MiB' 'server MiB' fds threads stubs
for be in $BACKENDS; do
	n=0
	while [ $n -le "$STORMS" ]; do
		read -r rss fds thr c srss <"$tmp/$be.host$n"
		awk -v be="$be" -v n="$n" -v rss="$rss" -v fds="$fds" -v thr="$thr" -v c="$c" \
			-v srss="$srss" 'BEGIN {printf "  %-7s %-5s %9.1f %13.1f %5d %8d %6d\n", be,
			n ? "storm" n : "0", rss / 1024, srss / 1024, fds, thr, c}'
		n=$((n + 1))
	done
	n=1
	while [ $n -le "$STORMS" ]; do
		read -r r0 f0 _ _ _ <"$tmp/$be.host$((n - 1))"
		read -r r1 f1 _ _ _ <"$tmp/$be.host$n"
		echo "  $be storm$n: RSS $(awk -v a="$r0" -v b="$r1" 'BEGIN {printf "%+.1f MiB", (b - a) / 1024}'), descriptors $((f1 - f0))"
		[ "$f1" = "$f0" ] || diff "$tmp/$be.host$((n - 1)).fds" "$tmp/$be.host$n.fds" |
			sed 's/^/    /' || true
		n=$((n + 1))
	done
done
echo
echo "attackers, storm 1 (requests and answers by class; a timeout or a loss is the attacker"
echo "giving up on a call, not the server losing it):"
for be in $BACKENDS; do
	for f in "$tmp/$be".storm1.attack.*; do
		echo "  $be ${f##*.attack.}: $(cut -d' ' -f2- "$f")"
	done
done
exit $verdict
