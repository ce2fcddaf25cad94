#!/bin/sh
# Process and thread calls as Linux answers them (tests/guest/proccalls.c, with musl and with
# glibc, whose robust and PI mutexes lean on the kernel): each case checks itself natively and
# in a virtine in both syscall modes; a case that fails prints what differed. So do
# tests/guest/priority.c, sigstack.c and itimers.c.
# Run from the repository root.
set -u
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
pick_backend

for libc in musl glibc; do
	P=$G/proccalls.$libc
	"$P" >"$tmp/native" 2>&1
	check "$libc: every case passes natively" [ $? = 0 ]
	for mode in trap guest; do
		er --syscalls "$mode" --timeout 30 "$P"
		expect_rc 0 "$libc, $mode"
		# every case's line is "NAME ok", as natively
		if cmp -s "$tmp/out" "$tmp/native"; then
			ok "$libc, $mode: every case as natively"
		else
			bad "$libc, $mode: $(grep -v ' ok$' "$tmp/out" | head -n 3 | tr '\n' '|')"
		fi
	done
done
# nice values, the alternate signal stack and timers across execve, each case as natively,
# twice (the second invocation starts again at nice 0, not where the first left it)
for prog in priority sigstack itimers; do
	P=$G/$prog.musl
	"$P" >"$tmp/native" 2>&1
	check "$prog: every case passes natively" [ $? = 0 ]
	for mode in trap guest; do
		er --syscalls "$mode" --timeout 30 --repeat 2 "$P"
		expect_rc 0 "$prog, $mode"
		if cat "$tmp/native" "$tmp/native" | cmp -s "$tmp/out" -; then
			ok "$prog, $mode: every case as natively, twice"
		else
			bad "$prog, $mode: $(grep -v ' ok$' "$tmp/out" | head -n 3 | tr '\n' '|')"
		fi
	done
done
for mode in trap guest; do
	er --syscalls "$mode" --timeout 30 --repeat 2 "$G/priority.musl" fresh
	expect_rc 0 "priority fresh, $mode"
	check "priority fresh, $mode: every invocation starts at nice 0" \
		[ "$(grep -c '^fresh ok$' "$tmp/out")" = 2 ]
done
# on two vCPUs a mask can leave one out (the ptrace backend runs one)
if [ "$EMBER_BACKEND" = kvm ]; then
	er --cpus 2 --timeout 30 "$G/proccalls.glibc" affinity
	expect_rc 0 "affinity on 2 vCPUs"
	out_is "affinity ok" "affinity on 2 vCPUs"
fi
finish
