#!/bin/sh
# ember serve (hello in C, hello-js; Node.js and CPython handlers on request) against a
# fork-per-request server under wrk, on loopback.
#
# Starts build/ember serve on a free port with a temporary state folder, deploys hello (the C
# image) and hello-js, starts bench/forkserver (a process per request, the OpenFaaS classic
# watchdog's model) running the same hello binary, and drives each with wrk: a steady run and a
# bursty run (a sequence of short runs with rising and falling connection counts). Prints a table
# on stdout (progress on stderr): requests/s, p50/p99 latency, errors, how the invocations
# that were not warm started (restores: from the snapshot in memory on the request's own path;
# cold/init: from disk or from the image), resident memory, and how much of the CPU time went to other processes meanwhile. Installs nothing: it
# needs wrk and curl (scripts/setup.sh installs both) and a build (make all). About 95 s.
#
# Environment: B (build folder, default build), EMBER_BACKEND (default auto), DURATION (steady
# seconds, 10), CONNS (steady connections, 8), STEP (seconds per bursty phase, 2), BURST
# (connections per phase, "2 4 8 32 8 32 8 4 2"), THREADS (wrk threads, 2), BODY (the request
# body, Ember), MIN_WARM (the deployments' ember.minWarm; unset: the server's default),
# SYSCALLS (the deployments' ember.syscalls, trap or guest; unset: the server's default, guest),
# TARGETS (any of hello hello-js fork, default those three; also hello-node and hello-python,
# functions/hello-node and functions/hello-python in the js and python runtimes, and their peers
# fork-node and fork-python: a node or python3.11 process per request started with the same
# loader and handler through a two-line sh script), FORK=1 (forkserver uses fork() rather than
# posix_spawn), KEEP=1 keeps the temporary folder.
set -eu
cd "$(dirname "$0")/.."
B=${B:-build}
BACKEND=${EMBER_BACKEND:-auto}
DURATION=${DURATION:-10}
CONNS=${CONNS:-8}
STEP=${STEP:-2}
BURST=${BURST:-2 4 8 32 8 32 8 4 2}
THREADS=${THREADS:-2}
BODY=${BODY:-Ember}
TARGETS=${TARGETS:-hello hello-js fork}
export BODY

for t in wrk curl; do
	command -v $t >/dev/null 2>&1 || {
		echo "http.sh: $t is missing (make setup installs it)" >&2
		exit 2
	}
done
for f in "$B/ember" "$B/functions/hello" "$B/bench/forkserver" "$B/runtimes/js"; do
	[ -x "$f" ] || {
		echo "http.sh: $f is missing (make all builds it)" >&2
		exit 2
	}
done

tmp=$(mktemp -d)
epid=
fpid=
cleanup() {
	rc=$?
	for p in $epid $fpid $(cat "$tmp"/*.pid 2>/dev/null); do
		kill -TERM "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	if [ "${KEEP:-0}" = 1 ]; then echo "kept $tmp" >&2; else rm -rf "$tmp"; fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP PIPE

# wait_line FILE PATTERN: the first line of FILE matching PATTERN, waiting up to 10 s for it
wait_line() {
	i=0
	while [ $i -lt 100 ]; do
		l=$(grep -m1 -E "$2" "$1" 2>/dev/null || true)
		[ -n "$l" ] && {
			echo "$l"
			return 0
		}
		sleep 0.1
		i=$((i + 1))
	done
	echo "http.sh: no '$2' in $1:" >&2
	cat "$1" >&2
	exit 1
}

# --- the servers
"$B/ember" serve --listen 127.0.0.1:0 --state "$tmp/state" --secrets "$tmp/secrets" --backend "$BACKEND" \
	2>"$tmp/ember.log" &
epid=$!
eaddr=$(wait_line "$tmp/ember.log" 'listening on' | grep -oE '127\.0\.0\.1:[0-9]+' | head -n1)
E=http://$eaddr
i=0
until curl -sf "$E/healthz" >/dev/null && [ -r "$tmp/secrets/basic-auth-password" ]; do
	i=$((i + 1))
	[ $i -lt 100 ] || {
		cat "$tmp/ember.log" >&2
		exit 1
	}
	sleep 0.1
done
forkopt=
[ "${FORK:-0}" = 1 ] && forkopt=--fork
# shellcheck disable=SC2086
"$B/bench/forkserver" $forkopt 0 "$B/functions/hello" >"$tmp/fork.log" 2>&1 &
fpid=$!
faddr=$(wait_line "$tmp/fork.log" 'listening on' | grep -oE '127\.0\.0\.1:[0-9]+')
F=http://$faddr
# the runtimes' peers: the runtime's own program per request, with the loader and handler Ember
# gives it (fd 3 the source), from a script forkserver starts
FN=
FP=
peer() { # NAME PROGRAM LOADER-ARGS HANDLER: the peer's URL on stdout
	printf '#!/bin/sh\nexec %s %s %s 3<%s\n' "$2" "$3" "$(basename "$4")" "$PWD/$4" >"$tmp/$1.sh"
	chmod 755 "$tmp/$1.sh"
	"$B/bench/forkserver" 0 "$tmp/$1.sh" >"$tmp/$1.log" 2>&1 &
	echo $! >"$tmp/$1.pid" # run in $(...): the pid travels by file
	echo "http://$(wait_line "$tmp/$1.log" 'listening on' | grep -oE '127\.0\.0\.1:[0-9]+')"
}
case " $TARGETS " in *" fork-node "*)
	FN=$(peer fork-node /usr/bin/node \
		"--experimental-vm-modules $PWD/$B/runtimes/node-files/usr/lib/ember/node.js" \
		functions/hello-node/handler.js) ;;
esac
case " $TARGETS " in *" fork-python "*)
	FP=$(peer fork-python /usr/bin/python3.11 "$PWD/$B/runtimes/python3-files/usr/lib/ember/python.py" \
		functions/hello-python/handler.py) ;;
esac

ember=""
[ -n "${MIN_WARM:-}" ] && ember="\"minWarm\": $MIN_WARM"
[ -n "${SYSCALLS:-}" ] && ember="${ember:+$ember, }\"syscalls\": \"$SYSCALLS\""
warm=""
[ -n "$ember" ] && warm=", \"ember\": {$ember}"
url_of() {
	case $1 in
	fork) echo "$F/" ;;
	fork-node) echo "$FN/" ;;
	fork-python) echo "$FP/" ;;
	*) echo "$E/function/$1" ;;
	esac
}
# the JS source as a JSON string (ASCII sources: backslashes, quotes, tabs, newlines escaped)
tab=$(printf '\t')
code=$(sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e "s/$tab/\\\\t/g" functions/hello-js/handler.js |
	awk '{printf "%s\\n", $0}')
check() { # WHAT STATUS WANTED
	[ "$2" = "$3" ] || {
		echo "http.sh: $1: HTTP $2, wanted $3: $(cat "$tmp/resp")" >&2
		exit 1
	}
}
AUTH="$(cat "$tmp/secrets/basic-auth-user"):$(cat "$tmp/secrets/basic-auth-password")"
st=$(curl -s -u "$AUTH" -o "$tmp/resp" -w '%{http_code}' -X PUT --data-binary @"$B/functions/hello" \
	"$E/system/images/hello")
check "upload hello" "$st" 201
st=$(curl -s -u "$AUTH" -o "$tmp/resp" -w '%{http_code}' "$E/system/functions" \
	-d "{\"service\": \"hello\", \"image\": \"hello\"$warm}")
check "deploy hello" "$st" 202
st=$(curl -s -u "$AUTH" -o "$tmp/resp" -w '%{http_code}' "$E/system/functions" \
	-d "{\"service\": \"hello-js\", \"runtime\": \"duktape\", \"code\": \"$code\"$warm}")
check "deploy hello-js" "$st" 202
# the Node.js and CPython handlers, when measured: their sources as JSON strings
for f in hello-node:js:handler.js hello-python:python:handler.py; do
	name=${f%%:*}
	rest=${f#*:}
	case " $TARGETS " in *" $name "*) ;; *) continue ;; esac
	src=$(python3 -c 'import json, sys; print(json.dumps(open(sys.argv[1]).read()))' \
		"functions/$name/${rest#*:}")
	st=$(curl -s -u "$AUTH" -o "$tmp/resp" -w '%{http_code}' "$E/system/functions" \
		-d "{\"service\": \"$name\", \"runtime\": \"${rest%%:*}\", \"code\": $src$warm}")
	check "deploy $name" "$st" 202
done
backend=$(curl -sf -u "$AUTH" "$E/system/function/hello" | grep -oE '"backend": *"[a-z]+"' |
	grep -oE '[a-z]+"$' | tr -d '"')
mode=$(curl -sf -u "$AUTH" "$E/system/function/hello" | grep -oE '"syscalls": *"[a-z]+"' |
	grep -oE '[a-z]+"$' | tr -d '"')
spawn=$(grep -oE '\((fork|posix_spawn)\)' "$tmp/fork.log" | tr -d '()')
for t in $TARGETS; do
	u=$(url_of "$t")
	got=$(curl -sf -d "$BODY" "$u")
	[ "$got" = "Hello, $BODY!" ] || {
		echo "http.sh: $u answered '$got'" >&2
		exit 1
	}
done

# --- measuring

starts_of() { # "RESTORES COLD+INIT": the server's ember_starts_total for function $1
	curl -sf "$E/metrics" | awk -v f="ember_starts_total{function_name=\"$1\"," '
		index($1, f) == 1 && $1 ~ /start="restore"/ {r += $2}
		index($1, f) == 1 && $1 ~ /start="(cold|init)"/ {c += $2}
		END {printf "%d %d\n", r, c}'
}
# the change from "R0 C0" to "R1 C1": "R C"
starts_diff() { echo "$1 $2" | awk '{print $3 - $1, $4 - $2}'; }

# one wrk run: CONNECTIONS SECONDS URL; its WRK line (see bench/wrk-post.lua) on stdout
wrk_run() {
	t=$THREADS
	[ "$t" -gt "$1" ] && t=$1
	wrk -t "$t" -c "$1" -d "${2}s" --latency -s bench/wrk-post.lua "$3" >"$tmp/wrk.out" 2>&1 ||
		true
	line=$(grep '^WRK ' "$tmp/wrk.out" || true)
	[ -n "$line" ] || {
		echo "http.sh: wrk failed:" >&2
		cat "$tmp/wrk.out" >&2
		exit 1
	}
	echo "$line"
}

field() { # WRK-LINE NAME
	echo "$1" | tr ' ' '\n' | awk -F= -v k="$2" '$1 == k {print $2}'
}

# a results line: target run conns requests duration_us errors p50_us p99_us restores cold+init
: >"$tmp/results"
: >"$tmp/phases"
record() { # TARGET RUN CONNS WRK-LINE "RESTORES COLD+INIT"
	w=$4
	errs=$(($(field "$w" status) + $(field "$w" connect) + $(field "$w" read) + $(field "$w" write) + $(field "$w" timeout)))
	echo "$1 $2 $3 $(field "$w" requests) $(field "$w" duration_us) $errs $(field "$w" p50_us) $(field "$w" p99_us) $5"
}

# how idle the machine is before the first run (another process taking CPU skews everything)
cpu() { awk '$1 == "cpu" {print $2 + $3 + $4 + $5 + $6 + $7 + $8, $5 + $6}' /proc/stat; }
c0=$(cpu)
sleep 1
c1=$(cpu)
idle0=$(echo "$c0 $c1" | awk '{printf "%.0f", 100 * ($4 - $2) / ($3 - $1)}')
# CPU time (clock ticks) of the servers, their children and this shell's children (wrk, curl):
# what the machine spent beyond it during the runs went to other processes or interrupts
ticks() { awk '{print $14 + $15 + $16 + $17}' "/proc/$1/stat" 2>/dev/null || echo 0; }
hz=$(getconf CLK_TCK)
ours() { # called as "ours >FILE", not in $(...): times must see this shell's children
	n=$(($(ticks "$epid") + $(ticks "$fpid")))
	for p in $(cat "$tmp"/*.pid 2>/dev/null); do n=$((n + $(ticks "$p"))); done
	for c in $(cat /proc/"$epid"/task/*/children 2>/dev/null); do n=$((n + $(ticks "$c"))); done
	times >"$tmp/times"
	echo "$n $(tail -n 1 "$tmp/times" | tr 'ms' '  ' |
		awk -v hz="$hz" '{print ($1 * 60 + $2 + $3 * 60 + $4) * hz}')"
}
ours >"$tmp/ours0"
b0=$(cpu)
total=0
for t in $TARGETS; do
	total=$((total + DURATION + STEP * $(echo $BURST | wc -w)))
done
echo "backend $backend; ember serve on $eaddr, forkserver on $faddr; about ${total}s of wrk" >&2

for t in $TARGETS; do
	u=$(url_of "$t")
	c0="0 0"
	case $t in fork*) ;; *) c0=$(starts_of "$t") ;; esac
	echo "  $t: steady, $CONNS connections, ${DURATION}s" >&2
	w=$(wrk_run "$CONNS" "$DURATION" "$u")
	c1="0 0"
	case $t in fork*) ;; *) c1=$(starts_of "$t") ;; esac
	record "$t" steady "$CONNS" "$w" "$(starts_diff "$c0" "$c1")" >>"$tmp/results"
	echo "  $t: bursty, connections $BURST, ${STEP}s each" >&2
	for c in $BURST; do
		w=$(wrk_run "$c" "$STEP" "$u")
		c2=$c1
		case $t in fork*) ;; *) c2=$(starts_of "$t") ;; esac
		record "$t" phase "$c" "$w" "$(starts_diff "$c1" "$c2")" >>"$tmp/phases"
		c1=$c2
	done
done

# --- resident memory: the process and (ptrace backend) its stub processes, one per virtine
kib() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/$3" 2>/dev/null || echo 0; }
children() { cat /proc/"$1"/task/*/children 2>/dev/null | tr ' ' '\n' | grep -v '^$' || true; }
ersskb=$(kib "$epid" VmRSS status)
epsskb=$(kib "$epid" Pss smaps_rollup)
nstub=0
srsskb=0
spsskb=0
for c in $(children "$epid"); do
	nstub=$((nstub + 1))
	srsskb=$((srsskb + $(kib "$c" VmRSS status)))
	spsskb=$((spsskb + $(kib "$c" Pss smaps_rollup)))
done
frsskb=$(kib "$fpid" VmRSS status)
ember_virtines=$(curl -sf "$E/metrics" | awk '$1 == "ember_virtines_alive" {print $2}')

b1=$(cpu)
ours >"$tmp/ours1"
others=$(echo "$b0 $b1 $(cat "$tmp/ours0") $(cat "$tmp/ours1")" | awk '{busy = ($3 - $4) - ($1 - $2);
	o = ($7 + $8) - ($5 + $6); printf "%.0f", (busy > 0 ? 100 * (busy - o) / busy : 0)}')

# --- the table
steady_of() { awk -v t="$1" '$1 == t' "$tmp/results"; }
echo
echo "ember serve ($backend backend, syscalls $mode) vs forkserver (a process per request, $spawn);" \
	"wrk, $THREADS threads, body '$BODY'"
echo "steady: $CONNS connections for ${DURATION}s; bursty: connections $BURST, ${STEP}s each"
echo "$(nproc) CPUs, ${idle0}% idle in the second before the first run; during the runs ${others}% of" \
	"the busy CPU time went to neither wrk nor the servers (other processes, interrupts)"
echo
printf '%-12s %-7s %-11s %9s %9s %9s %7s %9s %9s\n' target run connections 'req/s' 'p50 ms' \
	'p99 ms' errors restores 'cold/init'
for t in $TARGETS; do
	steady_of "$t" | while read -r tg run c n d e p50 p99 rest cold; do
		case $tg in fork*) rest=- && cold="every req" ;; esac
		awk -v tg="$tg" -v c="$c" -v n="$n" -v d="$d" -v e="$e" -v p50="$p50" \
			-v p99="$p99" -v rest="$rest" -v cold="$cold" 'BEGIN {printf "%-12s %-7s %-11s %9.0f %9.2f %9.2f %7d %9s %9s\n",
			tg, "steady", c, n / (d / 1e6), p50 / 1e3, p99 / 1e3, e, rest, cold}'
	done
	awk -v tg="$t" '$1 == tg {n += $4; d += $5; e += $6; if ($7 > p50) p50 = $7;
		if ($8 > p99) p99 = $8; rest += $9; cold += $10; if (!lo || $3 < lo) lo = $3; if ($3 > hi) hi = $3}
		END {printf "%-12s %-7s %-11s %9.0f %8.2f* %8.2f* %7d %9s %9s\n", tg, "bursty",
		lo ".." hi, n / (d / 1e6), p50 / 1e3, p99 / 1e3, e, tg ~ /^fork/ ? "-" : rest,
		tg ~ /^fork/ ? "every req" : cold}' \
		"$tmp/phases"
done
echo "* bursty p50/p99: the worst phase's; per phase:"
echo
printf '%-12s' ''
for c in $BURST; do printf '%9s' "$c"; done
echo ' connections'
for t in $TARGETS; do
	for what in rps p99 restores; do
		printf '%-12s' "$t"
		awk -v tg="$t" -v what="$what" '$1 == tg {
			if (what == "rps") printf "%9.0f", $4 / ($5 / 1e6);
			else if (what == "p99") printf "%9.1f", $8 / 1e3;
			else printf "%9s", tg ~ /^fork/ ? "-" : $9}
			END {print "  " (what == "rps" ? "req/s" : what == "p99" ? "p99 ms" : "restores")}' \
			"$tmp/phases"
	done
done
echo
mib() { awk -v k="$1" 'BEGIN {printf "%.1f MiB", k / 1024}'; }
echo "resident memory at the end:"
echo "  ember serve process:   VmRSS $(mib "$ersskb"), PSS $(mib "$epsskb")"
echo "  its $nstub child (stub) processes, $ember_virtines virtines alive: VmRSS $(mib "$srsskb")" \
	"summed, PSS $(mib "$spsskb")"
echo "  ember in all:          PSS $(mib $((epsskb + spsskb))) (summing VmRSS, $(mib $((ersskb + srsskb))), counts" \
	"guest pages mapped by both the process and a stub twice)"
echo "  forkserver:            VmRSS $(mib "$frsskb"), PSS $(mib "$(kib "$fpid" Pss smaps_rollup)") (no child between requests)"
