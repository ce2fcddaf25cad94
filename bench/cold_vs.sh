#!/bin/sh
# Two builds of Ember side by side on `ember bench cold`, alternated (this machine's noise is as
# large as what a change to the cold path saves): per run and binary, each function's
# cold_over_restore / reap_p50_ms / restore_p50_ms / the load's mean µs.
# Usage: sh bench/cold_vs.sh BEFORE AFTER [ROUNDS (4)] [FUNCTIONS (sha256,hello,hello.musl,aes)]
# e.g. BEFORE=build/ember-base (a copy of an older build/ember), AFTER=build/ember; from the
# repository root (the suite's functions are read from build/). KVM; 10 cold starts per mode.
set -eu
[ $# -ge 2 ] || { echo "usage: sh bench/cold_vs.sh BEFORE AFTER [ROUNDS] [FUNCTIONS]" >&2; exit 2; }
before=$1 after=$2 rounds=${3:-4} only=${4:-sha256,hello,hello.musl,aes}
for b in "$before" "$after"; do
	[ -x "$b" ] || { echo "bench/cold_vs.sh: $b is not an executable" >&2; exit 2; }
done
r=0
while [ "$r" -lt "$rounds" ]; do
	for b in "$before" "$after"; do
		"$b" bench cold --backend kvm --iterations 10 --only "$only" --json 2>/dev/null |
			python3 -c 'import json, sys
d = json.load(sys.stdin)
print(sys.argv[1], " ".join("%s %.2f/%.2f/%.2f/%.0f" % (r["name"], r["cold_over_restore"],
      r["reap_p50_ms"], r["restore_p50_ms"], r["reap_load_us"]["total"]) for r in d["results"]))' "$b"
	done
	r=$((r + 1))
done
