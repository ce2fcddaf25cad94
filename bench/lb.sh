#!/bin/sh
# Ember nodes behind HAProxy (ember lb-config), each node in a network namespace of its own
# (tests/integration/lb_lib.sh): throughput and p99 through the balancer with 1, 2 and 3 nodes,
# the CPU the nodes and HAProxy spent per request (this machine's cores are shared by the
# nodes: per-node efficiency, not scaling), and what a node's loss costs: the calls during it,
# and the first call of a moved function on its new node (cold from that node's own snapshot)
# next to a warm one. Needs root, iproute2, haproxy, wrk and curl (scripts/setup.sh) and a
# build (make all).
#
# usage: sudo sh bench/lb.sh    (from the repository root)
# Environment: B (build dir, default build), BACKEND (kvm or ptrace, default kvm), SECONDS_RUN
# (each wrk run, default 10), CONNS (wrk connections, default 32), FNS (functions, default 12).
set -u
NAME=bench/lb.sh
B=${B:-build}
EMBER_BACKEND=${BACKEND:-kvm}
SECONDS_RUN=${SECONDS_RUN:-10}
CONNS=${CONNS:-32}
FNS=${FNS:-12}
export FNS
# shellcheck source=bench/serve_lib.sh
. bench/serve_lib.sh # tmp, die, await (30 s)
for t in ip haproxy wrk curl; do
	command -v $t >/dev/null || die "needs $t (scripts/setup.sh installs it)"
done
[ "$(id -u)" = 0 ] || die "makes network namespaces: needs root"
[ -x "$B/ember" ] || die "no $B/ember: make all first"
E=$(cd "$B" && pwd)/ember
# shellcheck source=tests/integration/lb_lib.sh
. tests/integration/lb_lib.sh
# shellcheck disable=SC2317 # run by the trap
on_exit() {
	r=$?
	lb_down
	(exit $r)
	bench_cleanup # exits with $?
}
trap on_exit EXIT
mkdir -p "$tmp/secrets"
printf 'bench\n' >"$tmp/secrets/basic-auth-user"
od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$tmp/secrets/basic-auth-password"
AUTH="bench:$(cat "$tmp/secrets/basic-auth-password")"

# cpu_ticks PID...: user + system clock ticks of the processes
cpu_ticks() {
	t=0
	for p; do
		t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
	done
	echo $t
}

# node_pids: the running nodes' pids
node_pids() {
	i=1
	while [ $i -le $lb_nodes ]; do
		eval "p=\${lb_pid_$i:-}"
		[ -n "$p" ] && printf '%s ' "$p"
		i=$((i + 1))
	done
}

# wrk_run [URL]: wrk from the balancer's namespace over the FNS functions, through the balancer
# (or to URL); its WRK line in $tmp/wrk
wrk_run() {
	lb_in wrk -t 2 -c "$CONNS" -d "${SECONDS_RUN}s" --latency -s bench/wrk-lb.lua "${1:-$LB_URL}" \
		>"$tmp/wrk.out" 2>&1 || die "wrk failed: $(tail -3 "$tmp/wrk.out")"
	grep '^WRK ' "$tmp/wrk.out" >"$tmp/wrk" || die "no WRK line: $(tail -3 "$tmp/wrk.out")"
}

# field NAME: NAME=VALUE of the last WRK line
field() {
	sed -n "s/.* $1=\([0-9]*\).*/\1/p" "$tmp/wrk"
}

# cluster N: N nodes (fresh state), HAProxy over them, the FNS functions deployed to each
cluster() {
	lb_net_up "$1" || die "cannot make the namespaces"
	i=1
	while [ $i -le "$1" ]; do
		lb_node_start $i || die "node $i did not start"
		i=$((i + 1))
	done
	# shellcheck disable=SC2046
	LB_CHECK_MS=1000 lb_haproxy_start $(seq 1 "$1") >/dev/null || die "haproxy did not start"
	gws=
	i=1
	while [ $i -le "$1" ]; do
		gws="$gws${gws:+,}$(lb_node_url $i)"
		i=$((i + 1))
	done
	lb_in "$E" deploy -f "$tmp/stack.yml" --gateway "$gws" --secrets "$tmp/secrets" \
		>"$tmp/deploy.out" 2>&1 || die "deploy failed: $(tail -3 "$tmp/deploy.out")"
}

# ms CMD: the time_total of a call through the balancer, in ms, and the node and start
call_ms() {
	lb_in curl -s -o /dev/null -D "$tmp/h" -w '%{time_total}' --max-time 30 -d x \
		"$LB_URL/function/$1" | awk '{printf "%.2f", $1 * 1000}'
	printf ' %s %s\n' "$(tr -d '\r' <"$tmp/h" | awk 'tolower($1) == "x-ember-node:" {print $2}')" \
		"$(tr -d '\r' <"$tmp/h" | awk 'tolower($1) == "x-ember-start:" {print $2}')"
}

# unloaded_all: no function is loaded on any running node
# shellcheck disable=SC2317 # run by await
unloaded_all() {
	for i in $(seq 1 $lb_nodes); do
		eval "p=\${lb_pid_$i:-}"
		[ -n "$p" ] || continue
		lb_in curl -s -u "$AUTH" "$(lb_node_url "$i")/system/functions" >"$tmp/list"
		! grep -q '"loaded":true' "$tmp/list" || return 1
	done
}

median() {
	sort -n | awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]; else print "-"}'
}

{
	printf 'provider:\n  name: openfaas\nfunctions:\n'
	for k in $(seq 1 "$FNS"); do
		printf '  f%02d:\n    image: %s\n    ember:\n      keepAlive: 3\n' "$k" \
			"$(cd "$B" && pwd)/functions/hello"
	done
} >"$tmp/stack.yml"

echo "# bench/lb.sh: backend $EMBER_BACKEND, $FNS functions (hello), wrk -c $CONNS, ${SECONDS_RUN}s a run, $(nproc) CPUs"
echo "# nodes     req/s    p50_ms  p99_ms  errors  node_cpu_ms/req  haproxy_cpu_ms/req  req/s/node"
echo "# (1 direct: wrk to the one node, not through HAProxy)"
hz=$(getconf CLK_TCK)
# row LABEL NODES [URL]: one wrk run (through the balancer, or to URL) and its line
row() {
	pids=$(node_pids)
	# shellcheck disable=SC2086 # a list of pids
	t0=$(cpu_ticks $pids)
	h0=$(cpu_ticks "$lb_haproxy")
	wrk_run "${3:-}"
	# shellcheck disable=SC2086
	t1=$(cpu_ticks $pids)
	h1=$(cpu_ticks "$lb_haproxy")
	req=$(field requests)
	us=$(field duration_us)
	errs=$(($(field status) + $(field connect) + $(field read) + $(field write) + $(field timeout)))
	awk -v l="$1" -v n="$2" -v r="$req" -v us="$us" -v p50="$(field p50_us)" \
		-v p99="$(field p99_us)" -v e=$errs -v t=$((t1 - t0)) -v h=$((h1 - h0)) -v hz="$hz" 'BEGIN {
		rps = r / (us / 1e6)
		printf "%-9s %8.0f %7.2f %7.2f %7d %16.3f %19.3f %11.0f\n", l, rps, p50 / 1000,
		    p99 / 1000, e, t * 1000 / hz / r, h * 1000 / hz / r, rps / n }'
}

for n in 1 2 3; do
	cluster $n
	wrk_run >/dev/null # a first run: every function warm on its node
	[ "$n" = 1 ] && row "1 direct" 1 "$(lb_node_url 1)"
	row "$n" "$n"
	[ "$n" = 3 ] || {
		lb_down
		lb_nodes=0
		lb_haproxy=
	}
done

# --- a node's loss, with 3 nodes: wrk through it, then the moved functions' first calls
echo "# node loss (3 nodes, HAProxy checks 1 s apart, fall 2): wrk -c $CONNS ${SECONDS_RUN}s, node 3 killed (SIGKILL) after 3 s"
lb_in wrk -t 2 -c "$CONNS" -d "${SECONDS_RUN}s" --latency -s bench/wrk-lb.lua "$LB_URL" \
	>"$tmp/wrk.out" 2>&1 &
wpid=$!
sleep 3 # a schedule, not a wait for a condition: the loss comes in the middle of the run
k0=$(date +%s%N)
lb_node_kill 3 || die "haproxy never marked node 3 down"
k1=$(date +%s%N)
wait $wpid
grep '^WRK ' "$tmp/wrk.out" >"$tmp/wrk" || die "no WRK line"
awk -v r="$(field requests)" -v us="$(field duration_us)" -v p99="$(field p99_us)" \
	-v mx="$(field max_us)" -v st="$(field status)" -v to="$(field timeout)" \
	-v rd="$(field read)" -v cn="$(field connect)" -v det=$(((k1 - k0) / 1000000)) 'BEGIN {
	printf "through the loss: %.0f req/s, p99 %.2f ms, max %.2f ms, errors: %d status, %d read, %d connect, %d timeout; marked down %d ms after the kill\n",
	    r / (us / 1e6), p99 / 1000, mx / 1000, st, rd, cn, to, det }'

# the moved functions were loaded on their new node at deploy and never called there: idle past
# keepAlive they are unloaded everywhere, so a first call on any node is cold from disk
lb_down
lb_nodes=0
lb_haproxy=
cluster 3
await "every function to be unloaded (keepAlive 3 s)" unloaded_all
: >"$tmp/owner-cold"
: >"$tmp/owner-warm"
for k in $(seq 1 "$FNS"); do
	f=$(printf 'f%02d' "$k")
	call_ms "$f" >>"$tmp/owner-cold"
	call_ms "$f" >>"$tmp/owner-warm"
	eval "owner_$f=$(tail -n1 "$tmp/owner-warm" | awk '{print $2}')"
done
await "every function to be unloaded again" unloaded_all
lb_node_kill 3 || die "haproxy never marked node 3 down"
: >"$tmp/moved-cold"
: >"$tmp/moved-warm"
for k in $(seq 1 "$FNS"); do
	f=$(printf 'f%02d' "$k")
	o=
	eval "o=\$owner_$f"
	[ "$o" = node3 ] || continue
	call_ms "$f" >>"$tmp/moved-cold"
	call_ms "$f" >>"$tmp/moved-warm"
done
moved=$(wc -l <"$tmp/moved-cold")
echo "# first call of a function, ms (median of the functions): cold from disk on its own node; warm; after the loss of node 3, on its new node"
printf 'owner, cold: %s ms (%s)\nowner, warm: %s ms\n' \
	"$(awk '{print $1}' "$tmp/owner-cold" | median)" \
	"$(awk '{print $3}' "$tmp/owner-cold" | sort | uniq -c | tr -s ' ' | tr '\n' ',')" \
	"$(awk '{print $1}' "$tmp/owner-warm" | median)"
printf 'moved (%d functions of node 3), first call on the new node: %s ms (%s); next call: %s ms\n' \
	"$moved" "$(awk '{print $1}' "$tmp/moved-cold" | median)" \
	"$(awk '{print $3}' "$tmp/moved-cold" | sort | uniq -c | tr -s ' ' | tr '\n' ',')" \
	"$(awk '{print $1}' "$tmp/moved-warm" | median)"
