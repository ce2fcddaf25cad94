#!/bin/sh
# MAP_SHARED (tests/guest/shmap.c): a /tmp file mapped shared agrees with read(), write(),
# truncation, msync and its other mappings, and its pages past its end fault (SIGBUS, EFAULT);
# /dev/zero maps as anonymous memory; Linux's errnos (EACCES, EINVAL, EOVERFLOW), all as
# natively, in both syscall modes; on KVM, shared anonymous memory and /dev/zero's are one with
# a fork child's (ptrace: a copy, as before); a shared mapping made by init holds init's bytes
# at every invocation, never the one before's, and one a child wrote into is new and zero at
# the next.
. "$(dirname "$0")/lib.sh"
pick_backend
P=$G/shmap.musl

for m in tmp zero bus; do
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
# fork: the child's writes to shared memory seen by the parent, not to private memory
"$P" fork >"$tmp/native" 2>&1
for mode in trap guest; do
	er --syscalls "$mode" "$P" fork
	expect_rc 0 "fork, $mode"
	if [ "$EMBER_BACKEND" = kvm ]; then
		check "fork, $mode: shared memory shared, private memory private, as natively" \
			cmp -s "$tmp/out" "$tmp/native"
	else
		grep -v "shared" "$tmp/native" >"$tmp/want"
		grep -v "shared" "$tmp/out" >"$tmp/got"
		check "fork, $mode: private memory private (ptrace: shared memory a copy)" \
			cmp -s "$tmp/got" "$tmp/want"
	fi
done

# shared memory a child wrote into: nothing of it at the next invocation
seen=secret
[ "$EMBER_BACKEND" = kvm ] || seen=-
printf "at the start: init's init, a new one's 0 0, mine\nthe child's write seen: %s\n" "$seen" \
	>"$tmp/one"
copies 3 "$tmp/one"
for mode in trap guest; do
	er --syscalls "$mode" --repeat 3 "$P" forkleak
	expect_rc 0 "forkleak --repeat 3, $mode"
	check "forkleak --repeat 3, $mode: each starts from init's bytes and zeros" \
		cmp -s "$tmp/out" "$tmp/want"
	[ "$rc" = 0 ] && ! cmp -s "$tmp/out" "$tmp/want" && diff "$tmp/want" "$tmp/out" | head -n 4
done
finish
