#!/bin/sh
# A file read from a function: tests/guest/fileread.c does N pread64 calls of 4 KiB on a file of
# its bundle opened during init. Per backend and syscall mode, the median run time and exits of
# R warm invocations with N reads and with none; the difference over N is one read's cost. The
# same program natively (chrooted into the same tree) is the peer.
set -eu
cd "$(dirname "$0")/.."
B=${B:-build}
N=${N:-100}
R=${R:-200}
P=$B/guest/fileread.musl
. bench/backends.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/tree/data"
head -c $((2 << 20)) /dev/urandom >"$tmp/tree/data/big.bin"

# med N BACKEND MODE: "run_us exits", medians over the warm invocations
med()
{
	echo "$1" | "$B/ember" run --backend "$2" --syscalls "$3" --files "$tmp/tree" --repeat "$R" \
		--stats "$P" 2>"$tmp/stats" >/dev/null
	tail -n 1 "$tmp/stats" | python3 -c '
import json, statistics as s, sys
iv = json.loads(sys.stdin.read())["invocations"][1:]
print(s.median(i["run_us"] for i in iv), s.median(i["exits"] for i in iv))'
}

printf '%-8s %-6s %12s %12s %14s %10s\n' backend mode "run_us(0)" "run_us($N)" "us/read" exits/read
for b in $BACKENDS; do
	for m in trap guest; do
		set -- $(med 0 "$b" "$m") $(med "$N" "$b" "$m")
		awk -v b="$b" -v m="$m" -v n="$N" -v t0="$1" -v e0="$2" -v t1="$3" -v e1="$4" 'BEGIN {
			printf "%-8s %-6s %12.0f %12.0f %14.2f %10.2f\n", b, m, t0, t1, (t1 - t0) / n, (e1 - e0) / n }'
	done
done
# natively: one process, N reads, timed by the program's own clock would need changes; the
# whole process is timed instead, with and without the reads
t()
{
	a=$(date +%s%N)
	echo "$1" | unshare -rm sh -c 'exec "$1" "$2"' sh "$P" "$tmp/tree" >/dev/null
	z=$(date +%s%N)
	echo $(((z - a) / 1000))
}
for i in 1 2 3 4 5 6 7 8 9; do t 0; done | sort -n | sed -n 5p >"$tmp/n0"
for i in 1 2 3 4 5 6 7 8 9; do t $((N * 100)); done | sort -n | sed -n 5p >"$tmp/n1"
awk -v a="$(cat "$tmp/n0")" -v z="$(cat "$tmp/n1")" -v n=$((N * 100)) 'BEGIN {
	printf "native: %.2f us/read (%d reads in one process, less a process without reads)\n", (z - a) / n, n }'
