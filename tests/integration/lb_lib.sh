# Ember nodes behind HAProxy, each in a network namespace of its own (sourced, not run; needs
# root, iproute2 and haproxy): test_lb.sh and bench/lb.sh share it. Before sourcing: tmp, E (the
# ember binary), EMBER_BACKEND. POSIX sh.
#
# The net: namespace LBNS holds a bridge, br0 (LB_NET.254, where HAProxy listens and the
# clients run), and one veth per node to namespace NS_i (LB_NET.i, the node's only address
# besides its loopback). Every link is made inside the namespaces (ip -n), none in the one the
# test runs in; no namespace has a route out. The names carry the pid and a random part, so
# runs side by side never meet; lb_down (run at exit) kills what was started and removes the
# namespaces.
# shellcheck shell=sh disable=SC2154 # tmp, E: the sourcing script's
LB_TAG=ember$$x$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
LBNS=${LB_TAG}lb
LB_NET=10.213.0
LB_ADDR=$LB_NET.254
LB_PORT=8080
LB_URL=http://$LB_ADDR:$LB_PORT
lb_nodes=0
lb_haproxy=

# lb_ns I: node I's namespace
lb_ns() {
	echo "${LB_TAG}n$1"
}

# lb_in CMD...: CMD in the balancer's namespace
lb_in() {
	ip netns exec "$LBNS" "$@"
}

# shellcheck disable=SC2317 # run by the trap
lb_down() {
	[ -n "$lb_haproxy" ] && kill -KILL "$lb_haproxy" 2>/dev/null
	i=1
	while [ $i -le $lb_nodes ]; do
		eval "p=\${lb_pid_$i:-}"
		[ -n "$p" ] && kill -KILL "$p" 2>/dev/null
		ip netns del "$(lb_ns $i)" 2>/dev/null
		i=$((i + 1))
	done
	ip netns del "$LBNS" 2>/dev/null
	return 0
}

# lb_net_up N: the balancer's namespace and N nodes' (see above)
lb_net_up() {
	ip netns add "$LBNS" || return 1
	ip -n "$LBNS" link set lo up &&
		ip -n "$LBNS" link add br0 type bridge &&
		ip -n "$LBNS" addr add "$LB_ADDR/24" dev br0 &&
		ip -n "$LBNS" link set br0 up || return 1
	i=1
	while [ "$i" -le "$1" ]; do
		ns=$(lb_ns $i)
		ip netns add "$ns" || return 1
		lb_nodes=$i
		ip -n "$LBNS" link add "vn$i" type veth peer name eth0 netns "$ns" &&
			ip -n "$LBNS" link set "vn$i" master br0 up &&
			ip -n "$ns" link set lo up &&
			ip -n "$ns" addr add "$LB_NET.$i/24" dev eth0 &&
			ip -n "$ns" link set eth0 up || return 1
		i=$((i + 1))
	done
}

# lb_node_url I
lb_node_url() {
	echo "http://$LB_NET.$1:$LB_PORT"
}

# lb_up_ready URL: GET URL/readyz answers 200, from the balancer's namespace
# shellcheck disable=SC2317 # run by await
lb_up_ready() {
	[ "$(lb_in curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$1/readyz")" = 200 ]
}

# lb_node_start I [SERVE ARGS...]: ember serve in node I's namespace, on its address only, state
# in $tmp/nI/state, credentials $tmp/secrets, log $tmp/nI.log; returns when /readyz answers
# (1 when it never did); lb_pid_I is its pid
lb_node_start() {
	n=$1
	shift
	mkdir -p "$tmp/n$n"
	ip netns exec "$(lb_ns "$n")" "$E" serve --listen "$LB_NET.$n:$LB_PORT" \
		--state "$tmp/n$n/state" --secrets "$tmp/secrets" --backend "$EMBER_BACKEND" \
		--no-report "$@" 2>>"$tmp/n$n.log" &
	eval "lb_pid_$n=$!"
	k=0
	until lb_up_ready "$(lb_node_url "$n")"; do
		k=$((k + 1))
		if ! kill -0 "$(eval echo "\$lb_pid_$n")" 2>/dev/null || [ $k -ge 600 ]; then
			echo "node $n did not start ($k polls):"
			tail -n 20 "$tmp/n$n.log"
			return 1
		fi
		sleep 0.1
	done
}

# lb_node_kill I: SIGKILL, as a machine that dies; returns when HAProxy has marked it down
# (its log says so; 1 when it never did)
lb_node_kill() {
	eval "p=\$lb_pid_$1"
	kill -KILL "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	eval "lb_pid_$1="
	k=0
	downs=$(grep -c "ember_nodes/node$1 is DOWN" "$tmp/haproxy.log")
	until [ "$(grep -c "ember_nodes/node$1 is DOWN" "$tmp/haproxy.log")" -gt "$downs" ]; do
		k=$((k + 1))
		[ $k -lt 600 ] || return 1
		sleep 0.1
	done
}

# lb_haproxy_start I...: ember lb-config for nodes I..., checked by haproxy -c, then HAProxy in
# the balancer's namespace (foreground, its log in $tmp/haproxy.log); returns when every node
# is up in its eyes (a call through it reaches each; LB_CHECK_MS between checks, default 200)
lb_haproxy_start() {
	addrs=
	for n; do addrs="$addrs $LB_NET.$n:$LB_PORT"; done
	# shellcheck disable=SC2086
	"$E" lb-config --listen "$LB_ADDR:$LB_PORT" --check-interval "${LB_CHECK_MS:-200}" \
		$addrs >"$tmp/haproxy.cfg" || return 1
	haproxy -c -q -f "$tmp/haproxy.cfg" || return 1
	# ip netns exec execs haproxy: $! is haproxy's pid (lb_in, a function, would be a subshell)
	ip netns exec "$LBNS" haproxy -db -f "$tmp/haproxy.cfg" >>"$tmp/haproxy.log" 2>&1 &
	lb_haproxy=$!
	k=0
	until lb_up_ready "$LB_URL"; do
		k=$((k + 1))
		if [ $k -ge 600 ] || ! kill -0 "$lb_haproxy" 2>/dev/null; then
			echo "haproxy did not start:"
			cat "$tmp/haproxy.log"
			return 1
		fi
		sleep 0.1
	done
}

# lb_haproxy_stop
lb_haproxy_stop() {
	kill -TERM "$lb_haproxy" 2>/dev/null
	wait "$lb_haproxy" 2>/dev/null
	lb_haproxy=
}
