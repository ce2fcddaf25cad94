#!/bin/sh
# A soak: SOAK_MINUTES (default 10) of bursty load at saturation over C, JS and Lua functions,
# with deploys, updates and deletes going on meanwhile.
#
# Starts build/ember serve on a free port with a temporary state folder and deploys hello and
# sha256 (C), hello-js (JS) and hello-lua (Lua). wrk (bench/wrk-soak.lua) drives all four from
# CONNS connections: bursts of BURST_S seconds in which every connection sends as fast as it is
# answered, then PAUSE_S seconds of nothing; every answer is checked (status 200 and one of the
# functions' bodies). wrk runs a minute at a time, so every minute has its own line. Meanwhile a
# loop, every UPDATE_S seconds, updates one of the functions (PUT: hello-js's or hello-lua's code
# with a new version comment, so a new snapshot; hello's envVars) or deploys a function from the
# hello image, calls it and deletes it; every answer of those must be 2xx too. After each minute,
# between two changes: the server's resident memory (VmRSS, plus its stubs on ptrace),
# descriptors and the state folder's size on disk. Prints a table on stdout (progress on stderr); exits 1 when a goal is
# missed.
#
# Goals: no errors (of the load and of the deploy loop), no memory growth (the last minute's
# RSS against the first minute's), p99 reported per minute.
#
# Environment: B (build folder, default build), EMBER_BACKEND (kvm, ptrace or auto; default
# kvm where /dev/kvm works, else ptrace), SOAK_MINUTES (10), CONNS (32), THREADS (wrk threads,
# 2), BURST_S (3), PAUSE_S (2), UPDATE_S (2), MIN_WARM (the deployments' ember.minWarm; unset:
# the server's default), MINUTE_S (how long a "minute" is, 60; shorter only to try the script
# out), KEEP=1 keeps the temporary folder.
set -eu
cd "$(dirname "$0")/.."
B=${B:-build}
MINUTES=${SOAK_MINUTES:-10}
CONNS=${CONNS:-32}
THREADS=${THREADS:-2}
BURST_S=${BURST_S:-3}
PAUSE_S=${PAUSE_S:-2}
UPDATE_S=${UPDATE_S:-2}
MINUTE_S=${MINUTE_S:-60}
export BURST_S PAUSE_S

for t in wrk curl; do
	command -v $t >/dev/null 2>&1 || {
		echo "soak.sh: $t is missing (make setup installs it)" >&2
		exit 2
	}
done
for f in "$B/ember" "$B/functions/hello" "$B/functions/sha256" "$B/runtimes/js" \
	"$B/runtimes/lua"; do
	[ -x "$f" ] || {
		echo "soak.sh: $f is missing (make all builds it)" >&2
		exit 2
	}
done
BACKEND=${EMBER_BACKEND:-}
if [ -z "$BACKEND" ] || [ "$BACKEND" = auto ]; then
	BACKEND=ptrace
	[ -c /dev/kvm ] && (exec 3<>/dev/kvm) 2>/dev/null && BACKEND=kvm
fi

NAME=soak.sh
# shellcheck source=bench/serve_lib.sh
. bench/serve_lib.sh
upid=

# --- the server and the functions
st=$tmp/state
serve_start "$BACKEND" "$st" "$tmp/ember.log"

# api METHOD PATH DATA-ARGS...: the status code; the body in $tmp/resp
api() {
	m=$1
	p=$2
	shift 2
	curl -s -u "$AUTH" -o "$tmp/resp" -w '%{http_code}' -X "$m" "$E$p" "$@"
}
must() { # WHAT STATUS WANT
	[ "$2" = "$3" ] || die "$1: HTTP $2, wanted $3: $(head -c 300 "$tmp/resp")"
}

# a source file as a JSON string, with a comment line added (VERSION: the comment)
json_src() { # FILE COMMENT
	tab=$(printf '\t')
	{
		echo "$2"
		cat "$1"
	} | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e "s/$tab/\\\\t/g" | awk '{printf "%s\\n", $0}'
}
warm=
[ -n "${MIN_WARM:-}" ] && warm=", \"ember\": {\"minWarm\": $MIN_WARM}"
# (printf, not echo: dash's echo would turn the \n of the JSON string into newlines)
js_deploy() { # VERSION
	printf '%s\n' "{\"service\": \"hello-js\", \"runtime\": \"duktape\", \"code\": \"$(json_src \
		functions/hello-js/handler.js "// v$1")\"$warm}"
}
lua_deploy() { # VERSION
	printf '%s\n' "{\"service\": \"hello-lua\", \"runtime\": \"lua\", \"code\": \"$(json_src \
		functions/hello-lua/handler.lua "-- v$1")\"$warm}"
}
must "upload hello" "$(api PUT /system/images/hello --data-binary @"$B/functions/hello")" 201
must "upload sha256" "$(api PUT /system/images/sha256 --data-binary @"$B/functions/sha256")" 201
must "deploy hello" "$(api POST /system/functions \
	-d "{\"service\": \"hello\", \"image\": \"hello\", \"envVars\": {\"V\": \"0\"}$warm}")" 202
must "deploy sha256" "$(api POST /system/functions \
	-d "{\"service\": \"sha256\", \"image\": \"sha256\"$warm}")" 202
must "deploy hello-js" "$(api POST /system/functions -d "$(js_deploy 0)")" 202
must "deploy hello-lua" "$(api POST /system/functions -d "$(lua_deploy 0)")" 202
hello_out=$(printf 'Hello, Ember!\n_')
hello_out=${hello_out%_}
sha_out=$(curl -sf -d Ember "$E/function/sha256" && echo _)
sha_out=${sha_out%_}
for f in hello hello-js hello-lua; do
	[ "$(curl -sf -d Ember "$E/function/$f")" = "Hello, Ember!" ] || die "$f answers wrong"
done
SOAK_PATHS="/function/hello /function/hello-js /function/hello-lua /function/sha256"
SOAK_WANT_1=$hello_out
SOAK_WANT_2=$sha_out
export SOAK_PATHS SOAK_WANT_1 SOAK_WANT_2

# --- deploys and updates meanwhile: one change every UPDATE_S seconds, each answer logged
updates() {
	v=1
	while :; do
		# the minutes' measures are taken between two changes, not in the middle of one
		while [ -e "$tmp/pause" ]; do
			: >"$tmp/paused"
			sleep 0.1
		done
		rm -f "$tmp/paused"
		case $((v % 4)) in
		0) s=$(api PUT /system/functions -d "$(js_deploy "$v")") ;;
		1) s=$(api PUT /system/functions -d "$(lua_deploy "$v")") ;;
		2) s=$(api PUT /system/functions \
			-d "{\"service\": \"hello\", \"image\": \"hello\", \"envVars\": {\"V\": \"$v\"}$warm}") ;;
		3)
			s=$(api POST /system/functions -d "{\"service\": \"tmp-$v\", \"image\": \"hello\"}")
			if [ "$s" = 202 ]; then
				got=$(curl -s -d Ember "$E/function/tmp-$v")
				[ "$got" = "Hello, Ember!" ] || s="call answered '$got'"
			fi
			[ "$s" = 202 ] && s=$(api DELETE /system/functions -d "{\"functionName\": \"tmp-$v\"}")
			;;
		esac
		echo "$(date +%s) $v $s" >>"$tmp/updates"
		v=$((v + 1))
		sleep "$UPDATE_S"
	done
}
: >"$tmp/updates"
updates &
upid=$!
stop_pids=$upid

# --- the minutes
kib() { awk '$1 == "VmRSS:" {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
host() { # RSS KiB (server and its children), descriptors, state folder KiB, snapshots
	n=$(kib "$epid")
	for k in $(cat /proc/"$epid"/task/*/children 2>/dev/null); do n=$((n + $(kib "$k"))); done
	echo "$n $(ls /proc/"$epid"/fd | wc -l) $(du -sk "$st" | cut -f1) $(ls "$st/snapshots" | wc -l)"
}
field() { # LINE NAME
	echo "$1" | tr ' ' '\n' | awk -F= -v k="$2" '$1 == k {print $2}'
}
uptime >&2
load0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "$BACKEND: ember serve on $E; $MINUTES minutes of wrk, $CONNS connections" >&2
host >"$tmp/host0"
: >"$tmp/minutes"
m=1
while [ $m -le "$MINUTES" ]; do
	wrk -t "$THREADS" -c "$CONNS" -d "${MINUTE_S}s" --timeout 10s -s bench/wrk-soak.lua "$E" \
		>"$tmp/wrk.out" 2>&1 || true
	line=$(grep '^WRK ' "$tmp/wrk.out" || true)
	[ -n "$line" ] || die "wrk failed: $(cat "$tmp/wrk.out")"
	u=$(awk '$3 != 202 && $3 != 200' "$tmp/updates" | wc -l)
	: >"$tmp/pause"
	await "the changes to pause" test -e "$tmp/paused"
	echo "$m $line $(wc -l <"$tmp/updates") $u $(host)" >>"$tmp/minutes"
	rm -f "$tmp/pause"
	echo "  minute $m: $(field "$line" requests) requests" >&2
	m=$((m + 1))
done
kill "$upid" 2>/dev/null || true
wait "$upid" 2>/dev/null || true
stop_pids=
load1=$(cut -d' ' -f1-3 /proc/loadavg)
# the well-behaved functions must never have been taken for costly ones (docs/server.md)
costly=$(curl -s "$E/metrics" | awk '/^ember_costly_marked_total /{print $2}')
serve_stop

# --- the report
echo
echo "bench/soak.sh: $BACKEND backend, $(nproc) CPUs; load average $load0 before, $load1 after"
echo "wrk: $THREADS threads, $CONNS connections, bursts of ${BURST_S}s then ${PAUSE_S}s pauses, over" \
	"hello (C), sha256 (C), hello-js, hello-lua; a change every ${UPDATE_S}s (PUT of hello-js," \
	"hello-lua, hello; a function deployed, called and deleted)"
echo
printf '%6s %9s %7s %7s %9s %9s %9s %8s %8s %9s %5s %9s %6s\n' minute requests 'req/s' errors \
	'p50 ms' 'p99 ms' 'max ms' changes failed 'RSS MiB' fds 'state MiB' snaps
errs=0
awk '{
	for (i = 2; i <= NF; i++) { split($i, kv, "="); w[kv[1]] = kv[2] }
	e = w["status"] + w["connect"] + w["read"] + w["write"] + w["timeout"] + w["wrong"]
	printf "%6d %9d %7.0f %7d %9.2f %9.2f %9.2f %8d %8d %9.1f %5d %9.1f %6d\n", $1, w["requests"],
		w["requests"] / (w["duration_us"] / 1e6), e, w["p50_us"] / 1e3, w["p99_us"] / 1e3,
		w["max_us"] / 1e3, $(NF - 5), $(NF - 4), $(NF - 3) / 1024, $(NF - 2), $(NF - 1) / 1024, $NF
}' "$tmp/minutes"
errs=$(awk '{for (i = 2; i <= NF; i++) { split($i, kv, "="); w[kv[1]] = kv[2] }
	e += w["status"] + w["connect"] + w["read"] + w["write"] + w["timeout"] + w["wrong"]}
	END {print e + 0}' "$tmp/minutes")
failed=$(tail -n 1 "$tmp/minutes" | awk '{print $(NF - 4)}')
read -r r0 _ d0 _ <"$tmp/host0"
first=$(head -n 1 "$tmp/minutes" | awk '{print $(NF - 3)}')
last=$(tail -n 1 "$tmp/minutes" | awk '{print $(NF - 3)}')
d1=$(tail -n 1 "$tmp/minutes" | awk '{print $(NF - 1)}')
echo
echo "before the first minute: RSS $(awk -v k="$r0" 'BEGIN {printf "%.1f", k / 1024}') MiB, state folder" \
	"$(awk -v k="$d0" 'BEGIN {printf "%.1f", k / 1024}') MiB"
grow=$(awk -v a="$first" -v b="$last" 'BEGIN {printf "%+.1f", (b - a) / 1024}')
echo "RSS from the first minute's end to the last's: $grow MiB; state folder" \
	"$(awk -v a="$d0" -v b="$d1" 'BEGIN {printf "%+.1f", (b - a) / 1024}') MiB"
awk '$3 != 202 && $3 != 200' "$tmp/updates" | head -n 5 | sed 's/^/  failed change: /'
verdict=met
[ "$errs" = 0 ] && [ "$failed" = 0 ] || verdict=MISSED
# growth: more than 2 MiB or 5 % from the first minute to the last
awk -v a="$first" -v b="$last" 'BEGIN {exit !(b - a > 2048 && b > a * 1.05)}' && verdict=MISSED
echo "functions found costly during the soak: ${costly:-?} (every one here is cheap)"
[ "${costly:-1}" = 0 ] || verdict=MISSED
echo "goals: $errs errors in the load, $failed failed changes, RSS $grow MiB: $verdict"
[ "$verdict" = met ]
