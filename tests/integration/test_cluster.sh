#!/bin/sh
# ember serve --cluster: deployments kept in etcd (a real etcd on loopback, started and stopped
# here), three nodes that converge to it. A deploy through one node reaches the three (their
# status and /metrics say at which etcd revision); an update and a delete too; a deployment with
# files, its bundle by the store; `ember deploy` of a stack through one node; a node down
# during a deploy and a delete catches up when it returns; a blob of the shared store whose
# content does not match its digest is refused; with etcd down, deploys answer 503 and the
# nodes go on serving, and converge again once it is back; on 3 etcd members, one killed while
# deploying, each deploy is on every node or on none. Then nodes that load what they own: each
# registers in etcd and loads (snapshots) the functions it owns or owns next on HAProxy's ring,
# which HAProxy (ember lb-config) computes alike; a node leaving moves its functions; a store of
# each node's own, blobs fetched from peers over HTTP, one that does not match its digest
# refused. Needs etcd (scripts/setup.sh: etcd-server) and haproxy. Run from the repository root;
# B is the build directory; EMBER_BACKEND as for every suite. Waits poll (await), bounded by AWAIT_POLLS polls 0.1 s apart.
set -u
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
pick_backend
# shellcheck source=tests/integration/srv_lib.sh
. "$(dirname "$0")/srv_lib.sh"
if ! command -v etcd >/dev/null; then
	echo "FAIL etcd is not installed (scripts/setup.sh installs etcd-server)"
	exit 1
fi

etcd_pid=
hap_pid=
p1='' p2='' p3=''
# shellcheck disable=SC2317 # run by the trap
cleanup() {
	for p in $p1 $p2 $p3 $etcd_pid $hap_pid; do kill -KILL "$p" 2>/dev/null; done
	[ -n "${SERVER_LOG:-}" ] && cat "$tmp"/node*.log "$tmp/etcd.log" >"$SERVER_LOG"
	SERVER_LOG='' srv_cleanup
}
trap cleanup EXIT

ec_port=$(free_port)
peer_port=$(free_port)
EC=http://127.0.0.1:$ec_port
etcd_start() {
	etcd --name ember-test --data-dir "$tmp/etcd" --listen-client-urls "$EC" \
		--advertise-client-urls "$EC" --listen-peer-urls "http://127.0.0.1:$peer_port" \
		--initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
		--initial-cluster "ember-test=http://127.0.0.1:$peer_port" >>"$tmp/etcd.log" 2>&1 &
	etcd_pid=$!
	await "etcd to answer" sh -c "curl -sf $EC/health | grep -q true"
}
etcd_stop() {
	kill -TERM "$etcd_pid"
	wait "$etcd_pid" 2>/dev/null # etcd's status after SIGTERM is its own affair
	etcd_pid=
}

n1=$(free_port)
n2=$(free_port)
n3=$(free_port)
mkdir "$tmp/store"
# node_start I: node I (port $nI, state $tmp/${ST}I) in the cluster; waits for /healthz. The
# store is $tmp/store, shared, or each node's own $tmp/storeI with OWN_STORE=1
ST=state
node_start() {
	np=$(eval "echo \"\$n$1\"")
	sd=$tmp/store
	[ -n "${OWN_STORE:-}" ] && sd=$tmp/store$1 && mkdir -p "$sd"
	"$E" serve --listen "127.0.0.1:$np" --state "$tmp/$ST$1" --backend "$EMBER_BACKEND" \
		--secrets "$tmp/secrets" --cluster "etcd://127.0.0.1:$ec_port" --store "$sd" \
		2>>"$tmp/node$1.log" &
	eval "p$1=\$!"
	await "node $1 to start" curl -sf "http://127.0.0.1:$np/healthz" -o /dev/null
}
node_stop() {
	np=$(eval "echo \"\$p$1\"")
	kill -TERM "$np"
	wait "$np"
	rc=$?
	eval "p$1="
}
# on I METHOD PATH [CURL ARGS]: http to node I
on() {
	eval "U=http://127.0.0.1:\$n$1"
	shift
	http "$@"
}
# rev_is I NAME REV: node I applied NAME at etcd revision REV (its status says so)
# shellcheck disable=SC2317 # run by await
rev_is() {
	on "$1" GET "/system/function/$2" >/dev/null &&
		python3 -c 'import json, sys
c = json.load(open(sys.argv[1])).get("cluster", {})
sys.exit(0 if c.get("revision") == int(sys.argv[2]) and "error" not in c else 1)' \
			"$tmp/body" "$3"
}
# gone I NAME: node I does not have NAME
# shellcheck disable=SC2317 # run by await
gone() {
	[ "$(on "$1" GET "/system/function/$2")" = 404 ]
}
revision() {
	python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["revision"])' "$tmp/body"
}
# info_has I PYTHON-EXPR: node I's /system/info "ember.cluster" (as c) makes EXPR true
# shellcheck disable=SC2317 # run by await
info_has() {
	on "$1" GET /system/info >/dev/null &&
		python3 -c 'import json, sys
c = json.load(open(sys.argv[1]))["ember"]["cluster"]
sys.exit(0 if eval(sys.argv[2]) else 1)' "$tmp/body" "$2"
}

# bad_start WHAT TEXT ARGS...: ember serve with ARGS refuses to start, saying TEXT (a server
# that starts is stopped after 60 s, and fails the check)
bad_start() {
	bs_what=$1
	bs_text=$2
	shift 2
	timeout 60 "$E" serve --listen "127.0.0.1:$n1" --state "$tmp/bad" --backend "$EMBER_BACKEND" \
		--secrets "$tmp/secrets" "$@" >/dev/null 2>"$tmp/err"
	rc=$?
	expect_rc 125 "$bs_what"
	has "$tmp/err" "$bs_text" "... saying '$bs_text'"
}
bad_start "--cluster without --store" "needs --store" --cluster "etcd://127.0.0.1:$ec_port"
bad_start "--store that is no folder" "not a folder" --cluster "etcd://127.0.0.1:$ec_port" \
	--store "$tmp/none"
bad_start "--cluster that is not etcd://" "not etcd://" --cluster "http://127.0.0.1:$ec_port" \
	--store "$tmp/store"
bad_start "--advertise that is not HOST:PORT" "is not HOST:PORT" --cluster \
	"etcd://127.0.0.1:$ec_port" --store "$tmp/store" --advertise nohost
# nodes on 0.0.0.0 would all register the same member: each must say how it is reached
bad_start "--cluster on the wildcard address without --advertise" "--advertise HOST:PORT" \
	--cluster "etcd://127.0.0.1:$ec_port" --store "$tmp/store" --listen "0.0.0.0:$n1"

etcd_start
node_start 1
node_start 2
node_start 3

# --- a deploy through node 1 converges on the three
expect "upload hello to node 1" 201 "$(on 1 PUT /system/images/hello --data-binary @"$B/functions/hello")"
expect "deploy hello through node 1: 202 once etcd took it" 202 \
	"$(on 1 POST /system/functions -d '{"service":"hello","image":"hello"}')"
r1=$(revision)
for i in 1 2 3; do
	await "node $i at hello's revision $r1" rev_is $i hello "$r1" && ok "node $i converged to hello at $r1"
	expect "hello answers on node $i" 200 "$(on $i POST /function/hello -d Ember)" "Hello, Ember!"
done
on 3 GET /metrics >/dev/null
contains "node 3's /metrics: hello's revision" "ember_cluster_function_revision{function_name=\"hello\"} $r1" "$tmp/body"
contains "node 3's /metrics: its revision" "ember_cluster_revision $r1" "$tmp/body"
contains "the store holds hello by its digest" "$(sha256sum "$B/functions/hello" | cut -d' ' -f1)" \
	"$(ls "$tmp/store/sha256/" >"$tmp/list"; echo "$tmp/list")"
expect "deploy hello again through node 2: 409" 409 \
	"$(on 2 POST /system/functions -d '{"service":"hello","image":"hello"}')"
expect "a deploy of an image never uploaded: 400" 400 \
	"$(on 2 POST /system/functions -d '{"service":"h2","image":"nothere"}')"
contains "... saying so" "has not been uploaded" "$tmp/body"

# --- how long a deploy takes to be visible on the three: 10 updates through node 1, each timed
# from its 202 until every node's status has its revision (polled every 5 ms)
python3 - "$AUTH" "$n1" "$n2" "$n3" >"$tmp/conv" 2>&1 <<'PY'
import base64, json, sys, time, urllib.request
auth = "Basic " + base64.b64encode(sys.argv[1].encode()).decode()
nodes = sys.argv[2:]
def call(port, method, path, body=None):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                 data=body and json.dumps(body).encode(),
                                 headers={"Authorization": auth})
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, None
took = []
for i in range(10):
    t0 = time.monotonic()
    code, j = call(nodes[0], "PUT", "/system/functions",
                   {"service": "hello", "image": "hello", "envVars": {"ROUND": str(i)}})
    assert code == 202, code
    left = set(nodes)
    while left and time.monotonic() - t0 < 60:
        for n in list(left):
            code, st = call(n, "GET", "/system/function/hello")
            if code == 200 and st.get("cluster", {}).get("revision") == j["revision"]:
                left.discard(n)
        time.sleep(0.005)
    assert not left, f"round {i}: not converged on {left}"
    took.append((time.monotonic() - t0) * 1000)
took.sort()
print(f"deploy visible on 3 nodes, ms over 10 updates: min {took[0]:.0f} median {took[5]:.0f} max {took[-1]:.0f}")
PY
check "10 updates through node 1 each converge on the three" grep -q "^deploy visible" "$tmp/conv"
cat "$tmp/conv"

# --- an update through node 2 (a runtime: no image) and a delete through node 3
expect "update hello through node 2 to a JS function" 202 \
	"$(on 2 PUT /system/functions -d '{"service":"hello","runtime":"js","code":"function handler(b) { return \"js \" + b; }"}')"
r2=$(revision)
for i in 1 2 3; do
	await "node $i at hello's revision $r2" rev_is $i hello "$r2" && ok "node $i converged to the update at $r2"
	expect "the update answers on node $i" 200 "$(on $i POST /function/hello -d x)" "js x"
done
expect "a JS function that cannot load: 400, as on a node alone" 400 \
	"$(on 1 PUT /system/functions -d '{"service":"hello","runtime":"js","code":"nothing here"}')"
expect "delete hello through node 3" 202 "$(on 3 DELETE /system/functions -d '{"functionName":"hello"}')"
for i in 1 2 3; do
	await "hello gone from node $i" gone $i hello && ok "hello deleted on node $i"
done
expect "delete it again: 404" 404 "$(on 1 DELETE /system/functions -d '{"functionName":"hello"}')"

# --- a deployment with files through node 2: the bundle goes by the store, each node reads it
# shellcheck source=tests/integration/files_lib.sh
. "$(dirname "$0")/files_lib.sh"
expect "upload files.musl to node 2" 201 "$(on 2 PUT /system/images/files --data-binary @"$P")"
tar -C "$T" -czf "$tmp/tree.tgz" .
printf '{"service":"fs","image":"files","files":"%s"}' "$(base64 -w0 "$tmp/tree.tgz")" \
	>"$tmp/deploy.json"
expect "deploy fs with files through node 2" 202 \
	"$(on 2 POST /system/functions --data-binary @"$tmp/deploy.json")"
rf=$(revision)
contains "the store holds the files by their digest" "$(sha256sum "$tmp/tree.tgz" | cut -d' ' -f1)" \
	"$(ls "$tmp/store/sha256/" >"$tmp/list"; echo "$tmp/list")"
for i in 1 2 3; do
	await "node $i at fs's revision" rev_is $i fs "$rf"
	NOAUTH=1 on $i POST /function/fs --data-binary request >/dev/null
	check "node $i's fs reads its files as natively" cmp -s "$tmp/body" "$tmp/native"
done

# --- ember deploy (a stack file, its image uploaded) through one node reaches the three
case $B in
/*) BA=$B ;;
*) BA=$PWD/$B ;;
esac
mkdir "$tmp/proj"
cat >"$tmp/proj/stack.yml" <<YML
provider:
  name: openfaas
functions:
  stacked:
    image: $BA/functions/hello
YML
(cd "$tmp/proj" && "$BA/ember" deploy -f stack.yml --gateway "http://127.0.0.1:$n3" \
	--secrets "$tmp/secrets") >"$tmp/out" 2>"$tmp/err"
rc=$?
expect_rc 0 "ember deploy through node 3"
# shellcheck disable=SC2317 # run by await
answers() {
	[ "$(on "$1" POST "/function/$2" -d Ember)" = 200 ] && [ "$(cat "$tmp/body")" = "Hello, Ember!" ]
}
for i in 1 2 3; do
	await "stacked on node $i" answers $i stacked && ok "stacked answers on node $i"
done

# --- a node down during a deploy and a delete catches up when it returns (no --seed)
expect "deploy old" 202 "$(on 1 POST /system/functions -d '{"service":"old","image":"hello"}')"
await "node 3 has old" rev_is 3 old "$(revision)"
node_stop 3
expect "deploy late while node 3 is down" 202 \
	"$(on 1 POST /system/functions -d '{"service":"late","image":"hello"}')"
rl=$(revision)
expect "delete old while node 3 is down" 202 "$(on 2 DELETE /system/functions -d '{"functionName":"old"}')"
node_start 3
await "node 3 catches up with late" rev_is 3 late "$rl" && ok "node 3 caught up with the deploy it missed"
expect "late answers on node 3" 200 "$(on 3 POST /function/late -d Ember)" "Hello, Ember!"
await "node 3 drops old" gone 3 old && ok "node 3 caught up with the delete it missed"
expect "node 3 is ready" 200 "$(on 3 GET /readyz)"

# --- a blob of the shared store that does not match its digest is refused
node_stop 3
expect "upload args to node 1" 201 "$(on 1 PUT /system/images/args --data-binary @"$B/guest/args.musl")"
expect "deploy args while node 3 is down" 202 \
	"$(on 1 POST /system/functions -d '{"service":"args","image":"args"}')"
blob=$tmp/store/sha256/$(sha256sum "$B/guest/args.musl" | cut -d' ' -f1)
check "the store holds args" test -f "$blob"
cp "$B/functions/hello" "$blob" # another image under args' digest
node_start 3
await "node 3 refuses the changed blob" info_has 3 \
	'"does not match its digest" in c["functions"].get("args", {}).get("error", "")' &&
	ok "node 3 refused a blob that does not match its digest"
contains "... naming the blob" "$blob" "$tmp/body"
expect "args is not deployed on node 3" 404 "$(on 3 GET /system/function/args)"
on 3 GET /metrics >/dev/null
contains "node 3's /metrics count the failure" "ember_cluster_function_revision{function_name=\"args\"} -1" "$tmp/body"
expect "late still answers on node 3" 200 "$(on 3 POST /function/late -d Ember)" "Hello, Ember!"

# --- etcd down: deploys refused with 503, the nodes go on serving
etcd_stop
expect "deploy with etcd down: 503" 503 \
	"$(on 2 POST /system/functions -d '{"service":"never","image":"hello"}')"
contains "... saying etcd did not take it" "etcd did not take the deployment" "$tmp/body"
expect "delete with etcd down: 503" 503 "$(on 1 DELETE /system/functions -d '{"functionName":"late"}')"
for i in 1 2 3; do
	expect "late answers on node $i with etcd down" 200 "$(on $i POST /function/late -d Ember)" "Hello, Ember!"
	await "node $i says it lost etcd" info_has $i 'not c["connected"]' && ok "node $i reports etcd lost"
done
etcd_start
for i in 1 2 3; do
	await "node $i back on etcd" info_has $i 'c["connected"]' && ok "node $i watches etcd again"
done
expect "deploy once etcd is back" 202 "$(on 2 POST /system/functions -d '{"service":"after","image":"hello"}')"
ra=$(revision)
for i in 1 2 3; do
	await "node $i at after's revision" rev_is $i after "$ra" && ok "node $i converged after etcd came back"
done
expect "never was not deployed" 404 "$(on 1 GET /system/function/never)"

for i in 1 2 3; do
	node_stop $i
	same "node $i exits 0 on SIGTERM" 0 "$rc"
done

# --- nodes that load what they own: each registers in etcd (a lease), computes HAProxy's ring
# from the members and loads (and snapshots) the functions it owns and those it owns next; a
# third node waits for a call. Each node has a store of its own: a blob a node lacks comes from
# a peer over HTTP (GET /system/store), checked against its digest
etcd_stop
rm -rf "$tmp/etcd"
etcd_start
ST=own OWN_STORE=1
for i in 1 2 3; do node_start $i; done
for i in 1 2 3; do
	await "node $i sees 3 members" info_has $i 'len(c["members"]) == 3' && ok "node $i has 3 nodes on its ring"
done
expect "upload hello to node 1 (its store only)" 201 "$(on 1 PUT /system/images/hello --data-binary @"$B/functions/hello")"
for f in f0 f1 f2 f3; do
	expect "deploy $f through node 1" 202 "$(on 1 POST /system/functions -d "{\"service\":\"$f\",\"image\":\"hello\"}")"
	rf=$(revision)
	for i in 1 2 3; do await "node $i at $f's revision" rev_is $i $f "$rf"; done
done
hello_digest=$(sha256sum "$B/functions/hello" | cut -d' ' -f1)
check "node 2 fetched hello from node 1 over HTTP (its own store has it)" test -f "$tmp/store2/sha256/$hello_digest"
NOAUTH=1 on 1 GET "/system/store?digest=sha256:$hello_digest" >"$tmp/code"
same "the store route needs the management credentials" 401 "$(cat "$tmp/code")"
# role_of I NAME: "ROLE LOADED OWNER NEXT" of NAME on node I
role_of() {
	on "$1" GET "/system/function/$2" >/dev/null && python3 -c 'import json, sys
j = json.load(open(sys.argv[1])); c = j.get("cluster", {})
print(c.get("role"), j["ember"]["loaded"], c.get("owner"), c.get("nextOwner"))' "$tmp/body"
}
# shellcheck disable=SC2317 # run by await
role_is() {
	[ "$(role_of "$1" "$2" | cut -d' ' -f1-2)" = "$3 $4" ]
}
# node_of ADDR: the node number listening there
node_of() {
	for i in 1 2 3; do [ "127.0.0.1:$(eval "echo \"\$n$i\"")" = "$1" ] && echo $i; done
}
for f in f0 f1 f2 f3; do
	r=$(role_of 1 $f)
	o=$(node_of "$(echo "$r" | cut -d' ' -f3)") x=$(node_of "$(echo "$r" | cut -d' ' -f4)")
	t=$((6 - o - x))
	check "$f has an owner and a next owner, two nodes" test -n "$o" -a -n "$x" -a "$o" != "$x"
	await "$f loaded on its owner, node $o" role_is "$o" $f owner True &&
		await "$f loaded on its next owner, node $x" role_is "$x" $f next True &&
		ok "$f is loaded and snapshotted on its owner (node $o) and its next owner (node $x)"
	same "$f is not loaded on node $t (neither)" "none False" "$(role_of $t $f | cut -d' ' -f1-2)"
	eval "third_$f=$t owner_$f=$o next_$f=$x"
done
on 1 GET /metrics >/dev/null
contains "node 1's /metrics: its members" "ember_cluster_members 3" "$tmp/body"
contains "node 1's /metrics: what it owns" "ember_cluster_owned_functions" "$tmp/body"
eval "t=\$third_f0"
expect "f0 answers on node $t, which does not hold it" 200 "$(on "$t" POST /function/f0 -d Ember)" "Hello, Ember!"
same "... and is loaded there since" "none True" "$(role_of "$t" f0 | cut -d' ' -f1-2)"

# --- HAProxy (ember lb-config) picks the owner the nodes computed: the same ring
hp=$(free_port)
"$E" lb-config --listen "127.0.0.1:$hp" --check-interval 200 "127.0.0.1:$n1" "127.0.0.1:$n2" \
	"127.0.0.1:$n3" >"$tmp/haproxy.cfg"
check "lb-config sets bounded loads" grep -q "hash-balance-factor 150" "$tmp/haproxy.cfg"
check "haproxy takes the configuration" haproxy -c -q -f "$tmp/haproxy.cfg"
haproxy -f "$tmp/haproxy.cfg" >>"$tmp/haproxy.log" 2>&1 &
hap_pid=$!
# via_is NAME K: a call of NAME through HAProxy was served by node K
# shellcheck disable=SC2317 # run by await
via_is() {
	U=http://127.0.0.1:$hp http POST "/function/$1" -d Ember >/dev/null &&
		grep -qi "^X-Ember-Node: node$2" "$tmp/headers"
}
for f in f0 f1 f2 f3; do
	eval "o=\$owner_$f"
	await "HAProxy sends $f to node $o" via_is $f "$o" && ok "HAProxy sends $f to its owner as the nodes see it (node $o)"
done

# --- a node that leaves (f0's owner, killed: its lease expires) moves its functions: their next
# owner owns them, and the third node loads them as their next owner; back, it owns them again
eval "L=\$owner_f0"
moved=''
for f in f0 f1 f2 f3; do
	eval "[ \"\$owner_$f\" = $L ]" && moved="$moved $f"
done
eval "kill -KILL \$p$L; wait \$p$L 2>/dev/null; p$L=" # its lease expires (3 s): nothing said
for f in $moved; do
	eval "x=\$next_$f t=\$third_$f"
	await "$f owned by node $x once node $L left" role_is "$x" "$f" owner True &&
		await "$f next-owned and loaded on node $t" role_is "$t" "$f" next True &&
		ok "node $L killed: $f moved to node $x, and node $t loaded it as its next owner"
	await "HAProxy sends $f to node $x" via_is "$f" "$x" && ok "HAProxy sends $f to node $x too"
done
node_start "$L"
for f in $moved; do
	await "$f back on node $L" role_is "$L" "$f" owner True && ok "node $L is back: it owns $f again"
done

# --- a blob a peer serves that does not match its digest is refused (node 3 is down; nodes 1
# and 2 have args in their stores, both changed under its digest)
node_stop 3
expect "upload args to node 1" 201 "$(on 1 PUT /system/images/args --data-binary @"$B/guest/args.musl")"
expect "deploy args while node 3 is down" 202 \
	"$(on 1 POST /system/functions -d '{"service":"args","image":"args"}')"
ra=$(revision)
await "node 2 has args" rev_is 2 args "$ra"
args_digest=$(sha256sum "$B/guest/args.musl" | cut -d' ' -f1)
for i in 1 2; do cp "$B/functions/hello" "$tmp/store$i/sha256/$args_digest"; done
node_start 3
await "node 3 refuses the blob its peers serve" info_has 3 \
	'"does not match its digest" in c["functions"].get("args", {}).get("error", "")' &&
	ok "node 3 refused a blob fetched over HTTP that does not match its digest"
contains "... naming the peer" "from 127.0.0.1:" "$tmp/body"
check "... and kept none of it" test ! -e "$tmp/store3/sha256/$args_digest"
kill -TERM "$hap_pid"
wait "$hap_pid" 2>/dev/null
hap_pid=
for i in 1 2 3; do
	node_stop $i
	same "node $i exits 0 on SIGTERM" 0 "$rc"
done
ST=state OWN_STORE=
etcd_stop

# --- three etcd members, one killed while deploying: every deploy answered 202 is on every
# node, every other one (a 503 while etcd elects a leader) on none: nothing half-applied
m1='' m2='' m3=''
# shellcheck disable=SC2317 # run by the trap
cleanup3() {
	for p in $m1 $m2 $m3; do kill -KILL "$p" 2>/dev/null; done
	cleanup
}
trap cleanup3 EXIT
c1=$(free_port) c2=$(free_port) c3=$(free_port)
pp1=$(free_port) pp2=$(free_port) pp3=$(free_port)
initial="m1=http://127.0.0.1:$pp1,m2=http://127.0.0.1:$pp2,m3=http://127.0.0.1:$pp3"
for i in 1 2 3; do
	c=$(eval "echo \"\$c$i\"")
	pp=$(eval "echo \"\$pp$i\"")
	etcd --name "m$i" --data-dir "$tmp/etcd3-$i" --listen-client-urls "http://127.0.0.1:$c" \
		--advertise-client-urls "http://127.0.0.1:$c" --listen-peer-urls "http://127.0.0.1:$pp" \
		--initial-advertise-peer-urls "http://127.0.0.1:$pp" --initial-cluster "$initial" \
		--initial-cluster-state new >>"$tmp/etcd.log" 2>&1 &
	eval "m$i=\$!"
done
for i in 1 2 3; do
	c=$(eval "echo \"\$c$i\"")
	await "etcd member $i to answer" sh -c "curl -sf http://127.0.0.1:$c/health | grep -q true"
done
ec_port="$c1,127.0.0.1:$c2,127.0.0.1:$c3" # node_start's --cluster: the three members
for i in 1 2 3; do node_start $i; done
for i in 1 2 3; do
	await "node $i synced with the new etcd" info_has $i 'c["connected"] and c["revision"] > 0'
done
expect "a node with an empty etcd has nothing" 200 "$(on 1 GET /system/functions)" "[]"
taken='' refused=''
for f in 0 1 2 3 4 5 6 7 8 9; do
	if [ $f = 4 ]; then
		kill -KILL "$m1" # the first endpoint each node tries
		wait "$m1" 2>/dev/null
		m1=''
	fi
	code=$(on 1 POST /system/functions -d "{\"service\":\"f$f\",\"image\":\"hello\"}")
	case $code in
	202) taken="$taken f$f" ;;
	503) refused="$refused f$f" ;;
	*) bad "deploy f$f with a member lost: $code $(head -c 200 "$tmp/body")" ;;
	esac
done
echo "taken:$taken; refused:${refused:- none}"
check "most deploys taken with one member of three lost" test "$(echo "$taken" | wc -w)" -ge 5
for i in 1 2 3; do
	for f in $taken; do
		await "$f on node $i" answers $i "$f" || break
	done
	ok "node $i has every deploy etcd took ($(echo "$taken" | wc -w) of 10)"
	for f in $refused; do
		expect "$f (refused) is not on node $i" 404 "$(on $i GET "/system/function/$f")"
	done
done
for i in 1 2 3; do
	node_stop $i
	same "node $i exits 0 on SIGTERM" 0 "$rc"
done
for p in $m2 $m3; do
	kill -TERM "$p"
	wait "$p" 2>/dev/null
done
m2='' m3=''
finish
