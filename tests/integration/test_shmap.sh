#!/bin/sh
# MAP_SHARED (tests/guest/shmap.c): a /tmp file mapped shared agrees with read(), write(),
# truncation, msync and its other mappings; /dev/zero maps as anonymous memory; Linux's errnos
# (EACCES, EINVAL, EOVERFLOW), all as natively, in both syscall modes; a shared mapping made
# by init holds init's bytes at every invocation, never the one before's.
. "$(dirname "$0")/lib.sh"
pick_backend
P=$G/shmap.musl

for m in tmp zero; do
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
check "nothing of it in the host's /tmp" [ ! -e /tmp/ember-shmap ]

# what an invocation writes through a shared mapping is gone at the next
req "r"
printf 'anon: init, file: init, read: init\n' >"$tmp/one"
copies 3 "$tmp/one"
for mode in trap guest; do
	er --syscalls "$mode" --repeat 3 "$P" leak
	expect_rc 0 "leak --repeat 3, $mode"
	check "leak --repeat 3, $mode: each sees init's bytes, never the secret" \
		cmp -s "$tmp/out" "$tmp/want"
done
finish
