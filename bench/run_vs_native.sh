#!/bin/sh
# `ember run` of a static musl hello world next to the same binary run natively, in one run:
# medians of N runs each (interleaved), their ratio, exits per run, and the cost of one exit.
set -eu
cd "$(dirname "$0")/.."
B=${B:-build}
N=${N:-30}
BACKEND=${EMBER_BACKEND:-auto}
HELLO=$B/guest/hello.musl
now() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
: >"$B/bench-ember.txt"
: >"$B/bench-native.txt"
i=0
while [ $i -lt "$N" ]; do
	t=$(now); echo Ember | "$B/ember" run --backend "$BACKEND" "$HELLO" >/dev/null; e=$(now)
	echo $(((e - t) / 1000)) >>"$B/bench-ember.txt"
	t=$(now); echo Ember | "$HELLO" >/dev/null; e=$(now)
	echo $(((e - t) / 1000)) >>"$B/bench-native.txt"
	i=$((i + 1))
done
em=$(median <"$B/bench-ember.txt")
na=$(median <"$B/bench-native.txt")
stats=$(echo Ember | "$B/ember" run --backend "$BACKEND" --stats "$HELLO" 2>&1 >/dev/null | tail -n 1)
exits=$(printf '%s' "$stats" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["init"]["exits"] + d["exits"]["total"], "(init %d, request %d)" % (d["init"]["exits"], d["exits"]["total"]))')
backend=$(printf '%s' "$stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["backend"])')
floor=$("$B/ember" bench latency --backend "$backend" --iterations 50 --json |
	python3 -c 'import json,sys; print([r for r in json.load(sys.stdin)["results"] if r["name"] == "kvm_exit_floor"][0]["p50_us"])')
echo "backend:                    $backend"
echo "runs each:                  $N (interleaved)"
echo "ember run hello, median:    $em us"
echo "native hello, median:       $na us"
echo "ratio ember/native:         $(awk "BEGIN {printf \"%.2f\", $em / $na}")"
echo "exits per ember run:        $exits"
echo "one exit + re-entry (p50):  $floor us"
