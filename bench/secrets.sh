#!/bin/sh
# What a function given a secret costs the server: N `runtime: python` functions deployed
# without secrets, then N given one, on a fresh server each time; the N-th deploy's wall time,
# and after the N deploys and calls the host's shared memory grown since the server started
# (/proc/meminfo's Shmem: memfds, the packed trees among them; other processes' changes count
# too, so run it on a quiet machine) and the server's VmRSS (docs/server.md#secrets).
# BACKEND (default kvm), N (default 4).
set -eu
cd "$(dirname "$0")/.."
NAME=secrets.sh
B=${B:-build}
N=${N:-4}
. bench/serve_lib.sh
CODE=$(python3 -c 'import json; print(json.dumps("def handler(req, env):\n    if not req:\n        return \"\"\n    with open(\"/var/openfaas/secrets/a\") as f:\n        return f.read()\n"))')
kb() { awk -v k="$1:" '$1 == k { print $2 }' "${2:-/proc/$epid/status}"; }
printf '%-10s %3s %10s %14s %10s\n' functions n deploy_s shmem_grew_mb vmrss_mb
for mode in no-secret secret; do
	rm -rf "$tmp/state"
	shmem0=$(kb Shmem /proc/meminfo)
	serve_start "${BACKEND:-kvm}" "$tmp/state" "$tmp/log"
	curl -sf -u "$AUTH" -o /dev/null -d '{"name":"a","value":"bench"}' "$E/system/secrets"
	given=""
	[ "$mode" = secret ] && given=',"secrets":["a"]'
	for i in $(seq "$N"); do
		t=$(curl -sf -u "$AUTH" -o /dev/null -w '%{time_total}' -d \
			'{"service":"py'"$i"'","runtime":"python","code":'"$CODE$given"'}' "$E/system/functions")
		[ "$mode" = secret ] || { curl -sf -o /dev/null "$E/function/py$i"; continue; }
		curl -sf -o /dev/null -d x "$E/function/py$i"
	done
	printf '%-10s %3d %10s %14d %10d\n' "$mode" "$N" "$t" \
		$((($(kb Shmem /proc/meminfo) - shmem0) / 1024)) $(($(kb VmRSS) / 1024))
	serve_stop
done
