#!/bin/sh
# MAP_SHARED (tests/guest/shmap.c): /dev/zero maps as anonymous memory; Linux's errnos (EACCES,
# EINVAL, EOVERFLOW), all as natively, in both syscall modes.
. "$(dirname "$0")/lib.sh"
pick_backend
P=$G/shmap.musl

for m in zero; do
	rm -f /tmp/ember-shmap /tmp/ember-shmap-z
	"$P" "$m" >"$tmp/native" 2>&1
	check "natively: $m ran" [ "$?" = 0 ]
	for mode in trap guest; do
		er --syscalls "$mode" "$P" "$m"
		expect_rc 0 "$m, $mode"
		check "$m, $mode: every result as natively" cmp -s "$tmp/out" "$tmp/native"
		[ -s "$tmp/out" ] && ! cmp -s "$tmp/out" "$tmp/native" &&
			diff "$tmp/native" "$tmp/out" | head -n 6
	done
done
finish
