#!/bin/sh
# `ember run` of a static musl hello world on KVM and on ptrace next to the same binary run
# natively, in one run: medians of N runs each (interleaved), ratios, exits, one exit's cost.
set -eu
cd "$(dirname "$0")/.."
B=${B:-build}
N=${N:-30}
HELLO=$B/guest/hello.musl
. bench/backends.sh
now() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
: >"$B/bench-native.txt"
for b in $BACKENDS; do : >"$B/bench-$b.txt"; done
i=0
while [ $i -lt "$N" ]; do
	for b in $BACKENDS; do
		t=$(now); echo Ember | "$B/ember" run --backend "$b" "$HELLO" >/dev/null; e=$(now)
		echo $(((e - t) / 1000)) >>"$B/bench-$b.txt"
	done
	t=$(now); echo Ember | "$HELLO" >/dev/null; e=$(now)
	echo $(((e - t) / 1000)) >>"$B/bench-native.txt"
	i=$((i + 1))
done
na=$(median <"$B/bench-native.txt")
echo "runs each:                  $N (interleaved: $BACKENDS, native)"
echo "native hello, median:       $na us"
for b in $BACKENDS; do
	em=$(median <"$B/bench-$b.txt")
	stats=$(echo Ember | "$B/ember" run --backend "$b" --stats "$HELLO" 2>&1 >/dev/null | tail -n 1)
	exits=$(printf '%s' "$stats" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["init"]["exits"] + d["exits"]["total"], "(init %d, request %d)" % (d["init"]["exits"], d["exits"]["total"]))')
	floor=$("$B/ember" bench latency --backend "$b" --iterations 50 --json |
		python3 -c 'import json,sys; print([r for r in json.load(sys.stdin)["results"] if r["name"] == "exit_floor"][0]["p50_us"])')
	echo "$b: ember run hello, median: $em us, ratio to native $(awk "BEGIN {printf \"%.2f\", $em / $na}")"
	echo "$b: exits per ember run:     $exits"
	echo "$b: one exit + re-entry:     $floor us (p50)"
done
