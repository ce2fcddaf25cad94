#!/bin/sh
# Issue 37's benchmark on loopback: MEMBERS etcd members and NODES `ember serve --cluster` nodes
# (each with a store of its own), HAProxy with `ember lb-config` in front, all started and
# stopped here. Measures: how long a deploy takes to be visible on every node (UPDATES updates,
# p50/p99/max); what each node holds of FNS functions (owned, next-owned, loaded, snapshot
# bytes on disk, RSS); a hot function past one node's capacity (nap, 20 ms a call, at most CAP
# at once on a node: one node serves CAP/0.02 calls a second) through HAProxy without and with
# bounded loads (hash-balance-factor), and how its calls spread over the nodes; a node killed
# (SIGKILL) under load: the errors, and how long until its functions answer from their next
# owner. Needs etcd, haproxy, wrk, curl, python3 (scripts/setup.sh) and a build (make all).
#
# usage: sh bench/cluster.sh    (from the repository root)
# Environment: B (build dir, default build), BACKEND (kvm or ptrace, default kvm), MEMBERS
# (default 3), NODES (default 6), FNS (default 12), UPDATES (default 20), CAP (default 4),
# SECONDS_RUN (each wrk run, default 10).
set -u
NAME=bench/cluster.sh
B=${B:-build}
BACKEND=${BACKEND:-kvm}
MEMBERS=${MEMBERS:-3}
NODES=${NODES:-6}
FNS=${FNS:-12}
UPDATES=${UPDATES:-20}
CAP=${CAP:-4}
SECONDS_RUN=${SECONDS_RUN:-10}
# shellcheck source=bench/serve_lib.sh
. bench/serve_lib.sh # tmp, die, await (30 s), stop_pids killed at exit
for t in etcd haproxy wrk curl python3; do
	command -v $t >/dev/null || die "needs $t (scripts/setup.sh installs it)"
done
[ -x "$B/ember" ] || die "no $B/ember: make all first"
E=$(cd "$B" && pwd)/ember
mkdir -p "$tmp/secrets"
printf 'bench\n' >"$tmp/secrets/basic-auth-user"
od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$tmp/secrets/basic-auth-password"
AUTH="bench:$(cat "$tmp/secrets/basic-auth-password")"
export AUTH
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# --- etcd: MEMBERS members on loopback (cI, ppI: their client and peer ports)
initial='' eps='' c='' pp='' c1='' pid=''
i=1
while [ $i -le "$MEMBERS" ]; do
	eval "c$i=$(free_port) pp$i=$(free_port)"
	eval "initial=\"\${initial:+\$initial,}m$i=http://127.0.0.1:\$pp$i\""
	eval "eps=\"\${eps:+\$eps,}127.0.0.1:\$c$i\""
	i=$((i + 1))
done
i=1
while [ $i -le "$MEMBERS" ]; do
	eval "c=\$c$i pp=\$pp$i"
	etcd --name "m$i" --data-dir "$tmp/etcd$i" --listen-client-urls "http://127.0.0.1:$c" \
		--advertise-client-urls "http://127.0.0.1:$c" --listen-peer-urls "http://127.0.0.1:$pp" \
		--initial-advertise-peer-urls "http://127.0.0.1:$pp" --initial-cluster "$initial" \
		--initial-cluster-state new >>"$tmp/etcd.log" 2>&1 &
	stop_pids="$stop_pids $!"
	i=$((i + 1))
done
await "etcd" sh -c "curl -sf http://127.0.0.1:$c1/health | grep -q true"

# --- the nodes
ports=''
i=1
while [ $i -le "$NODES" ]; do
	p=$(free_port)
	ports="$ports $p"
	"$E" serve --listen "127.0.0.1:$p" --state "$tmp/state$i" --backend "$BACKEND" \
		--secrets "$tmp/secrets" --cluster "etcd://$eps" --store "$tmp/store$i" \
		2>>"$tmp/node$i.log" &
	eval "np$i=$! port$i=$p"
	stop_pids="$stop_pids $!"
	mkdir -p "$tmp/store$i"
	i=$((i + 1))
done
for p in $ports; do
	await "node $p" sh -c "curl -sf http://127.0.0.1:$p/readyz >/dev/null"
done
eval "N1=\$port1"
hp=$(free_port)
nodes=$(for p in $ports; do printf '127.0.0.1:%s ' "$p"; done)
lb() { # lb FACTOR: HAProxy with lb-config's configuration, --balance-factor FACTOR
	[ -n "${hpid:-}" ] && kill "$hpid" && wait "$hpid" 2>/dev/null
	# shellcheck disable=SC2086 # one argument a node
	"$E" lb-config --listen "127.0.0.1:$hp" --check-interval 500 --balance-factor "$1" \
		$nodes >"$tmp/haproxy.cfg"
	haproxy -f "$tmp/haproxy.cfg" >>"$tmp/haproxy.log" 2>&1 &
	hpid=$!
	stop_pids="$stop_pids $hpid"
	await "haproxy" sh -c "curl -s -o /dev/null http://127.0.0.1:$hp/healthz"
}
curl -sf -u "$AUTH" -X PUT --data-binary @"$B/functions/hello" "http://127.0.0.1:$N1/system/images/hello" >/dev/null || die "upload hello"
curl -sf -u "$AUTH" -X PUT --data-binary @"$B/guest/nap.musl" "http://127.0.0.1:$N1/system/images/nap" >/dev/null || die "upload nap"
echo "# bench/cluster.sh: backend $BACKEND, $MEMBERS etcd members, $NODES nodes, $(nproc) CPUs, loopback"

# --- deploys, visibility, what each node holds
# shellcheck disable=SC2086 # one argument a port
python3 - "$FNS" "$UPDATES" "$tmp" $ports <<'PY' || die "the deploy measurements failed"
import base64, json, os, sys, time, urllib.request
fns, updates, tmp, ports = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4:]
auth = "Basic " + base64.b64encode(os.environ["AUTH"].encode()).decode()
def call(port, method, path, body=None):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                 data=body and json.dumps(body).encode(),
                                 headers={"Authorization": auth})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, None
def converge(name, rev, t0):
    left = set(ports)
    while left and time.monotonic() - t0 < 60:
        for n in list(left):
            code, st = call(n, "GET", f"/system/function/{name}")
            if code == 200 and st.get("cluster", {}).get("revision") == rev:
                left.discard(n)
        time.sleep(0.005)
    assert not left, f"{name} at {rev} not on {left}"
    return (time.monotonic() - t0) * 1000
for i in range(fns):
    code, j = call(ports[0], "POST", "/system/functions", {"service": f"f{i + 1:02d}", "image": "hello",
                                                      "envVars": {"FN": str(i)}})  # a snapshot each
    assert code == 202, code
    converge(f"f{i + 1:02d}", j["revision"], time.monotonic())
code, j = call(ports[0], "POST", "/system/functions",
               {"service": "hot", "image": "nap", "ember": {"maxConcurrency": int(os.environ.get("CAP", "4")), "queue": 10000}})
assert code == 202, code
converge("hot", j["revision"], time.monotonic())
took = []
for i in range(updates):
    t0 = time.monotonic()
    code, j = call(ports[0], "PUT", "/system/functions",
                   {"service": "f01", "image": "hello", "envVars": {"FN": "0", "ROUND": str(i)}})
    assert code == 202, code
    took.append(converge("f01", j["revision"], t0))
took.sort()
p = lambda q: took[min(len(took) - 1, int(q * len(took)))]
print(f"# deploy visible on all {len(ports)} nodes, ms over {updates} updates of f01 (its owner and next owner load and snapshot it, the others only store it)")
print(f"deploy visible: p50 {p(0.5):.0f}  p99 {p(0.99):.0f}  max {took[-1]:.0f}")
def held(n):  # loaded == owned + next-owned (what a node loaded as it lost a role is idle 10 s)
    code, info = call(n, "GET", "/system/info")
    code, lst = call(n, "GET", "/system/functions")
    c = info["ember"]["cluster"]
    return sum(1 for f in lst if f.get("ember", {}).get("loaded")) == c["owned"] + c["nextOwned"]
t0 = time.monotonic()
while not all(held(n) for n in ports) and time.monotonic() - t0 < 30:
    time.sleep(0.5)
print(f"# what each node holds of {fns + 1} functions: owned, next-owned, loaded, the disk its snapshots take (allocated), the guest memory of its virtines")
for i, n in enumerate(ports, 1):
    code, info = call(n, "GET", "/system/info")
    c = info["ember"]["cluster"]
    code, lst = call(n, "GET", "/system/functions")
    loaded = sum(1 for f in lst if f.get("ember", {}).get("loaded"))
    guest = sum(f.get("usage", {}).get("totalMemoryBytes", 0) for f in lst)
    snap = 0
    for root, _, files in os.walk(f"{tmp}/state{i}/snapshots"):
        snap += sum(os.lstat(os.path.join(root, f)).st_blocks * 512 for f in files)
    print(f"node{i}  owned {c['owned']:2d}  next {c['nextOwned']:2d}  loaded {loaded:2d}  snapshots {snap / 1e6:6.1f} MB  guest {guest / 1e6:6.1f} MB")
PY
i=1
for p in $ports; do
	eval "pid=\$np$i"
	printf 'node%s RSS %s MB\n' "$i" "$(awk '/VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$pid/status")"
	i=$((i + 1))
done

# --- the hot function: 3x one node's capacity, without and with bounded loads
calls() { # calls: "node=invocations ..." of hot
	for p in $ports; do
		curl -s -u "$AUTH" "http://127.0.0.1:$p/system/function/hot" |
			python3 -c 'import json, sys; print(json.load(sys.stdin).get("invocationCount", 0))'
	done | tr '\n' ' '
}
conns=$((3 * CAP))
one=$((CAP * 50))
echo "# hot: nap 20 ms a call, maxConcurrency $CAP a node: one node serves $one calls/s; wrk -c $conns (3x) through HAProxy, ${SECONDS_RUN}s"
echo "# factor   req/s   x_one_node  p99_ms  errors  calls per node (this run)"
for f in 0 150 125; do
	lb $f
	before=$(calls)
	BODY=20 wrk -t 2 -c $conns -d "${SECONDS_RUN}s" -s bench/wrk-post.lua \
		"http://127.0.0.1:$hp/function/hot" >"$tmp/wrk" 2>&1
	after=$(calls)
	python3 - "$f" "$one" "$before" "$after" "$tmp/wrk" <<'PY'
import re, sys
f, one, before, after = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split()
m = dict(re.findall(r"(\w+)=(\d+)", [l for l in open(sys.argv[5]) if l.startswith("WRK")][0]))
rps = int(m["requests"]) / (int(m["duration_us"]) / 1e6)
err = sum(int(m[k]) for k in ("status", "connect", "read", "write", "timeout"))
per = [int(a) - int(b) for a, b in zip(after, before)]
print(f"{f:>6} {rps:8.0f} {rps / one:10.2f} {int(m['p99_us']) / 1000:8.1f} {err:6d}  {' '.join(map(str, per))}")
PY
done

# --- a node killed under load: wrk over the FNS functions for SECONDS_RUN s, the owner of f01
# killed after 3 s; a poller times f01 until it answers again (from its next owner)
lb 150
# shellcheck disable=SC2046 # the owner's and the next owner's addresses
set -- $(curl -s -u "$AUTH" "http://127.0.0.1:$N1/system/function/f01" |
	python3 -c 'import json, sys; c = json.load(sys.stdin)["cluster"]; print(c["owner"], c["nextOwner"])')
victim='' vi='' nx='' i=1
for p in $ports; do
	[ "127.0.0.1:$p" = "$1" ] && eval "victim=\$np$i vi=$i"
	[ "127.0.0.1:$p" = "$2" ] && nx=$i
	i=$((i + 1))
done
[ -n "$victim" ] || die "no owner of f01"
FNS=$FNS wrk -t 2 -c 32 -d "${SECONDS_RUN}s" -s bench/wrk-lb.lua "http://127.0.0.1:$hp" >"$tmp/wrk" 2>&1 &
wpid=$!
sleep 3 # the load runs before the kill
python3 - "$hp" "$victim" "node$nx" <<'PY' >"$tmp/loss"
import os, signal, sys, time, urllib.request
hp, victim = sys.argv[1], int(sys.argv[2])
t0 = time.monotonic()
os.kill(victim, signal.SIGKILL)
failed, first, nxt = 0, None, None
while time.monotonic() - t0 < 30 and nxt is None:
    try:
        req = urllib.request.Request(f"http://127.0.0.1:{hp}/function/f01", data=b"x")
        with urllib.request.urlopen(req, timeout=5) as r:
            at = ((time.monotonic() - t0) * 1000, r.headers.get("X-Ember-Node"))
            first = first or at
            nxt = at if at[1] == sys.argv[3] else None
    except Exception:
        failed += 1
    time.sleep(0.01)
print(f"f01 first answered {first[0]:.0f} ms after its owner was killed (from {first[1]}), "
      f"and from its next owner {sys.argv[3]} {nxt[0]:.0f} ms after; {failed} calls failed"
      if first and nxt else f"f01: first answer {first}, none from {sys.argv[3]} in 30 s")
PY
wait $wpid
echo "# node loss: wrk -c 32 ${SECONDS_RUN}s over $FNS functions through HAProxy (checks 500 ms apart, fall 2), node $vi (owner of f01) killed after 3 s"
cat "$tmp/loss"
grep -E "WRK|Requests/sec" "$tmp/wrk" | head -3
