#!/bin/sh
# closure.sh DEST FILE...: each FILE (a dynamic program or library) with the interpreter and the
# libraries the host's loader gives it (as ldd names them), copied under DEST at their host paths
set -eu
dest=$1
shift
for f in "$@"; do
	for lib in $(ldd "$f" 2>/dev/null | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i }'); do
		mkdir -p "$dest$(dirname "$lib")"
		[ -e "$dest$lib" ] || cp -L "$lib" "$dest$lib"
	done
done
