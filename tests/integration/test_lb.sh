#!/bin/sh
# Three ember serve nodes behind HAProxy (ember lb-config), each node in a network namespace of
# its own, HAProxy in another (tests/integration/lb_lib.sh): a deploy to every node (ember
# deploy --gateway URL,URL,URL); every function answers through the balancer; a function's
# calls (any sub-path, query or the async route) land on one node, warm there, as each node's
# /metrics says; a node killed moves only its functions, which start cold on their new node
# from the snapshot that node built; a node that joins late (--seed a peer's state folder) gets
# the deployments and takes its functions back; nothing runs or listens outside the namespaces.
# Needs root, iproute2 and haproxy (scripts/setup.sh). Run from the repository root; B is the
# build directory (default build); EMBER_BACKEND is kvm, ptrace or auto. Waits poll, bounded by
# AWAIT_POLLS polls 0.1 s apart (default 600), never sleep for a fixed time.
set -u
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
pick_backend
# shellcheck source=tests/integration/srv_lib.sh
. "$(dirname "$0")/srv_lib.sh"
for need in ip haproxy; do
	command -v "$need" >/dev/null || {
		echo "FAIL $need is not installed (scripts/setup.sh installs it)"
		exit 1
	}
done
[ "$(id -u)" = 0 ] || {
	echo "FAIL test_lb makes network namespaces: it needs root"
	exit 1
}
case $E in
/*) ;;
*) E=$PWD/$E ;;
esac
# shellcheck source=tests/integration/lb_lib.sh
. "$(dirname "$0")/lb_lib.sh"
# shellcheck disable=SC2317 # run by the trap
cleanup() {
	lb_down
	srv_cleanup
}
trap cleanup EXIT

# the links and addresses of the namespace the test runs in, to compare at the end
root_net() {
	ip -o link show | awk '{print $2}' | sort
	ip -o addr show | awk '{print $2, $4}' | sort
}
root_net >"$tmp/root.before"

FNS="f01 f02 f03 f04 f05 f06 f07 f08 f09 f10 f11 f12"

# call PATH [CURL ARGS...]: through the balancer; the status in $code, the body in $tmp/body,
# the node that answered in $node and how it started the virtine in $how
call() {
	p=$1
	shift
	code=$(lb_in curl -s -o "$tmp/body" -D "$tmp/headers" -w '%{http_code}' --max-time 30 \
		"$@" "$LB_URL$p")
	node=$(tr -d '\r' <"$tmp/headers" | awk 'tolower($1) == "x-ember-node:" {print $2}')
	how=$(tr -d '\r' <"$tmp/headers" | awk 'tolower($1) == "x-ember-start:" {print $2}')
}

# metric I NAME LABELS: node I's sample of NAME{LABELS} (0 when absent)
metric() {
	lb_in curl -s --max-time 5 "$(lb_node_url "$1")/metrics" |
		awk -v k="$2{$3}" '$1 == k {v = $2} END {print v + 0}'
}

# calls_of I F: the invocations of F node I answered with 200
calls_of() {
	metric "$1" gateway_function_invocation_total "function_name=\"$2\",code=\"200\""
}

# calls_at_least F N: the nodes answered F N times or more, all told
# shellcheck disable=SC2317 # run by await
calls_at_least() {
	[ $(($(calls_of 1 "$1") + $(calls_of 2 "$1") + $(calls_of 3 "$1"))) -ge "$2" ]
}

# unloaded I F: node I has F deployed and not loaded (its keepAlive ran out)
# shellcheck disable=SC2317 # run by await
unloaded() {
	lb_in curl -s -u "$AUTH" --max-time 5 "$(lb_node_url "$1")/system/function/$2" |
		grep -qF '"loaded":false'
}

# --- ember lb-config on its own: what HAProxy takes, and what it refuses with a reason
"$E" lb-config --listen '[::]:9000' --timeout 120 --check-interval 500 10.1.2.3:8080 \
	'[fd00::7]:8080' localhost:8081 >"$tmp/any.cfg" 2>"$tmp/err"
same "lb-config with IPv4, IPv6 and a host name: exit 0" 0 "$?"
check "haproxy -c takes it" haproxy -c -q -f "$tmp/any.cfg"
contains "the timeout is HAProxy's timeout server" "timeout server 120s" "$tmp/any.cfg"
# lb_refused WHAT TEXT ARGS...: ember lb-config ARGS exits 125 with TEXT on stderr
lb_refused() {
	w=$1
	t=$2
	shift 2
	"$E" lb-config "$@" >"$tmp/out" 2>"$tmp/err"
	same "lb-config $w: exit 125" 125 "$?"
	contains "lb-config $w: says why" "$t" "$tmp/err"
	same "lb-config $w: prints no configuration" "" "$(cat "$tmp/out")"
}
lb_refused "without nodes" "no node given"
lb_refused "a node without a port" "'10.0.0.1' has no port" 10.0.0.1
lb_refused "port 0" "from 1 to 65535" 10.0.0.1:0
lb_refused "a bad address" "not an IPv4 address or a host name" 10.0.0.256:80
lb_refused "an IPv6 address without brackets" "brackets" ::1:80
lb_refused "a node twice" "is node 1 again" 10.0.0.1:80 10.0.0.2:80 10.0.0.1:80
lb_refused "a bad --listen" "--listen" --listen 8080 10.0.0.1:80
lb_refused "a bad --timeout" "--timeout" --timeout 0 10.0.0.1:80

# --- the net, three nodes, the balancer
check "three namespaces with a node each, the balancer's" lb_net_up 3
for i in 1 2 3; do
	check "node $i up on $LB_NET.$i only" lb_node_start $i
done
check "haproxy takes ember lb-config's configuration (haproxy -c) and starts" \
	lb_haproxy_start 1 2 3

# --- a deploy to every node; keepAlive 3 s: an idle function is unloaded, its snapshot kept
BA=$(cd "$B" && pwd)
mkdir -p "$tmp/proj"
{
	printf 'provider:\n  name: openfaas\nfunctions:\n'
	for f in $FNS; do
		printf '  %s:\n    image: %s\n    ember:\n      keepAlive: 3\n' "$f" "$BA/functions/hello"
	done
} >"$tmp/proj/stack.yml"
gws="$(lb_node_url 1),$(lb_node_url 2),$(lb_node_url 3)"
lb_in "$E" deploy -f "$tmp/proj/stack.yml" --gateway "$gws" --secrets "$tmp/secrets" \
	>"$tmp/out" 2>"$tmp/err"
same "ember deploy --gateway URL,URL,URL: exit 0" 0 "$?"
contains "deployed to every node" "deployed to 3 nodes" "$tmp/out"
for i in 1 2 3; do
	lb_in curl -s -u "$AUTH" "$(lb_node_url $i)/system/functions" >"$tmp/list"
	same "node $i has the 12 functions" 12 "$(grep -o '"name":"f[0-9]*"' "$tmp/list" | wc -l)"
done
call /system/functions -X POST -u "$AUTH" -d '{"service":"x","image":"hello"}'
same "a deployment through the balancer is refused (it would reach one node)" 405 "$code"
contains "the refusal says how to deploy" "ember deploy --gateway" "$tmp/body"
call /system/functions -u "$AUTH"
same "reading the functions through the balancer works" 200 "$code"

for f in $FNS; do
	for i in 1 2 3; do await "$f unloaded on node $i" unloaded $i "$f"; done
done
# --- every function answers through the balancer (each idle since its deploy starts cold);
# its next calls land on the same node, warm: other paths, queries, GET, the async route (at
# once: keepAlive is short)
for f in $FNS; do
	call "/function/$f" -d "$f"
	if [ "$code" = 200 ] && [ "$(cat "$tmp/body")" = "Hello, $f!" ]; then
		ok "$f answers through the balancer ($node)"
	else
		bad "$f through the balancer: $code $(head -c 200 "$tmp/body")"
	fi
	same "$f's first call starts cold (from the snapshot its deploy made)" cold "$how"
	eval "owner_$f=$node"
	want=$node
	moved=
	warm=1
	for p in "/function/$f?x=1" "/function/$f/a/b?y=2&z=3" "/function/$f/c"; do
		call "$p" -d x
		[ "$node" = "$want" ] || moved="$moved $p:$node"
		[ "$how" = warm ] || warm="$how at $p"
	done
	call "/function/$f" -G -d q=1
	[ "$node" = "$want" ] || moved="$moved GET:$node"
	call "/async-function/$f" -d x
	[ "$code" = 202 ] && [ "$node" = "$want" ] || moved="$moved async:$code:$node"
	same "$f: every call on $want" "" "$moved"
	same "$f: the calls after the first are warm" 1 "$warm"
done
for i in 1 2 3; do
	n=0
	for f in $FNS; do
		eval "[ \"\$owner_$f\" = node$i ] && n=\$((n + 1))"
	done
	eval "owned_$i=$n"
	check "node $i owns some functions ($n of 12)" test "$n" -gt 0
done

# 1 + 4 sync calls (the async call counts once it ran: awaited)
for f in $FNS; do
	eval "want=\$owner_$f"
	i=${want#node}
	await "$f's async call to run" calls_at_least "$f" 6
	got=
	for j in 1 2 3; do got="$got $(calls_of $j "$f")"; done
	case $i in
	1) wanted=" 6 0 0" ;;
	2) wanted=" 0 6 0" ;;
	3) wanted=" 0 0 6" ;;
	esac
	same "$f: the nodes' metrics count its 6 calls on $want only" "$wanted" "$got"
done

# --- a node dies: only its functions move, and start cold on their new node, from the
# snapshot that node built (at its deploy: nodes share no snapshot)
victim=2
for f in $FNS; do
	for i in 1 3; do eval "before_${i}_$f=$(calls_of $i "$f")"; done
done
# while HAProxy's checks have not seen it dead (2 of them, 0.2 s apart), a call to it fails to
# connect and is sent to another node: any of them. Once marked down, its functions go to the
# nodes the hash gives them.
check "node $victim killed (SIGKILL) and marked down by HAProxy's checks" lb_node_kill $victim
for f in $FNS; do
	eval "want=\$owner_$f"
	call "/function/$f" -d "$f"
	if [ "$want" != node$victim ]; then
		same "$f stays on $want" "$want 200" "$node $code"
		continue
	fi
	new=${node#node}
	if [ "$code" != 200 ] || [ "$new" = $victim ] || [ -z "$new" ]; then
		bad "$f, on the dead node, answers elsewhere: $code from '$node'"
		continue
	fi
	b=
	eval "b=\$before_${new}_$f"
	same "$f moves from node$victim to $node, where it never ran before" "0 Hello, $f!" \
		"$b $(cat "$tmp/body")"
	same "$f starts cold on $node (from its snapshot on disk)" cold "$how"
	same "$node made no virtine of $f from its image (init)" 0 \
		"$(metric "$new" ember_starts_total "function_name=\"$f\",start=\"init\"")"
	check "$node's snapshot is its own (in its state folder)" \
		test -n "$(ls "$tmp/n$new/state/snapshots" 2>/dev/null)"
	eval "owner_after_$f=$node"
done
for f in $FNS; do
	after=
	eval "want=\$owner_$f; after=\${owner_after_$f:-}"
	[ "$want" = node$victim ] || continue
	call "/function/$f" -d again
	same "$f: its next call is on $after, warm" "$after warm" "$node $how"
done

# --- a deploy while a node is down: the others get it, and the deploy says it failed
printf 'provider:\n  name: openfaas\nfunctions:\n  late:\n    image: %s\n' \
	"$BA/functions/hello" >"$tmp/proj/late.yml"
lb_in "$E" deploy -f "$tmp/proj/late.yml" --gateway "$gws" --secrets "$tmp/secrets" \
	>"$tmp/out" 2>"$tmp/err"
same "a deploy with node $victim down: exit 1" 1 "$?"
contains "it names the failed node" "$(lb_node_url $victim)" "$tmp/err"
contains "it counts the failed nodes" "1 of 3 nodes failed" "$tmp/err"
for i in 1 3; do
	lb_in curl -s -u "$AUTH" "$(lb_node_url $i)/system/functions" >"$tmp/list"
	contains "node $i got the function deployed while node $victim was down" '"name":"late"' \
		"$tmp/list"
done

# --- a node that joins late: a new machine in node 2's place, seeded from node 1's state
rm -rf "$tmp/n$victim/state"
: >"$tmp/rejoin.mark"
check "node $victim starts again with an empty state and --seed node 1's state folder" \
	lb_node_start $victim --seed "$tmp/n1/state"
contains "it says it was seeded" "seeded from" "$tmp/n$victim.log"
lb_in curl -s -u "$AUTH" "$(lb_node_url $victim)/system/functions" >"$tmp/list"
same "node $victim has the 12 functions" 12 "$(grep -o '"name":"f[0-9]*"' "$tmp/list" | wc -l)"
contains "and the one deployed while it was down" '"name":"late"' "$tmp/list"
# it loads what it was seeded with at start, as any restart does: its snapshots are its own
check "node $victim made snapshots of its own" \
	test -n "$(find "$tmp/n$victim/state/snapshots" -type f)"
same "node $victim's snapshots are all made after its start, none copied" "" \
	"$(find "$tmp/n$victim/state/snapshots" -type f ! -newer "$tmp/rejoin.mark")"
# HAProxy takes it back after two good checks: its functions come back to it
for f in $FNS; do
	eval "want=\$owner_$f"
	[ "$want" = node$victim ] || continue
	first=$f
	break
done
# shellcheck disable=SC2317 # run by await
back_on() {
	call "/function/$1" -d x
	[ "$node" = "$2" ]
}
await "$first to come back to node$victim" back_on "$first" "node$victim"
moved=
for f in $FNS; do
	eval "want=\$owner_$f"
	call "/function/$f" -d "$f"
	[ "$code $node" = "200 $want" ] || moved="$moved $f:$code:$node"
done
same "with node $victim back, every function is on its first node again" "" "$moved"

# --- a bad seed stops the start, with its reason (in node 1's namespace: it never listens)
# bad_seed WHAT SEED TEXT: ember serve --seed SEED exits 125 with TEXT on stderr
bad_seed() {
	ip netns exec "$(lb_ns 1)" "$E" serve --listen "$LB_NET.1:8081" --state "$tmp/bad/state" \
		--secrets "$tmp/secrets" --backend "$EMBER_BACKEND" --seed "$2" 2>"$tmp/err" &
	bp=$!
	k=0
	while kill -0 $bp 2>/dev/null && [ $k -lt 600 ]; do
		k=$((k + 1))
		sleep 0.1
	done
	kill -KILL $bp 2>/dev/null
	wait $bp
	same "$1: exit 125" 125 "$?"
	contains "$1: says why" "$3" "$tmp/err"
}
bad_seed "--seed of a missing folder" "$tmp/none" "$tmp/none"
bad_seed "--seed of a folder that is no state folder" "$tmp/proj" "not an ember serve state folder"
bad_seed "--seed of its own state folder" "$tmp/bad/state" "this node's own state folder"
mkdir -p "$tmp/odd/functions" "$tmp/odd/images"
ln -s /etc/passwd "$tmp/odd/images/passwd"
bad_seed "--seed with a symbolic link among the images" "$tmp/odd" "images/passwd"

# --- nothing outside the namespaces the test made
for i in 1 2 3; do
	eval "p=\$lb_pid_$i"
	check "node $i runs in its own network namespace" \
		test "$(readlink "/proc/$p/ns/net")" != "$(readlink /proc/self/ns/net)"
	same "node $i's namespace has lo and eth0 only" "eth0 lo" \
		"$(ip -n "$(lb_ns $i)" -o link show | awk '{sub(/@.*/, "", $2); sub(/:$/, "", $2); print $2}' | sort | tr '\n' ' ' | sed 's/ $//')"
	same "node $i's namespace has no route out" "" "$(ip -n "$(lb_ns $i)" route show default)"
	lb_in curl -s -o /dev/null --max-time 5 "$(lb_node_url $i)/healthz"
	ip netns exec "$(lb_ns $i)" ss -Htln >"$tmp/ss"
	same "node $i listens on its address only" "$LB_NET.$i:$LB_PORT" \
		"$(awk '{print $4}' "$tmp/ss" | tr '\n' ' ' | sed 's/ $//')"
done
check "haproxy runs in the balancer's namespace" \
	test "$(readlink "/proc/$lb_haproxy/ns/net")" != "$(readlink /proc/self/ns/net)"
same "the balancer's namespace has no route out" "" "$(ip -n "$LBNS" route show default)"
root_net >"$tmp/root.after"
check "the test's own namespace has the links and addresses it had" \
	cmp -s "$tmp/root.before" "$tmp/root.after"
ss -Htan >"$tmp/ss"
if grep -qF "$LB_NET." "$tmp/ss"; then
	bad "a socket of the test's own namespace has an address of the test's net: $(grep -F "$LB_NET." "$tmp/ss" | head -3)"
else
	ok "no socket of the test's own namespace has an address of the test's net"
fi

if [ $fail -gt 0 ]; then
	for i in 1 2 3; do
		echo "node $i's log:"
		tail -n 10 "$tmp/n$i.log"
	done
	echo "haproxy's log:"
	tail -n 10 "$tmp/haproxy.log"
fi
finish
