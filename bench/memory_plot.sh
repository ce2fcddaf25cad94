#!/bin/sh
# Draws the density curves of `ember bench memory --json` (PSS per warm virtine against N, per
# function and sharing mode, log scales) as a PNG with gnuplot.
#   bench/memory_plot.sh RESULT.json OUT.png
set -eu
[ $# = 2 ] || { echo "usage: $0 RESULT.json OUT.png" >&2; exit 2; }
command -v gnuplot >/dev/null || { echo "$0: gnuplot is not installed (gnuplot-nox)" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 - "$1" "$dir" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rows = {}
for r in d["results"]:
    # a row at or below zero is the allocator's noise (memory given back by the row before)
    if r["pss_per_instance_kib"] is not None and r["pss_per_instance_kib"] > 0:
        rows.setdefault((r["function"], r["mode"]), []).append((r["n"], r["pss_per_instance_kib"]))
with open(sys.argv[2] + "/series", "w") as f:
    for (fn, mode), pts in sorted(rows.items()):
        f.write(f"# {fn} {mode}\n")
        for n, v in sorted(pts):
            f.write(f"{n} {v}\n")
        f.write("\n\n")
with open(sys.argv[2] + "/titles", "w") as f:
    f.write("\n".join(f"{fn} ({mode})" for fn, mode in sorted(rows)))
PY
n=$(wc -l <"$dir/titles")
plots=""
i=0
while [ "$i" -le "$n" ]; do
	t=$(sed -n "$((i + 1))p" "$dir/titles")
	plots="$plots${plots:+, }'$dir/series' index $i with linespoints title '$t'"
	i=$((i + 1))
done
gnuplot <<GP
set terminal pngcairo size 900,560 noenhanced
set output '$2'
set logscale xy
set xlabel 'warm virtines (N)'
set ylabel 'PSS per virtine (KiB)'
set title 'Ember: memory per warm virtine by sharing mode'
set key outside right
set grid
plot $plots
GP
